"""The progress line names cases, never the paths of their cassettes."""

from __future__ import annotations

import io
import os

import pytest

from harness.text.terminal import Progress, case_name


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_case_names_not_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    stream = _Tty()
    progress = Progress(2, label="check", stream=stream)
    path = os.path.join(
        "/venv/lib/site-packages/harness/_bundled/cassettes", "openai-chat", "parallel-2.yaml"
    )
    progress.advance(note=f"{path} x cut-mid-args s0")
    shown = stream.getvalue()
    assert "openai-chat/parallel-2 x cut-mid-args s0" in shown and "site-packages" not in shown
    assert case_name("openai-chat/parallel-2::original::s0") == "openai-chat/parallel-2::original::s0"
