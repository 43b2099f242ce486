"""The matrix split across CI machines by pytest's sharding plugins: each shard runs its part of
the case ids and no other, the shards together run every case once, and each case gets the verdict
the whole run gives it. Real plugins, each splitting its own way: pytest-shard by a hash of the
item's node id, pytest-split by item order (and recorded durations, none here)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests._pytester_support import CASSETTES, FIRST_CALL_ONLY, plugin_args, prepare

pytest_plugins = ["pytester"]

SCENARIOS = "original,parallel-calls-share-index-0,F3-one-byte-reads,A5-id-on-every-chunk"
SHARDS = 3
# Per plugin: the options that run shard `i` (from 0) of `n`.
PLUGINS: dict[str, Callable[[int, int], list[str]]] = {
    "pytest_shard": lambda i, n: ["--shard-id", str(i), "--num-shards", str(n)],
    "pytest_split": lambda i, n: ["--splits", str(n), "--group", str(i + 1)],
}


@pytest.mark.parametrize("plugin", PLUGINS)
def test_shards_run_every_case_once_with_the_whole_runs_verdicts(
    plugin: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip(plugin)  # installed, its entry point loads it
    prepare(pytester, monkeypatch)
    pytester.makepyfile(accs=FIRST_CALL_ONLY)  # wrong on parallel calls: both verdicts to compare
    # `--option=value`: a path given as its own word, before the plugin that reads it is loaded,
    # counts as a test path to pytest, which would take this repository's ini file as the session's.
    folder = CASSETTES / "openai-chat"
    args = [*plugin_args(), "-p", "no:randomly", f"--toolstream-cassette-dir={folder}"]
    args += ["--toolstream-scenarios", SCENARIOS, "--toolstream-accumulator", "accs:FirstCallOnly"]

    def verdicts(name: str, *extra: str) -> dict[str, str]:
        pytester.runpytest(*args, "--toolstream-json", name, *extra)
        cases = json.loads(Path(pytester.path, name).read_text(encoding="utf-8"))["cases"]
        return {case["id"]: case["verdict"] for case in cases}

    whole = verdicts("whole.json")
    assert len(whole) > 2 * SHARDS and {"pass", "fail"} <= set(whole.values())
    parts = [verdicts(f"shard-{i}.json", *PLUGINS[plugin](i, SHARDS)) for i in range(SHARDS)]
    assert all(parts), "a shard ran nothing: the split is not over the cases"
    assert sum(len(part) for part in parts) == len(whole)  # no case in two shards
    assert {case: verdict for part in parts for case, verdict in part.items()} == whole
