"""Matrix throughput: `python benchmarks/bench_matrix.py [--quick]` from the repo root.

The reference accumulator over the matrix (bundled cassettes x shipped scenarios, plus `original`;
`--quick`: the openai-chat cassettes only), run with `run_matrix` three ways: in process (`-j 1`,
no timeout), in one worker process with a per-case timeout (what `check -j 1` does by default),
and over two workers (`-j 2`), plus in process with the built-case store off; each the best of
five rounds (`--quick`: two), the four taking turns each round. Every run reads its cases from
a built-case store in a temporary folder (never the user's), filled by a first run that is not
timed. From the same runs:

- in process against one worker, and two workers against one (wall clock); then two workers
  against one again with the openai SDK's adapter (`openai-sdk`, the SDK parsing each case's
  stream; cases of other dialects are skipped), an accumulator whose cases cost more than the
  harness's own work per case, which is what `-j` is for;
- the harness's time per case (getting the cases and judging them: the in-process run's wall
  time less what the accumulator itself took, which each result records) against the
  accumulator's own time per case in the same run, twice: warm, the cases read back from the
  built-case store (`harness.matrix.casecache`), what every run after the first one pays; and
  cold, the store turned off, every case built by its pipeline (what a first run pays, less
  writing the store). Both after a first run that imports the mutations and dialects (once per
  process) and fills the store; each run still loads its scenarios;
- over stdio (`cmd:python -m harness.cli serve-accumulator reference`, one child process speaking
  JSON Lines) against in process, per case, on openai-chat x 4 scenarios;
- the pytest plugin (`pytest --toolstream-accumulator reference`) with two xdist workers against
  serial (wall clock, same cassettes), each with a cold pytest cache (a fresh clone): the items
  come from the case ids shipped in `harness/matrix/case-ids.json.gz`, so each worker builds only
  the cases it runs; and the same against a peer that does no work at all, a file of as many
  empty tests (`pytest -n 2` against serial, and our item against an empty one, serial): what
  pytest and xdist cost per item whatever the test does, the ceiling for the plugin's `-n 2`
  figure on this machine. Run with bytecode caches written, as an installed package has them: with
  PYTHONDONTWRITEBYTECODE set, pytest rewrites the asserts of every plugin's modules again in
  each process (about 3 s of CPU per worker here), which is what this figure would measure. Each
  session has its own temporary root (`PYTEST_DEBUG_TEMPROOT`), or the `-n 2` controller spends
  its end deleting older sessions' folders from the shared `/tmp/pytest-of-USER`. Each session
  loads only the plugins it measures (`PYTEST_DISABLE_PLUGIN_AUTOLOAD`, then `-p`: xdist, and the
  toolstream plugin where the session runs the matrix), so whatever else is installed (hypothesis,
  syrupy, langsmith...) adds its start-up to neither side;
- a long recording (one synthesized OpenAI chat stream of `BIG_READS` reads, one event each: one
  tool call whose arguments, a file's text, arrive a word a chunk, then its finish and `[DONE]`,
  as a model writing a long file sends it) through every scenario, in a fresh process: its peak
  memory with the built-case store on (a first run, which keeps each unit's cases until it writes
  the file) and on again (a later run, reading them back), each against the same run with the
  store off;
- the openai SDK's sessions split in two: from the first item's start to the last item's end
  (what `-n 2` divides between the workers) and the rest (start-up and collection, in each worker
  too; the workers' ends; the summary), beside two CPU-bound processes run at once against one
  after the other: how much of a second core the machine gave during this run.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from figures import Figure, Scale, cost, parse_scale, print_figures, speedup  # noqa: E402

if TYPE_CHECKING:
    from harness.cassettes.model import Cassette

NAME = "matrix"
OPENAI = str(ROOT / "cassettes/openai-chat")
BIG_READS: dict[Scale, int] = {"full": 5_000, "quick": 2_000, "smoke": 300}
ROUNDS: dict[Scale, int] = {"full": 5, "quick": 2, "smoke": 1}
FEW = ("original", "F3-single-read", "F3-one-byte-reads", "parallel-calls-share-index-0")
# Per scale: the cassettes (empty: all bundled) and scenarios (empty: all) of the throughput runs.
SELECTIONS: dict[Scale, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "full": ((), ()),
    "quick": ((OPENAI,), ()),
    "smoke": ((OPENAI,), FEW[:2]),
}


@dataclass(frozen=True)
class Run:
    cases: int
    seconds: float  # wall clock of the whole run
    accumulator_seconds: float  # what the accumulator took, summed over the cases


def run_reference(
    spec: str,
    cassettes: tuple[str, ...],
    scenarios: tuple[str, ...],
    *,
    jobs: int = 1,
    timeout: float | None = None,
) -> Run:
    """The one call into the runner: every selected case through `spec`, timed."""
    from harness import Selection, run_matrix

    start = time.perf_counter()
    selection = Selection(cassettes=cassettes, scenarios=scenarios)
    report: Any = run_matrix(spec, selection, jobs=jobs, timeout=timeout)
    seconds = time.perf_counter() - start
    # The reference passes every case; a library's adapter fails where the library does.
    bad = [r for r in report.results if str(r.verdict) not in ("pass", "skipped", "fail", "warn")]
    bad += [r for r in report.results if spec == "reference" and str(r.verdict) in ("fail", "warn")]
    if bad:
        print(f"  warning: {len(bad)} cases did not pass, e.g. {bad[0].id}: {bad[0].error or bad[0].diff}")
    return Run(len(report.results), seconds, sum(r.seconds for r in report.results))


def stdio_spec() -> str:
    # The child must import this checkout's harness, whatever is installed.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return f"cmd:{sys.executable} -m harness.cli serve-accumulator reference"


EMPTY_TESTS = """import pytest


@pytest.mark.parametrize("i", range({count}))
def test_nothing(i):
    pass
"""


# Written into a session's folder (its rootdir) by `measure_phases`: each process (the controller,
# each xdist worker) appends when it saw its first item start and its last item end, and how many
# items ended (the controller sees every worker's).
PHASES_CONFTEST = """import json, os, time

_SPAN = []
_ENDED = [0]


def pytest_runtest_logstart(nodeid, location):
    if not _SPAN:
        _SPAN.append(time.time())


def pytest_runtest_logfinish(nodeid, location):
    del _SPAN[1:]
    _SPAN.append(time.time())
    _ENDED[0] += 1


def pytest_unconfigure(config):
    if len(_SPAN) == 2:
        line = {"worker": hasattr(config, "workerinput"), "span": _SPAN, "items": _ENDED[0]}
        with open(os.path.join(str(config.rootpath), "phases.jsonl"), "a") as out:
            out.write(json.dumps(line) + "\\n")
"""


@dataclass(frozen=True)
class Session:
    seconds: float  # wall clock of the whole session
    items_seconds: float  # from the first item's start to the last item's end, any process
    items: int  # how many items ran


# The same CPU-bound loop as two processes after one another and at once: how much of the second
# core the machine gave in this run (the ceiling of any `-n 2` figure beside it).
SPIN = "sum(i * i for i in range({count}))"


def measure_two_cores(count: int) -> tuple[float, float]:
    """(one after the other, at once) wall seconds of two processes spinning `count` times."""
    command = [sys.executable, "-c", SPIN.format(count=count)]
    start = time.perf_counter()
    for _ in range(2):
        subprocess.run(command, check=True)
    serial = time.perf_counter() - start
    start = time.perf_counter()
    running = [subprocess.Popen(command) for _ in range(2)]
    for process in running:
        process.wait()
    return serial, time.perf_counter() - start


def run_pytest(
    cassettes: tuple[str, ...],
    scenarios: tuple[str, ...],
    cache: Path,
    *extra: str,
    spec: str = "reference",
    conftest: str | None = None,
) -> float:
    """Wall seconds of one plugin session over the matrix (no test files: the matrix items only)."""
    command = ["--toolstream-accumulator", spec, *extra]
    for item in cassettes:
        command += ["--toolstream-cassette-dir", item]
    for item in scenarios:
        command += ["--toolstream-scenarios", item]
    return run_session(
        cache, command, PLUGIN, failures_expected=spec != "reference", conftest=conftest
    )


PLUGIN = "harness.plugin.hooks"  # the toolstream plugin's entry point (pyproject's `pytest11`)


def run_session(
    cache: Path,
    arguments: list[str],
    *plugins: str,
    failures_expected: bool = False,
    conftest: str | None = None,
) -> float:
    """Wall seconds of one pytest session in `cache`'s parent folder, with xdist and `plugins` the
    only plugins loaded (exit 1, tests failed, is expected of a library's adapter: it fails where
    the library does)."""
    loaded = [flag for name in ("xdist.plugin", *plugins) for flag in ("-p", name)]
    command = [sys.executable, "-m", "pytest", "-q", *loaded, "--rootdir", str(cache.parent),
               "-o", f"cache_dir={cache}", *arguments]  # fmt: skip
    cache.parent.mkdir(parents=True, exist_ok=True)
    if conftest is not None:
        (cache.parent / "conftest.py").write_text(conftest)
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    # pytest's temporary folders under the session's own: an xdist controller makes a base temp for
    # its workers and, at the end, deletes the older numbered folders it finds (in the shared
    # /tmp/pytest-of-USER: every earlier test-suite run's). A serial session without `tmp_path`
    # never does, so without this the `-n 2` figure measured deleting others' files (10 s once).
    environment["PYTEST_DEBUG_TEMPROOT"] = str(cache.parent / "tmp")
    (cache.parent / "tmp").mkdir(exist_ok=True)
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=cache.parent, capture_output=True, text=True, check=False, env=environment
    )
    seconds = time.perf_counter() - start
    if done.returncode not in ((0, 1) if failures_expected else (0,)):
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        print(f"  warning: pytest {' '.join(arguments)} exited {done.returncode}: {' / '.join(tail)}")
    return seconds


def measure_pytest(
    cassettes: tuple[str, ...], scenarios: tuple[str, ...], spec: str = "reference", *, warm: bool = True
) -> tuple[float, float]:
    """(serial, two workers) wall seconds, each from a cold pytest cache (`warm`: after a session
    that only collects, so the bytecode caches are written before either is timed)."""
    with tempfile.TemporaryDirectory(prefix="toolstream-bench-") as scratch:
        folder = Path(scratch)
        if warm:
            run_pytest(cassettes, scenarios, folder / "warm-up" / ".cache", "--collect-only", spec=spec)
        serial = run_pytest(cassettes, scenarios, folder / "serial" / ".cache", spec=spec)
        two = run_pytest(cassettes, scenarios, folder / "two" / ".cache", "-n", "2", spec=spec)
    return serial, two


def items_phase(folder: Path) -> tuple[float, int]:
    """From the first item's start to the last item's end, over the processes that ran items (the
    workers under xdist), and how many items ran, as `PHASES_CONFTEST` wrote them in `folder`."""
    spans = [json.loads(line) for line in (folder / "phases.jsonl").read_text().splitlines()]
    ran = [s["span"] for s in spans if s["worker"]] or [s["span"] for s in spans]
    (session,) = [s for s in spans if not s["worker"]]  # the serial session or the controller
    return max(end for _, end in ran) - min(start for start, _ in ran), session["items"]


def measure_phases(
    cassettes: tuple[str, ...], scenarios: tuple[str, ...], spec: str, *, warm: bool = True
) -> tuple[Session, Session]:
    """(serial, two workers) sessions as in `measure_pytest`, each also timed from its first item to
    its last: what `-n 2` divides, apart from what it adds before (workers starting, each collecting)
    and after (the workers' ends, the summary)."""
    sessions = []
    with tempfile.TemporaryDirectory(prefix="toolstream-bench-") as scratch:
        folder = Path(scratch)
        if warm:
            run_pytest(cassettes, scenarios, folder / "warm-up" / ".cache", "--collect-only", spec=spec)
        for name, extra in (("serial", ()), ("two", ("-n", "2"))):
            cache = folder / name / ".cache"
            seconds = run_pytest(cassettes, scenarios, cache, *extra, spec=spec, conftest=PHASES_CONFTEST)
            sessions.append(Session(seconds, *items_phase(cache.parent)))
    return sessions[0], sessions[1]


def measure_empty_tests(count: int, *, warm: bool = True) -> tuple[float, float]:
    """(serial, two workers) wall seconds of a file of `count` empty tests, each from a cold cache."""
    sessions = [("serial", []), ("two", ["-n", "2"])]
    with tempfile.TemporaryDirectory(prefix="toolstream-bench-") as scratch:
        seconds = []
        for name, extra in [("warm-up", ["--collect-only"])] * warm + sessions:
            folder = Path(scratch) / name
            folder.mkdir()
            (folder / "test_empty.py").write_text(EMPTY_TESTS.format(count=count))
            seconds.append(run_session(folder / ".cache", [*extra, str(folder / "test_empty.py")]))
    return seconds[-2], seconds[-1]


@contextlib.contextmanager
def case_store(folder: str) -> Iterator[None]:
    """Runs in this process and the processes it starts read built cases from `folder` ("": off)."""
    from harness import cache
    from harness.matrix import casecache

    wanted = {cache.ENV: folder or None, casecache.OFF: None if folder else "1"}
    before = {name: os.environ.get(name) for name in wanted}
    try:
        for name, value in wanted.items():
            _set(name, value)
        yield
    finally:
        for name, value in before.items():
            _set(name, value)


def _set(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def long_call(reads: int) -> Cassette:
    """One OpenAI chat response of `reads` reads: a tool call writing a file, its arguments a word
    a chunk, then the finish and `[DONE]` (one terminal signal, at the end, as a provider sends it)."""
    from harness.wire.synthesis import synthesize

    head = {"id": "chatcmpl-long", "object": "chat.completion.chunk", "created": 1730000000,
            "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_5050236cbd"}  # fmt: skip

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    def args(text: str) -> dict[str, Any]:
        return chunk({"tool_calls": [{"index": 0, "function": {"arguments": text}}]})

    words = ["Lorem", " ipsum", " dolor", " sit", " amet", ",", " consectetur", " elit", ".\\n"]
    header = {"index": 0, "id": "call_0123456789abcdefghijklmn", "type": "function",
              "function": {"name": "write_file", "arguments": ""}}  # fmt: skip
    events: list[Any] = [chunk({"role": "assistant", "content": None, "refusal": None})]
    events += [chunk({"tool_calls": [header]}), args('{"path":"notes.txt","content":"')]
    events += [args(words[n % len(words)]) for n in range(reads - 6)]
    events += [args('"}'), chunk({}, "tool_calls"), "[DONE]"]
    url = "https://api.openai.com/v1/chat/completions"
    body = {"model": "gpt-4o", "stream": True}
    return synthesize("long-call", "openai-chat", url=url, body=body, events=events, provenance="bench")


def big_recording(scale: Scale) -> list[Figure]:
    """Peak memory of the scenario library over one long recording, store on (first and later
    run) against store off, each in a fresh process."""
    from bench_cassettes import peak_kib

    from harness.cassettes import format as cassettes

    reads = BIG_READS[scale]
    with tempfile.TemporaryDirectory(prefix="toolstream-bench-big-") as folder:
        path = Path(folder, "corpus", "openai-chat", "long.yaml")
        path.parent.mkdir(parents=True)
        recording = long_call(reads)
        assert len(recording.interactions[0].response.chunks) == reads
        cassettes.save(recording, path)
        run = f"run_matrix('reference', Selection(cassettes=({str(path)!r},)))"
        stored = str(Path(folder, "store"))
        peak: dict[str, float] = {}
        for label, store in (("off", ""), ("first", stored), ("later", stored)):
            with case_store(store):
                peak[label] = peak_kib(run, "from harness import Selection, run_matrix") / 1024
    what = f"every scenario over a {reads:,}-read recording, peak memory"
    peer = "the same, case store off"
    return [
        cost(NAME, f"{what}, case store on, a first run", peak["first"], peak["off"], peer, "MB"),
        cost(NAME, f"{what}, case store on, a later run", peak["later"], peak["off"], peer, "MB"),
    ]


def measure(scale: Scale) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="toolstream-bench-cases-") as store, case_store(store):
        return _measure(scale) + big_recording(scale)


def _measure(scale: Scale) -> list[Figure]:
    cassettes, scenarios = SELECTIONS[scale]
    run_reference("reference", cassettes, scenarios)  # imports the modules, fills the case store
    # Best of ROUNDS, the four ways taking turns each round, so a busy spell hits them alike.
    runs: dict[str, list[Run]] = {"cold": [], "warm": [], "one": [], "two": []}
    for _ in range(ROUNDS[scale]):
        with case_store(""):
            runs["cold"].append(run_reference("reference", cassettes, scenarios))  # every case built
        runs["warm"].append(run_reference("reference", cassettes, scenarios))
        runs["one"].append(run_reference("reference", cassettes, scenarios, timeout=30.0))
        runs["two"].append(run_reference("reference", cassettes, scenarios, jobs=2, timeout=30.0))
    cold, warm, one, two = (min(found, key=lambda run: run.seconds) for found in runs.values())
    # What `-j` is for: an accumulator whose cases cost more than the harness's own work per case.
    sdk_jobs: dict[int, list[Run]] = {1: [], 2: []}
    for _ in range(ROUNDS[scale]):
        for jobs, found in sdk_jobs.items():
            found.append(run_reference("openai-sdk", cassettes, scenarios, jobs=jobs, timeout=30.0))
    sdk_one, sdk_two = (min(found, key=lambda run: run.seconds) for found in sdk_jobs.values())
    few = FEW[:2] if scale == "smoke" else FEW
    in_process = run_reference("reference", (OPENAI,), few)
    over_stdio = run_reference(stdio_spec(), (OPENAI,), few)
    sessions_warm = scale != "smoke"  # a smoke run's timings mean nothing: no warm-up sessions
    serial_pytest, two_pytest = measure_pytest(cassettes, scenarios, warm=sessions_warm)
    serial_empty, two_empty = measure_empty_tests(warm.cases, warm=sessions_warm)
    # An adapter whose cases cost more than pytest's items: the openai SDK on its own dialect.
    serial_sdk, two_sdk = measure_phases((OPENAI,), scenarios, "openai-sdk", warm=sessions_warm)
    if serial_sdk.items != two_sdk.items:
        raise SystemExit(f"pytest ran {serial_sdk.items} items serial and {two_sdk.items} with -n 2")
    sdk_cases = serial_sdk.items
    after, at_once = measure_two_cores(10**5 if scale == "smoke" else 10**7)
    which = "all bundled cassettes" if not cassettes else "openai-chat cassettes"
    label = f"{warm.cases:,} cases ({which})"
    own = warm.accumulator_seconds / warm.cases * 1e6
    floor_item = (serial_empty + warm.seconds) / warm.cases * 1e3  # ms: an empty test + the case's work
    harness = (warm.seconds - warm.accumulator_seconds) / warm.cases * 1e6
    return [
        speedup(NAME, f"reference accumulator, {label}, in process", warm.cases / warm.seconds,
                one.cases / one.seconds, "1 worker with a timeout (`check -j 1`)", "cases/s"),
        # Tracked only: the reference's work takes under a second, so start-up bounds this at
        # 1.1x to 1.2x. `-j` is for an accumulator whose cases cost more: the SDK's row has the goal.
        speedup(NAME, f"reference accumulator, {label}, 2 workers", two.cases / two.seconds,
                one.cases / one.seconds, "1 worker", "cases/s"),
        speedup(NAME, f"the openai SDK's adapter, {label}, 2 workers", sdk_two.cases / sdk_two.seconds,
                sdk_one.cases / sdk_one.seconds, "1 worker", "cases/s", goal=1.6),
        speedup(NAME, f"pytest plugin, {label}, `-n 2`", warm.cases / two_pytest,
                warm.cases / serial_pytest, "serial", "cases/s", goal=1.6),
        speedup(NAME, f"pytest plugin, the openai SDK's adapter, {sdk_cases:,} cases (openai-chat "
                "cassettes), `-n 2`", sdk_cases / two_sdk.seconds, sdk_cases / serial_sdk.seconds, "serial",
                "cases/s"),
        speedup(NAME, "the same, first item's start to last item's end", sdk_cases / two_sdk.items_seconds,
                sdk_cases / serial_sdk.items_seconds, "serial", "cases/s"),
        cost(NAME, "the same, the rest of the session (start-up, collection, workers' ends, summary)",
             two_sdk.seconds - two_sdk.items_seconds, serial_sdk.seconds - serial_sdk.items_seconds,
             "serial", "s"),
        speedup(NAME, "two CPU-bound processes at once (the second core this run had)", 2 / at_once,
                2 / after, "one after the other", "runs/s"),
        speedup(NAME, f"{warm.cases:,} empty pytest tests, `-n 2`", warm.cases / two_empty,
                warm.cases / serial_empty, "serial", "tests/s"),
        cost(NAME, "pytest plugin, serial, wall time per item (start-up included)",
             serial_pytest / warm.cases * 1e3, serial_empty / warm.cases * 1e3, "an empty test", "ms",
             goal=1.1),
        # The floor under that goal: an item cannot cost less than an empty test plus its case's own
        # work (reading the case, the accumulator, judging: the in-process run's time per case).
        cost(NAME, "pytest plugin, serial, wall time per item (start-up included)",
             serial_pytest / warm.cases * 1e3, floor_item, "an empty test plus its case's own work", "ms"),
        cost(NAME, "an empty test plus its case's own work (the floor of the row above's goal)",
             floor_item, serial_empty / warm.cases * 1e3, "an empty test", "ms"),
        cost(NAME, "harness time per case (reading + judging), in process, case store warm", harness, own,
             "the accumulator's own time", "µs", goal=1.0),
        cost(NAME, "harness time per case (building + judging), in process, case store off",
             (cold.seconds - cold.accumulator_seconds) / cold.cases * 1e6,
             cold.accumulator_seconds / cold.cases * 1e6, "the accumulator's own time", "µs"),
        cost(NAME, f"over stdio (`serve-accumulator`), {in_process.cases} cases, per case",
             over_stdio.seconds / over_stdio.cases * 1000, in_process.seconds / in_process.cases * 1000,
             "in process", "ms"),
    ]  # fmt: skip


def main() -> None:
    scale = parse_scale((__doc__ or "").splitlines()[0])
    print_figures(measure(scale), scale)


if __name__ == "__main__":
    main()
