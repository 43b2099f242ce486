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

REPO = Path(__file__).resolve().parents[1]
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
