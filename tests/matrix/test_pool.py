"""The process pool: a hang or a dead process is one case's verdict; N workers give the serial report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.matrix.runner import run_matrix
from harness.matrix.selection import Selection
from harness.oracle.verdict import Result, Verdict
from tests._runner_accumulators import PARALLEL, SINGLE, install


@pytest.fixture
def accs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return install(tmp_path, monkeypatch)


def _key(results: list[Result]) -> list[tuple[str, str, tuple[str, ...], str | None]]:
    return [(r.id, str(r.verdict), r.diff, r.error) for r in results]


@pytest.mark.slow
def test_containment_in_workers_hang_and_dead_process(accs: str) -> None:
    selection = Selection(
        cassettes=(PARALLEL, SINGLE), scenarios=("original", "F3-single-read", "F4-crlf-line-ends"), seeds=1
    )
    report = run_matrix(f"{accs}:mixed", selection, timeout=1)
    verdicts = [(r.cassette, r.scenario, r.verdict) for r in report.results]
    assert verdicts == [
        ("openai-chat/parallel-2", "original", Verdict.ERROR),
        ("openai-chat/parallel-2", "F3-single-read", Verdict.ERROR),
        ("openai-chat/parallel-2", "F4-crlf-line-ends", Verdict.FAIL),
        ("openai-chat/single-call", "original", Verdict.PASS),
        ("openai-chat/single-call", "F3-single-read", Verdict.TIMEOUT),
        ("openai-chat/single-call", "F4-crlf-line-ends", Verdict.SKIPPED),
    ]
    died = report.results[1]
    assert "died" in (died.error or "") and "exit code 3" in (died.error or "")
    assert "within 1 s" in (report.results[4].error or "")


def test_parallel_jobs_give_the_serial_report(accs: str) -> None:
    selection = Selection(
        cassettes=(PARALLEL, SINGLE),
        scenarios=("original", "parallel-calls-share-index-0", "F4-crlf-line-ends"),
    )
    serial = run_matrix(f"{accs}:IndexOnly", selection)
    parallel = run_matrix(f"{accs}:IndexOnly", selection, jobs=2, timeout=30)
    assert _key(serial.results) == _key(parallel.results)
    assert serial.count(Verdict.FAIL) >= 2 and serial.count(Verdict.PASS) >= 2


def test_the_forkserver_preload_imports_what_a_worker_needs() -> None:
    # Its imports fail silently (a worker meets the failure itself and says so), so a name it
    # gets wrong would only make workers slower: check each is loaded, in a process of its own.
    # The registries are read there too, with each mutation's parameter types, and the code's digest.
    code = (
        "import sys\n"
        "from harness.matrix.pool_preload import MODULES\n"
        "from harness import mutate\n"
        "from harness.wire import dialects\n"
        "read = mutate._loaded and dialects.REGISTERED.read\n"
        "from harness.matrix import casecache\n"
        "typed = mutate._hints.cache_info().currsize == len(mutate._REGISTRY)\n"
        "typed = typed and casecache._code_digest.cache_info().currsize == 1\n"
        "print(len(MODULES), read and typed, [name for name in MODULES if name not in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    count, read, missing = done.stdout.split(" ", 2)
    assert int(count) > 10 and missing.strip() == "[]"  # the mutations' and dialects' modules too
    assert read == "True"


def test_a_worker_holds_its_next_batch_while_it_runs_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Otherwise it waits, at the end of every batch (a cassette), for the parent to take the
    # results and send more: about a quarter of a full `-j 1` run, measured.
    from harness.matrix import pool

    held: list[int] = []
    receive = pool.Pool._receive

    def spy(self: pool.Pool, worker: Any, *args: Any) -> None:
        held.append(len(worker.ends))
        receive(self, worker, *args)

    monkeypatch.setattr(pool.Pool, "_receive", spy)
    selection = Selection(cassettes=(PARALLEL, SINGLE), scenarios=("original",))
    report = run_matrix("reference", selection, jobs=1, timeout=30)
    assert report.count(Verdict.PASS) == len(report.results) == 2
    assert max(held) == pool.IN_FLIGHT == 2


def test_workers_start_while_the_units_are_listed_and_none_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    from harness.matrix import pool
    from harness.matrix.selection import Matrix

    started: list[int] = []
    listed: list[int] = []
    start = pool.Pool._start
    units = Matrix.units

    def starting(self: pool.Pool) -> Any:
        started.append(len(listed))
        return start(self)

    def listing(self: Matrix) -> Any:
        listed.append(1)
        return units(self)

    monkeypatch.setattr(pool.Pool, "_start", starting)
    monkeypatch.setattr(Matrix, "units", listing)
    one_file = Selection(cassettes=(PARALLEL,), scenarios=("original",))
    report = run_matrix("reference", one_file, jobs=2, timeout=30)
    assert report.count(Verdict.PASS) == len(report.results) == 1
    assert started == [0]  # before the units were listed; one worker for one file's batch
    assert multiprocessing.active_children() == []

    def broken(self: Matrix) -> Any:
        raise RuntimeError("listing failed")

    monkeypatch.setattr(Matrix, "units", broken)
    started.clear()
    with pytest.raises(RuntimeError, match="listing failed"):
        run_matrix("reference", Selection(cassettes=(PARALLEL, SINGLE)), jobs=2, timeout=30)
    assert len(started) == 2 and multiprocessing.active_children() == []  # started, then stopped


_SCRIPT = f"""
from harness import Selection, run_matrix
from harness.errors import HarnessError
try:
    run_matrix("reference", Selection(cassettes=({SINGLE!r},), scenarios=("original",)), jobs=2)
except HarnessError as exc:
    print(type(exc).__name__, exc)
"""


def test_a_script_on_stdin_is_told_workers_cannot_import_it_before_any_starts() -> None:
    done = subprocess.run([sys.executable, "-"], input=_SCRIPT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("UsageError cases run in worker processes") and "(<stdin>)" in done.stdout
    assert done.stderr == ""  # no worker started, so none died


def test_a_script_without_the_main_guard_is_told_why_its_workers_die(tmp_path: Path) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("HarnessError a worker process died while starting (exit code 1)")
    assert 'under `if __name__ == "__main__":`' in done.stdout
    # Guarded, the same script runs.
    guarded = "".join(f"    {line}\n" for line in _SCRIPT.splitlines())
    script.write_text(f'if __name__ == "__main__":\n{guarded}')
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_workers_run_this_harness_when_the_working_directory_holds_another_copy(tmp_path: Path) -> None:
    """A checkout of the harness beside an installed one (CI runs the installed wheel from the
    checkout): the forkserver starts as `python -c`, the working directory first on its path, and
    its workers imported the checkout's copy, which named the installed corpus's cassettes by
    their path from here (`.venv/lib/.../openai-chat/...`), ids the parent then could not find."""
    other = tmp_path / "harness"
    other.mkdir()
    (other / "__init__.py").write_text("# another copy, without the rest of the package\n")
    toolstream = Path(sys.executable).with_name("toolstream")
    argv = [str(toolstream), "check", "--accumulator", "reference", "--dialect", "openai-chat",
            "--scenarios", "parallel-calls-share-index-0", "-j", "2", "--json", "out.json"]  # fmt: skip
    run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    import json

    ids = [c["id"] for c in json.loads((tmp_path / "out.json").read_text())["cases"]]
    assert ids and all(i.startswith("openai-chat/") for i in ids), ids[:3]
