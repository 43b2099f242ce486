"""Bidi controls and invisible format characters are escaped like other control characters by every
escaper of `harness.text.escape` (U+202E was printed raw in terminal ids, the HTML page and the
card's Markdown), and so are lone surrogates (a file name that is not UTF-8)."""

from __future__ import annotations

import json

import pytest

from harness.text.escape import (
    html_text,
    markdown_code,
    markdown_text,
    script_json,
    terminal,
    terminal_json,
    terminal_line,
)

# Right-to-left override, the isolates, marks, zero-width space, word joiner, BOM, Arabic letter mark.
INVISIBLE = ["\u202e", "\u202a", "\u202b", "\u202c", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069",
             "\u200e", "\u200f", "\u200b", "\u2060", "\ufeff", "\u061c"]  # fmt: skip
ID = "openai-chat/{}evil.yaml::original::s0"


@pytest.mark.parametrize("char", INVISIBLE)
@pytest.mark.parametrize("escaper", [terminal, terminal_line, html_text, markdown_text, markdown_code])
def test_an_invisible_character_is_spelled_not_passed_through(char: str, escaper: object) -> None:
    shown = escaper(ID.format(char))  # type: ignore[operator]
    assert char not in shown and f"u{ord(char):04x}" in shown


@pytest.mark.parametrize("char", INVISIBLE)
@pytest.mark.parametrize("escaper", [terminal_json, script_json])
def test_json_escapers_escape_it_and_stay_json(char: str, escaper: object) -> None:
    shown = escaper({"id": ID.format(char)})  # type: ignore[operator]
    assert char not in shown and json.loads(shown.replace("\\u003c", "<")) == {"id": ID.format(char)}


def test_joiners_that_scripts_and_emoji_need_are_kept() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert terminal(family) == family and html_text(family) == family


def test_a_lone_surrogate_is_spelled_so_any_output_can_encode_it() -> None:
    name = b"bad\xff.yaml".decode("utf-8", "surrogateescape")
    for shown in (terminal(name), html_text(name), markdown_text(name), script_json([name])):
        shown.encode("utf-8")  # raised UnicodeEncodeError: the replay server's index page was a 500
        assert "udcff" in shown
