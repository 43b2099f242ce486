"""Each adapter against its library driven the documented way, as its users drive it: on the same
cases, what the user gets (the calls, and whether the stream raised) is what the adapter reports.
A difference is the adapter's bug, never the library's (issue 30, families 6 and 7).

- langchain-core (event level, fed the chunks langchain-openai and langchain-anthropic build) against
  `ChatOpenAI.stream` and `ChatAnthropic.stream` themselves, chunks summed with `+`.
- pydantic-ai against `pydantic_ai.direct.model_request_stream` (tests/fidelity/pydantic_ai_user.py,
  run in `.venv-pydantic-ai`): the calls of the final response, or after a raise the tool calls its
  `PartEndEvent`s handed over.
- agno against an `Agent` run with `stream=True` (tests/fidelity/agno_user.py, run in `.venv-agno`):
  the tools the agent runs in its first turn, and whether the run failed.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from harness import Selection
from harness.accumulators import resolve
from harness.accumulators.client import replay_transport
from harness.matrix.selection import Matrix
from tests._side_venvs import ROOT, side_python

# Scenarios where the adapters have differed from their libraries, and the plain recordings.
SCENARIOS = ("original", "A3-index-missing", "A10-missing-id-entirely", "interleaved-tool-blocks",
             "C1-interleaved-fragments", "D7-truncated-mid-args", "cut-at-every-event")  # fmt: skip


def _cases(dialect: str, scenarios: tuple[str, ...] = SCENARIOS) -> list[Any]:
    return list(Matrix(Selection(dialects=(dialect,), scenarios=scenarios)).all())


def _langchain_model(case: Any) -> Any:
    """The langchain chat model a user drives on this case, its request's tools bound; `bind_tools`
    raises ValueError on a tool the integration cannot bind (a custom/freeform tool)."""
    import httpx2

    if case.dialect == "openai-chat":
        from langchain_openai import ChatOpenAI

        model: Any = ChatOpenAI(
            model="m", api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0,
            http_client=httpx2.Client(transport=replay_transport(case)),
        )  # fmt: skip
    else:
        import anthropic
        from langchain_anthropic import ChatAnthropic

        model = ChatAnthropic(model="m", api_key="k", max_retries=0)
        # ChatAnthropic takes no http client: its SDK client is the cached property `_client`.
        model.__dict__["_client"] = anthropic.Anthropic(
            api_key="k", base_url="http://127.0.0.1:9", max_retries=0,
            http_client=httpx2.Client(transport=replay_transport(case)),
        )  # fmt: skip
    body = case.request.body if case.request is not None and isinstance(case.request.body, dict) else {}
    if body.get("tools"):
        model = model.bind_tools(body["tools"])
    return model


def _bindable(case: Any) -> bool:
    try:
        _langchain_model(case)
    except ValueError:
        return False
    return True


def _langchain_user(case: Any) -> dict[str, Any]:
    """What a langchain user has: the summed chunks' `tool_calls` and `invalid_tool_calls`, or
    nothing when `stream` raised."""
    model = _langchain_model(case)
    total: Any = None
    try:
        for chunk in model.stream("hi"):
            total = chunk if total is None else total + chunk
    except Exception:
        return {"raised": True, "valid": [], "invalid": []}
    if total is None:
        return {"raised": False, "valid": [], "invalid": []}
    return {
        "raised": False,
        "valid": [[c["name"], c["args"], c["id"]] for c in total.tool_calls],
        "invalid": [[c["name"], c["args"] or "", c["id"]] for c in total.invalid_tool_calls],
    }


def _langchain_adapter(adapter: Any, case: Any) -> dict[str, Any]:
    outcome = adapter.run(case)
    calls = outcome.tool_calls
    return {
        "raised": outcome.error is not None,
        "valid": [[c.name, c.arguments, c.id] for c in calls if not c.invalid],
        "invalid": [[c.name, c.arguments, c.id] for c in calls if c.invalid],
    }


def _differences(cases: list[Any], user: Any, adapter: Any) -> list[str]:
    out = []
    for case in cases:
        theirs, ours = user(case), adapter(case)
        if theirs != ours:
            out.append(f"{case.id}: the library gives {theirs}, the adapter reports {ours}")
    return out


def test_langchain_core_reads_index_less_fragments_as_langchain_openai_does() -> None:
    # Family 6: langchain-openai reads the SDK's model_dump(), where a missing index is None.
    pytest.importorskip("langchain_openai")
    adapter = resolve("langchain-core")
    cases = [c for c in _cases("openai-chat", ("A3-index-missing",)) if "azure-prompt-filter" in c.id]
    assert cases
    assert _differences(cases, _langchain_user, lambda case: _langchain_adapter(adapter, case)) == []


@pytest.mark.slow
@pytest.mark.parametrize("dialect", ["openai-chat", "anthropic"])
def test_langchain_core_gives_what_the_langchain_integrations_give(dialect: str) -> None:
    pytest.importorskip("langchain_openai")
    pytest.importorskip("langchain_anthropic")
    adapter = resolve("langchain-core")
    # A case whose request carries a tool the integration cannot bind (openai-chat/custom-tool's
    # freeform tool) has no langchain user to compare with: left out, and only such a case.
    cases = _cases(dialect)
    kept = [case for case in cases if _bindable(case)]
    kept_ids = {case.id for case in kept}
    for case in cases:
        if case.id not in kept_ids:
            tools = case.request.body["tools"]
            assert any(tool.get("type") not in (None, "function") for tool in tools), case.id
    assert kept
    found = _differences(kept, _langchain_user, lambda case: _langchain_adapter(adapter, case))
    assert found == [], "\n".join(found[:10])


@pytest.mark.slow
def test_pydantic_ai_gives_what_its_direct_api_gives() -> None:
    # Family 7: after a cut, the tool calls pydantic-ai handed over with a PartEndEvent are the user's.
    python = side_python("pydantic-ai")
    run = subprocess.run(
        [str(python), str(ROOT / "tests" / "fidelity" / "pydantic_ai_user.py"), *SCENARIOS],
        cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TOOLSTREAM_NO_CASE_CACHE": "1"},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(rows) > 500
    assert any(row["id"] == "anthropic/cut-mid-args::original::s0" for row in rows)
    found = [f"{r['id']}: pydantic-ai gives {r['user']}, the adapter {r['adapter']}" for r in rows
             if r["user"] != r["adapter"]]  # fmt: skip
    assert found == [], "\n".join(found[:10])


# Where agno's findings are (index merges, split names, placeholders, cuts, errors, shifted indexes):
# cuts by D7 and D8, not by `cut-at-every-event` (631 of the 1,121 cases, for the suite's time).
AGNO_SCENARIOS = (*(s for s in SCENARIOS if s != "cut-at-every-event"),
                  "A1-parallel-same-index", "A12-null-word-id-on-continuations",
                  "B2-name-split-across-fragments", "B6-placeholder-args-in-header",
                  "C4-reasoning-shifts-index", "D8-mid-stream-error",
                  "D10-duplicate-start-events")  # fmt: skip


@pytest.mark.slow
def test_agno_gives_what_its_agent_runs() -> None:
    python = side_python("agno")
    run = subprocess.run(
        [str(python), str(ROOT / "tests" / "fidelity" / "agno_user.py"), *AGNO_SCENARIOS],
        cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TOOLSTREAM_NO_CASE_CACHE": "1"},
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(rows) > 400
    assert any(row["id"] == "openai-chat/litellm-bridge-parallel-index0::original::s0" for row in rows)
    found = [f"{r['id']}: agno's agent gives {r['user']}, the adapter {r['adapter']}" for r in rows
             if r["user"] != r["adapter"]]  # fmt: skip
    assert found == [], "\n".join(found[:10])


def test_an_sdk_built_on_httpx_gets_an_httpx_client(monkeypatch: pytest.MonkeyPatch) -> None:
    # Releases of openai and anthropic before httpx2 refuse an httpx2 client (`Invalid http_client`):
    # the adapters hand each SDK a client of the library its own base client imports.
    import sys
    import types

    import httpx

    from harness.accumulators.client import sdk_http

    old, base = types.ModuleType("oldsdk"), types.ModuleType("oldsdk._base_client")
    base.httpx = httpx  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "oldsdk", old)
    monkeypatch.setitem(sys.modules, "oldsdk._base_client", base)
    assert sdk_http("oldsdk", "openai") is httpx
    assert sdk_http("openai", "openai").__name__ == "httpx2"  # the pinned release is built on httpx2
