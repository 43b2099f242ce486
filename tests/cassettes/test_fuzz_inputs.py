"""Hostile inputs never crash the harness: mutants of the bundled cassettes (deep nesting, fields of
the wrong JSON type, truncation, random bytes, huge numbers, lone surrogates, control characters)
run through `show`, `check --accumulator reference`, `mutate`, `import` and `serve`; and hostile
client programs (`tests/_hostile_programs.py`) run warm and cold through `check --client`.

Each must end with exit 0, 1 or 2 and one line, never a traceback (exit 3), a signal, a hang or
unbounded memory. Most mutants run in this process through the CLI's own `main` (a subprocess costs
0.3 s to start); a sample runs through the real command with a time limit and a memory cap. The
seed is fixed, so a failure replays; `TOOLSTREAM_FUZZ_COUNT` runs more (the slow lane runs 150).
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cassettes import format as cassettes
from harness.cli import main
from harness.wire import dialects

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "cassettes"
SEED = 20_29
# Stand-ins for a field's value: every JSON type, and values that break naive code.
ODD_VALUES: list[Any] = [
    [1],
    {},
    {"type": {}},
    "x",
    "",
    7,
    -1,
    1.5,
    None,
    True,
    10**400,
    1e308,
    "\ud800",
    "\x00\x1b[31m\r\n",
    [[[[[]]]]],
]


def sources() -> list[Path]:
    return sorted(CORPUS.glob("*/*.yaml"))


# ---------------------------------------------------------------------------------------------
# Mutants: each is (label, file name, bytes)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path into decoded JSON, containers included."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield (*prefix, n)
            yield from _paths(item, (*prefix, n))


def _set(root: Any, path: tuple[Any, ...], value: Any) -> Any:
    root = copy.deepcopy(root)
    target = root
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return root


def _deep(levels: int) -> Any:
    value: Any = 1
    for n in range(levels):
        value = [value] if n % 2 else {"a": value}
    return value


def _event_mutant(rng: random.Random, path: Path) -> tuple[str, bytes] | None:
    """The cassette with one event's payload changed: a field of another type, deep nesting, or
    data that is not JSON."""
    cassette = cassettes.load(path)
    item = cassette.interactions[0]
    if cassette.dialect is None or not item.response.chunks:
        return None
    d = dialects.get(cassette.dialect)
    events = dialects.events_of(item.response, d)
    candidates = [n for n, e in enumerate(events) if isinstance(e.payload, dict)]
    if not candidates:
        return None
    n = rng.choice(candidates)
    payload = events[n].payload
    how = rng.random()
    if how < 0.7:
        where = rng.choice(list(_paths(payload)))
        value = rng.choice(ODD_VALUES)
        shown = ascii(value)[:30]
        if rng.random() < 0.1:
            value = _deep(rng.choice([150, 1200, 3000]))
            shown = "deep"
        label = f"event {n} {'.'.join(map(str, where))} = {shown}"
        changed: Any = _set(payload, where, value)
    elif how < 0.85:
        label = f"event {n} nested deep"
        changed = {**payload, "deep": _deep(rng.choice([101, 2000, 5000]))}
    else:
        text = d.dumps(payload)
        label = f"event {n} not JSON"
        changed = rng.choice(["xx" + text, text[: len(text) // 2], "", "[" * 3000])
    events[n] = events[n].with_payload(changed)
    try:
        body = dialects.body_of(events, d, like=item.response.body)
    except Exception:  # a value no wire can carry (a surrogate in NDJSON): no mutant
        return None
    item.response.chunks = [cassettes.Chunk(body)]
    item.expected = None if rng.random() < 0.5 else item.expected
    return label, cassettes.dumps(cassette).encode("utf-8", "surrogateescape")


def _byte_mutant(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    """The file's bytes changed: cut, a byte flipped, random or control bytes put in, deep YAML."""
    at = rng.randrange(len(data))
    how = rng.randrange(6)
    if how == 0:
        return f"cut at {at}", data[:at]
    if how == 1:
        return f"byte {at} flipped", data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :]
    if how == 2:
        noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        return f"noise at {at}", data[:at] + noise + data[at:]
    if how == 3:
        control = bytes(rng.choice(b"\x00\x01\x0b\x0c\x1b\x7f\r") for _ in range(3))
        return f"control bytes at {at}", data[:at] + control + data[at:]
    if how == 4:
        levels = rng.choice([150, 3000])
        return f"deep YAML at {at}", data[:at] + b"[" * levels + b"]" * levels + data[at:]
    number = b"9" * rng.choice([400, 5000])
    return f"huge number at {at}", data[:at] + number + data[at:]


def mutants(count: int, seed: int = SEED) -> Iterator[tuple[str, bytes]]:
    """`count` mutants of the bundled cassettes, the same ones for the same seed."""
    rng = random.Random(seed)
    paths = sources()
    made = 0
    while made < count:
        path = rng.choice(paths)
        name = path.relative_to(CORPUS).as_posix()
        if rng.random() < 0.6:
            found = _event_mutant(rng, path)
            if found is None:
                continue
            label, data = found
        else:
            label, data = _byte_mutant(rng, path.read_bytes())
        made += 1
        yield f"{name}: {label}", data


# ---------------------------------------------------------------------------------------------
# Running them


def run_in_process(argv: list[str]) -> tuple[int, str]:
    """The CLI's `main` in this process: its exit code and stderr. An exception it lets out is
    what a user would see as a traceback: it propagates to the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


# A few scenarios of each kind (identity, arguments, termination, wire), to keep a mutant cheap.
CHECKED_SCENARIOS = [
    "original",
    "A3-index-missing",
    "B8-args-as-object",
    "cut-at-every-event",
    "D1-wrong-finish-reason",
    "F3-one-byte-reads",
]


def commands(path: Path, work: Path) -> list[list[str]]:
    return [
        ["show", str(path)],
        ["check", "--accumulator", "reference", "--cassettes", str(path), "--timeout", "0", "--no-case-cache",
         "--scenarios", *CHECKED_SCENARIOS],
        ["mutate", str(path), "--scenario", "C1-interleaved-fragments", "-o", str(work / "out.yaml")],
        ["import", str(path), "--from", "sse", "-o", str(work / "imported.yaml")],
    ]


def check_in_process(label: str, data: bytes, work: Path) -> list[str]:
    """Every command over one mutant; the problems found (empty: none)."""
    path = work / "mutant.yaml"
    path.write_bytes(data)
    problems = []
    for argv in commands(path, work):
        try:
            code, err = run_in_process(argv)
        except BaseException as exc:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{Path(frame.filename).name}:{frame.lineno}"
            problems.append(f"{label}: {argv[0]}: {type(exc).__name__} at {where}: {str(exc)[:200]}")
            continue
        if code not in (0, 1, 2) or "Traceback" in err:
            problems.append(f"{label}: {argv[0]}: exit {code}: {err.strip()[-300:]}")
    return problems


MEMORY_LIMIT = 2 * 1024**3


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_command(argv: list[str], timeout: float = 60, *, cap: bool = True) -> tuple[int, str]:
    """The real `toolstream` command, with a memory cap (unless not `cap`) and a time limit."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "harness", *argv],
        capture_output=True,
        timeout=timeout,
        preexec_fn=_limit_memory if cap else None,
        env=env,
        check=False,
    )
    return done.returncode, done.stderr.decode("utf-8", "replace")


def check_command(label: str, data: bytes, work: Path) -> list[str]:
    path = work / "mutant.yaml"
    path.write_bytes(data)
    problems = []
    for argv in commands(path, work)[:3]:
        try:
            code, err = run_command(argv)
        except subprocess.TimeoutExpired:
            problems.append(f"{label}: {argv[0]}: hung")
            continue
        if code not in (0, 1, 2) or "Traceback" in err:
            problems.append(f"{label}: {argv[0]}: exit {code}: {err.strip()[-300:]}")
    return problems


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check_serve(label: str, data: bytes, work: Path, timeout: float = 30) -> list[str]:
    """`toolstream serve` over a folder holding the mutant: it starts and answers, or refuses the
    folder in one line; a request to it gets an answer; it never dies of a traceback."""
    folder = work / "serve"
    folder.mkdir(exist_ok=True)
    (folder / "mutant.yaml").write_bytes(data)
    port = _free_port()
    argv = ["serve", "--cassettes", str(folder), "--scenarios", "original", "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_limit_memory,
        env=env,
    )
    problems = []
    try:
        deadline = time.monotonic() + timeout
        while process.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.1)
        if process.poll() is None:
            case = "/case/mutant::original::s0/v1/chat/completions"
            request = urllib.request.Request(f"http://127.0.0.1:{port}{case}", data=b"{}", method="POST")
            try:
                urllib.request.urlopen(request, timeout=timeout).read()
            except urllib.error.HTTPError:
                pass  # an answer: a refusal of this request is one too
            except OSError as exc:
                problems.append(f"{label}: serve: no answer: {exc}")
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            problems.append(f"{label}: serve: hung")
            process.kill()
            process.wait()
        err = process.stderr.read().decode("utf-8", "replace") if process.stderr else ""
        if process.returncode not in (0, 1, 2, 130, -signal.SIGINT) or "Traceback" in err:
            problems.append(f"{label}: serve: exit {process.returncode}: {err.strip()[-300:]}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr:
            process.stderr.close()
    return problems


def fuzz(
    count: int, work: Path, *, commands_every: int = 50, check: Callable[..., list[str]] = check_in_process
) -> list[str]:
    problems: list[str] = []
    for n, (label, data) in enumerate(mutants(count)):
        problems += check(label, data, work)
        if commands_every and n % commands_every == 0:
            problems += check_command(label, data, work)
            problems += check_serve(label, data, work)
    return problems


# ---------------------------------------------------------------------------------------------
# Tests


def test_a_few_mutants_never_crash(tmp_path: Path) -> None:
    """The fast smoke test: a dozen mutants, in process."""
    problems = fuzz(12, tmp_path, commands_every=0)
    assert problems == []


@pytest.mark.slow
def test_hostile_mutants_never_crash(tmp_path: Path) -> None:
    count = int(os.environ.get("TOOLSTREAM_FUZZ_COUNT", "150"))
    problems = fuzz(count, tmp_path, commands_every=50)
    assert problems == [], "\n".join(problems)


@pytest.mark.slow
def test_hostile_programs_get_the_same_verdicts_warm_and_cold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each hostile program through the real command, warm and `--cold`: exit 0 or 1, no traceback,
    within the time limit and memory cap, and the same verdict on every case."""
    import json
    import shutil

    from tests._hostile_programs import CASES, HOSTILE_NODE, HOSTILE_PYTHON, python_site, write_program

    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))  # what zygotes learn: this test's
    python = python_site(tmp_path / "venv")
    programs = {name: (python, files) for name, files in HOSTILE_PYTHON.items()}
    if shutil.which("node") is not None:
        programs.update({name: (Path("node"), files) for name, files in HOSTILE_NODE.items()})
    problems = []
    for name, (runtime, files) in sorted(programs.items()):
        program = write_program(tmp_path / name, files)
        seen: dict[str, list[tuple[str, str]]] = {}
        for way in ("warm", "cold"):
            out = tmp_path / f"{name}-{way}.json"
            argv = ["check", "--client", f"{runtime} {program}", "--json", str(out)]
            argv += [word for case in CASES for word in ("--case", case)]
            argv += ["--cold"] if way == "cold" else []
            # No memory cap for Node (V8 reserves more address space than the cap), the time limit kept.
            code, err = run_command(argv, timeout=120, cap=runtime != Path("node"))
            if code not in (0, 1) or "Traceback" in err or not out.exists():
                problems.append(f"{name} {way}: exit {code}: {err.strip()[-300:]}")
                continue
            seen[way] = [(c["id"], c["verdict"]) for c in json.loads(out.read_text())["cases"]]
        if len(seen) == 2 and seen["warm"] != seen["cold"]:
            problems.append(f"{name}: warm {seen['warm']} != cold {seen['cold']}")
    assert problems == [], "\n".join(problems)
