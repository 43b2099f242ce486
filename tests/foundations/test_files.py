"""`harness.files.write`, the one writer of every file we write: atomic, `-` for stdout, and never
through (or over) a FIFO, a symlink or a device. Every command that writes a file is checked
against a FIFO and a symlink in tmp (never a real device): each exits 2 with one line at once,
and leaves the FIFO a FIFO and the symlink's target untouched (they blocked for ever, or renamed
over it, before)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness import files
from harness.errors import UsageError

DEADLINE = 60  # seconds: a command that blocks fails the test
CASE = "openai-chat/single-call::original::s0"
CASSETTE = "openai-chat/single-call"
# Each command with its output option; FILE is where the output goes.
CHECK = ["check", "--accumulator", "reference", "--cassettes", CASSETTE, "--scenarios", "original"]
CHECK += ["--timeout", "0"]
WRITERS = {
    "repro -o": ["repro", CASE, "--accumulator", "openai-sdk", "-o", "FILE"],
    "mutate -o": ["mutate", CASE, "-o", "FILE"],
    "check --json": [*CHECK, "--json", "FILE"],
    "check --html": [*CHECK, "--html", "FILE"],
}  # fmt: skip


def toolstream(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`toolstream ARGV` in a fresh interpreter, within a deadline (a blocked write fails it)."""
    code = f"import sys; from harness.cli import main; sys.exit(main({argv!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=DEADLINE, check=False
    )


@pytest.mark.parametrize("writer", WRITERS)
def test_a_command_refuses_to_write_into_a_fifo(writer: str, tmp_path: Path) -> None:
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    argv = [str(fifo) if a == "FILE" else a for a in WRITERS[writer]]
    done = toolstream(argv, tmp_path)  # blocked for ever before: a FIFO no one reads
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.count("\n") == 1 and f"{fifo}: is a FIFO (named pipe), not a regular file" in done.stderr
    )
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("writer", ["repro -o", "check --json"])
def test_a_command_refuses_to_write_over_a_symlink(writer: str, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    link = tmp_path / "out"
    link.symlink_to(target)
    argv = [str(link) if a == "FILE" else a for a in WRITERS[writer]]
    done = toolstream(argv, tmp_path)  # `repro -o` renamed a file over the link before
    assert done.returncode == 2, done.stderr
    assert f"{link}: is a symbolic link" in done.stderr and done.stderr.count("\n") == 1
    assert link.is_symlink() and target.read_text() == "keep me"


def test_dash_writes_to_stdout(tmp_path: Path) -> None:
    done = toolstream(["repro", CASE, "--accumulator", "openai-sdk", "-o", "-"], tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("#!") and not (tmp_path / "-").exists()


def test_write_replaces_a_file_atomically_with_an_unpredictable_temp_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    opened: list[tuple[str, int]] = []
    real_open = os.open

    def watching(path: str | os.PathLike[str], flags: int, *rest: int) -> int:
        opened.append((os.fspath(path), flags))
        return real_open(path, flags, *rest)

    monkeypatch.setattr(os, "open", watching)
    files.write(target, b"new")
    files.write(target, b"newer")
    temps = [(Path(p).name, flags) for p, flags in opened if p.endswith(".tmp")]
    assert target.read_bytes() == b"newer" and len(temps) == 2 and temps[0][0] != temps[1][0]
    for name, flags in temps:
        token = name.split(".")[-2]
        assert len(token) == 16 and flags & os.O_EXCL and flags & os.O_NOFOLLOW and flags & os.O_CREAT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_a_planted_temp_name_is_never_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A symlink planted at the temp file's name is refused (O_EXCL), never written through."""
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    monkeypatch.setattr(files.secrets, "token_hex", lambda _: "0" * 16)
    (tmp_path / f".out.{os.getpid()}.{'0' * 16}.tmp").symlink_to(victim)
    with pytest.raises(UsageError, match="cannot write: File exists"):
        files.write(tmp_path / "out", b"data")
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder", "socket"])
def test_write_refuses_what_is_not_a_regular_file(kind: str, tmp_path: Path) -> None:
    import socket

    path = tmp_path / "out"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        path.symlink_to(tmp_path / "nowhere")
    elif kind == "folder":
        path.mkdir()
    else:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(path))
        listener.close()
    before = os.lstat(path)
    with pytest.raises(UsageError, match=rf"^{path}: is a") as raised:
        files.write(path, b"data")
    assert "\n" not in str(raised.value)
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


def test_locked_serialises_holders_and_cleans_up(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with files.locked(path):
        assert (tmp_path / ".c.yaml.lock").exists()
    assert not (tmp_path / ".c.yaml.lock").exists()
