"""Killing a process while it saves a cassette leaves the old file or the new one, never half.

A child process saves a large cassette over and over with `harness.cassettes.format.save`, alternating
two versions, and is SIGKILLed at random moments. After every kill the target must load and equal
one of the two versions. Temp files may remain beside it after a SIGKILL (nothing can clean up);
they must never look like cassettes to a later load or listing.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cassettes.corpus import cassette_paths
from harness.cassettes.format import (
    Cassette,
    Chunk,
    Interaction,
    Request,
    Response,
    Source,
    dumps,
    load,
    save,
)

REPO = Path(__file__).resolve().parents[2]
KILLS = 20

# argv: target, then the two versions' files, the first one to save being the one not in target.
CHILD = """
import sys
from harness.cassettes.format import load, save
target, first, second = sys.argv[1:]
versions = [load(first), load(second)]
print("ready", flush=True)
for i in range(10_000):  # bounded: the parent kills it long before
    save(versions[i % 2], target)
"""


def big_cassette(letter: str, chunks: int = 160, size: int = 16_000) -> Cassette:
    """A ~2.5 MB cassette whose every chunk says which version it belongs to."""
    response = Response(
        status=200,
        headers={"content-type": "text/event-stream"},
        chunks=[Chunk(f"data: {i} {letter * size}\n\n".encode(), float(i)) for i in range(chunks)],
    )
    request = Request("POST", "https://api.example.com/v1/chat/completions", {}, {"version": letter})
    return Cassette(f"big-{letter}", Source("recorded", "atomic save test"), [Interaction(request, response)])


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_while_saving_leaves_a_whole_cassette(tmp_path: Path) -> None:
    target = tmp_path / "work" / "big.yaml"
    versions = {"a": big_cassette("a"), "b": big_cassette("b")}
    texts = {dumps(cassette).encode("utf-8"): letter for letter, cassette in versions.items()}
    sources = {letter: save(cassette, tmp_path / f"{letter}.yaml") for letter, cassette in versions.items()}
    save(versions["a"], target)
    folder = target.parent
    rng = random.Random(20240611)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    seen = ["a"]
    killed_mid_save = 0

    for _ in range(KILLS):
        before = set(folder.iterdir())
        order = ("b", "a") if seen[-1] == "a" else ("a", "b")
        command = [sys.executable, "-c", CHILD, str(target), *(str(sources[letter]) for letter in order)]
        child = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, cwd=tmp_path)
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == b"ready\n"
            time.sleep(rng.uniform(0.0, 0.15))  # a save takes ~0.05 s: land in the first two or three
        finally:
            child.kill()  # SIGKILL on POSIX
            child.wait(timeout=10)
            if child.stdout is not None:
                child.stdout.close()

        letter = texts.get(target.read_bytes())
        assert letter is not None, "the cassette is neither the old version nor the new one"
        assert load(target) == versions[letter]
        seen.append(letter)
        killed_mid_save += bool(set(folder.iterdir()) - before)  # a temp file left: killed inside the save

    leftovers = sorted(p.name for p in folder.iterdir() if p != target)
    print(f"\n{KILLS} kills: versions after each {''.join(seen[1:])}; "
          f"{killed_mid_save} landed inside a save and left {len(leftovers)} temp file(s)")  # fmt: skip
    assert all(name.startswith(".big.yaml.") and name.endswith(".tmp") for name in leftovers)
    assert cassette_paths([folder]) == [target]  # a later listing never picks a temp file up


def test_a_save_keeps_the_existing_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    save(big_cassette("a", chunks=1, size=10), path)
    path.chmod(0o644)
    save(big_cassette("b", chunks=1, size=10), path)
    assert path.stat().st_mode & 0o777 == 0o644
    path.chmod(0o640)
    save(big_cassette("a", chunks=1, size=10), path)
    assert path.stat().st_mode & 0o777 == 0o640


def test_a_new_file_honours_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        save(big_cassette("a", chunks=1, size=10), tmp_path / "new.yaml")
        os.umask(0o027)
        save(big_cassette("a", chunks=1, size=10), tmp_path / "other.yaml")
    finally:
        os.umask(old)
    assert (tmp_path / "new.yaml").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "other.yaml").stat().st_mode & 0o777 == 0o640


def test_a_save_removes_temp_files_left_by_killed_saves(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = tmp_path / f".c.yaml.{dead.stdout.strip()}.0123abcd.tmp"
    live = tmp_path / f".c.yaml.{os.getppid()}.0123abcd.tmp"  # a save in progress elsewhere
    other = tmp_path / ".d.yaml.1.0123abcd.tmp"  # another cassette's
    for leftover in (stale, live, other):
        leftover.write_bytes(b"half a cassette")
    save(big_cassette("a", chunks=1, size=10), path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["c.yaml", live.name, other.name])
