"""Values from cassettes, scenarios and case ids written as data, one escaper per output language.

Every name and value a writer takes from a cassette, a scenario or a case id was written by a
stranger: a file name may hold `\"\"\"`, a provenance an ANSI escape, a scenario name `</script>`.
Each writer passes such values through the escaper of the language it writes, and nothing else:

- `terminal` / `terminal_line` / `terminal_json`: what a terminal shows (control characters spelled);
- `python_text`: text inside a string literal or docstring of a generated script;
- `markdown_text` / `markdown_code`: text and code spans of a Markdown file (table cells too);
- `html_text` / `script_json`: HTML text and attributes, and JSON inside a `<script>` element.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any, Final

__all__ = [
    "html_text",
    "markdown_code",
    "markdown_text",
    "python_text",
    "script_json",
    "terminal",
    "terminal_json",
    "terminal_line",
]

# Bidi controls (U+202E reverses what follows: `txt.exe` shows as `exe.txt`) and invisible format
# characters (zero-width space, word joiner, BOM): what makes text read otherwise than it is.
# Zero-width (non-)joiners are kept: scripts and emoji sequences need them.
_INVISIBLE: Final = "\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
# C0 but tab and newline, DEL, C1: what moves a terminal's cursor, recolours it or rings it; the
# invisible ones; and lone surrogates (a file name that is not UTF-8), which no output can encode.
_CONTROL: Final = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_INVISIBLE}\\ud800-\\udfff]")
# What JSON leaves as is but a terminal obeys: DEL, C1 and the invisible ones (C0 is always
# escaped by `json.dumps`); and lone surrogates, which no UTF-8 page can hold (escaped: valid JSON).
_JSON_CONTROL: Final = re.compile(f"[\\x7f-\\x9f{_INVISIBLE}\\ud800-\\udfff]")
# Markdown punctuation that can start markup mid-line (emphasis, code, links, tables, escapes).
_MARKDOWN_PUNCTUATION: Final = re.compile(r"([\\`*_\[\]|~])")
_BACKTICKS: Final = re.compile(r"`+")
_INVISIBLE_OR_LONE: Final = re.compile(f"[{_INVISIBLE}\\ud800-\\udfff]")


def terminal(text: str) -> str:
    """Control characters (terminal escapes, carriage returns, bells) as `\\x1b`; newlines and
    tabs kept: a value cannot move the cursor or recolour the terminal."""
    return _CONTROL.sub(_spelled, text)


def _spelled(found: re.Match[str]) -> str:
    code = ord(found[0])
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_line(text: str) -> str:
    """`terminal`, and newlines spelled `\\n`: a value shown on one line cannot fake another."""
    return terminal(text.replace("\r", "\\r").replace("\n", "\\n"))


def terminal_json(data: Any, *, indent: int | None = 2) -> str:
    """JSON for a terminal: non-ASCII text kept readable, DEL and C1 written as `\\u0085`."""
    text = json.dumps(data, ensure_ascii=False, indent=indent)
    return _JSON_CONTROL.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def python_text(text: str) -> str:
    """`text` as it may stand between the quotes of a Python string or docstring (either quote
    kind, triple or not): quotes, backslashes, newlines, control and non-ASCII characters (bidi
    overrides too) escaped, so the source holds nothing that ends the string or hides code."""
    literal = ascii(text)  # escapes all but the quote kind it is not delimited by
    other = "'" if literal[0] == '"' else '"'
    return literal[1:-1].replace(other, "\\" + other)


def markdown_text(text: str) -> str:
    """Plain text in a Markdown file (a table cell too): no markup, no HTML, one line."""
    one_line = " ".join(_INVISIBLE_OR_LONE.sub(_spelled, text).splitlines())
    escaped = html.escape(one_line, quote=False)  # `<img ...>` and `&entities;` shown as written
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", escaped)


def markdown_code(text: str, *, in_table: bool = False) -> str:
    """A Markdown code span holding `text` whatever it holds: a fence longer than any run of
    backticks in it, one line, and in a table cell `|` escaped (GFM splits cells before spans)."""
    one_line = " ".join(_INVISIBLE_OR_LONE.sub(_spelled, text).splitlines())
    longest = max((len(run) for run in _BACKTICKS.findall(one_line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    code = f"{fence}{pad}{one_line}{pad}{fence}"
    return code.replace("|", "\\|") if in_table else code


def html_text(text: str) -> str:
    """Text in HTML, in an element or a quoted attribute (control characters spelled as on a terminal)."""
    return html.escape(terminal(text), quote=True)


def script_json(data: Any) -> str:
    """JSON inside a `<script>` element: no `<` at all, so nothing in it closes the element or
    opens a comment (`</script>`, `<!--`), and no line separator a JavaScript parser would split."""
    text = _JSON_CONTROL.sub(lambda m: f"\\u{ord(m[0]):04x}", json.dumps(data, ensure_ascii=False))
    text = text.replace("<", "\\u003c")
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
