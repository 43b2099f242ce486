"""Where a library raised: the innermost frame of the raise's traceback that is an installed
package's (under `site-packages` or `dist-packages`) and not the harness's own, as `file:line`
relative to that folder (`anthropic/lib/streaming/_messages.py:496`): the same on every machine,
no path of this one.

An adapter's error text carries it on a line of its own at the end (`with_site`), so the first
line, which diff lines and signatures are made of, is unchanged; `site_of` reads it back, and the
root causes group failures by it (`verdict.root_cause`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path, PurePath

__all__ = ["RAISED_AT", "raise_site", "site_of", "with_site"]

RAISED_AT = "raised at "  # the last line of an error text that carries its site
_INSTALLED = ("site-packages", "dist-packages")
_HARNESS = Path(__file__).resolve().parents[1]  # the `harness` package, installed or not
_SITE_LONGEST = 300  # characters of a site read back: a longer last line is not one of ours


def raise_site(exc: BaseException) -> str | None:
    """`file:line` of the innermost frame of `exc`'s traceback in an installed package other than
    the harness, relative to its site-packages folder; None when no frame is (a raise in the
    standard library or in a module of the user's checkout)."""
    site = None
    tb = exc.__traceback__
    while tb is not None:
        where = _installed(tb.tb_frame.f_code.co_filename)
        if where is not None:
            site = f"{where}:{tb.tb_lineno}"
        tb = tb.tb_next
    return site


def with_site(text: str, exc: BaseException) -> str:
    """An error text with the raise's site as its last line (`raised at FILE:LINE`), when it has one."""
    site = raise_site(exc)
    return f"{text}\n{RAISED_AT}{site}" if site else text


def site_of(error: str | None) -> str | None:
    """The site an error text carries (`with_site`), or None."""
    if not error:
        return None
    _, newline, last = error.rpartition("\n")
    if not newline or not last.startswith(RAISED_AT) or len(last) > _SITE_LONGEST:
        return None
    return last[len(RAISED_AT) :] or None


@lru_cache(maxsize=4096)  # a raise walks a few dozen frames, of a few hundred files
def _installed(filename: str) -> str | None:
    """A file's path below the site-packages folder it is in (`/` separated), or None when it is in
    none, or is the harness's own."""
    path = PurePath(filename)
    parts = path.parts
    at = max((n for n, part in enumerate(parts) if part in _INSTALLED), default=None)
    if at is None or at == len(parts) - 1:
        return None
    try:
        if Path(filename).resolve().is_relative_to(_HARNESS):
            return None
    except OSError:  # a frame whose file is gone (an uninstalled module): judged by its name alone
        pass
    return "/".join(parts[at + 1 :])
