"""`harness.bounded.read`, the one reader of every file we read: a size cap, a pipe read within a
deadline (a FIFO with no writer blocked `import`, `report merge` and `report-card --from-json`
for ever), a device refused (`/dev/zero` grew to gigabytes), and a symlink loop or
`/proc/self/mem` one line and exit 2. Each command that reads a file is checked in a fresh
interpreter within a deadline."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness import bounded

# Each command with the input it reads; FILE is the input.
READERS = {
    "import": ["import", "FILE", "-o", "OUT.yaml"],
    "report merge": ["report", "merge", "FILE"],
    "report-card --from-json": ["report-card", "--from-json", "FILE", "--out", "card"],
    "check --cassettes": ["check", "--accumulator", "reference", "--cassettes", "FILE", "--timeout", "0"],
    "check --scenarios": ["check", "--accumulator", "reference", "--cassettes", "openai-chat/single-call",
                          "--scenarios", "FILE", "--timeout", "0"],
    "show": ["show", "FILE"],
}  # fmt: skip

DEADLINE = 60  # seconds: a command that blocks fails the test

PROBE = """
import sys
from harness import bounded
from harness.cli import main
bounded.WAIT = 0.5
sys.exit(main({argv!r}))
"""


def toolstream(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`toolstream ARGV` in a fresh interpreter whose pipes wait half a second, within a deadline."""
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


def one_line_exit_2(done: subprocess.CompletedProcess[str], said: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr


@pytest.mark.parametrize("reader", READERS)
def test_a_fifo_with_no_writer_is_refused_after_the_wait(reader: str, tmp_path: Path) -> None:
    fifo = tmp_path / "input.yaml"
    os.mkfifo(fifo)
    started = time.monotonic()
    done = toolstream([str(fifo) if a == "FILE" else a for a in READERS[reader]], tmp_path)
    # What lists cassettes and scenarios takes regular files only; the rest read a pipe, within the wait.
    lists = reader in ("check --cassettes", "check --scenarios", "show")
    one_line_exit_2(done, f"{fifo}: no such" if lists else "nothing to read for 0.5 s")
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("reader", ["import", "report merge", "report-card --from-json"])
def test_a_device_is_refused_without_reading_it(reader: str, tmp_path: Path) -> None:
    done = toolstream(["/dev/zero" if a == "FILE" else a for a in READERS[reader]], tmp_path)
    one_line_exit_2(done, "/dev/zero: cannot read: a device, not a file")


@pytest.mark.parametrize("reader", READERS)
def test_a_symlink_loop_is_one_line(reader: str, tmp_path: Path) -> None:
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    done = toolstream([str(loop) if a == "FILE" else a for a in READERS[reader]], tmp_path)
    lists = reader in ("check --cassettes", "check --scenarios", "show")
    one_line_exit_2(done, str(loop) if lists else "Too many levels of symbolic links")


@pytest.mark.parametrize("reader", ["import", "report merge", "report-card --from-json"])
def test_proc_self_mem_is_one_line(reader: str, tmp_path: Path) -> None:
    done = toolstream(["/proc/self/mem" if a == "FILE" else a for a in READERS[reader]], tmp_path)
    one_line_exit_2(done, "/proc/self/mem: cannot read: Input/output error")


def test_a_pipe_is_read_as_it_delivers(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as out:
            for part in (b"first ", b"second"):
                out.write(part)
                out.flush()
                time.sleep(0.1)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert bounded.read(fifo, 100, wait=5) == b"first second"
    finally:
        writer.join(10)


def test_a_pipe_over_the_limit_is_refused_at_the_limit(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: _flood(fifo))
    writer.start()
    try:
        with pytest.raises(bounded.TooLarge):
            bounded.read(fifo, 1 << 20, wait=5)
    finally:
        writer.join(10)


def _flood(fifo: Path) -> None:
    try:
        with open(fifo, "wb") as out:
            out.write(b"x" * (4 << 20))
    except BrokenPipeError:
        pass  # the reader stopped at its limit


def test_a_folder_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError, match="a folder, not a file"):
        bounded.read(tmp_path, 100)


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_finite_json_refuses_what_json_does_not_have(text: str) -> None:
    assert bounded.loads(text) is not None  # Python reads them
    with pytest.raises(ValueError, match="is not a JSON value"):
        bounded.loads(text, finite=True)
