"""LiteLLM's proxy (`litellm[proxy]`, pinned, in `.venv-litellm-proxy`) as a gateway under
`check --gateway`: started on loopback with the replay server as its upstream
(examples/gateways/litellm-proxy.yaml), across chat -> messages, messages -> chat and
responses -> chat, on a few cases each. What it does with them is pinned here as found
(docs/gateways.md, "LiteLLM's proxy"); a release that fixes one changes its line.

The proxy is started once for the module (its start costs ~9 s of CPU, about a minute on a loaded
machine), by the harness's own gateway start (`harness.gateway.started`, what `check --gateway
COMMAND` runs) with its upstream at a port chosen here; each check is then given it running, as
docs/gateways.md says for a gateway given by URL (`--gateway URL --upstream-port P`)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from harness.gateway.hop import SLOT
from harness.gateway.process import Upstream, free_port, started
from harness.serve import base_urls, client_environment
from tests._side_venvs import side_python

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "gateways" / "litellm-proxy.yaml"
SLOW = pytest.mark.slow  # the proxy takes seconds to start on a loaded machine


def proxy() -> str:
    """The gateway command: the side environment's `litellm` on the config, offline."""
    litellm = side_python("litellm-proxy").parent / "litellm"
    argv = ["env", "LITELLM_LOCAL_MODEL_COST_MAP=True", str(litellm), "--config", str(CONFIG)]
    return shlex.join(argv) + " --host 127.0.0.1 --port {port}"


class Gateway(NamedTuple):
    url: str  # where the proxy listens
    upstream_port: int  # where it finds its upstream: the replay server of whoever asks it


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    """The proxy, started once for the module's tests, its upstream the replay server a test runs
    at `upstream_port` (each at its turn: one case at a time, as one gateway serves)."""
    command = proxy()  # skips, saying how to build it, without the side environment
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    upstream = Upstream(base_urls(root, SLOT)["openai-chat"], client_environment(root, SLOT))
    with started(command, upstream) as url:
        yield Gateway(url, port)


def run(
    gateway: Gateway, source: str, target: str, model: str, cases: list[str], report: Path
) -> dict[str, dict[str, Any]]:
    options = [option for case in cases for option in ("--case", case)]
    hop = ["--gateway", gateway.url, "--upstream-port", str(gateway.upstream_port),
           "--from", source, "--to", target, "--model", model]  # fmt: skip
    command = [sys.executable, "-m", "harness", "check", *hop, *options, "--json", str(report)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=os.environ)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return {case["id"]: case for case in json.loads(report.read_text())["cases"]}


def rules(case: dict[str, Any]) -> set[str]:
    """The rules a case's lines name (`gateway A -> B: RULE...`)."""
    return {line.split(": ", 2)[1].split(" ")[0] for line in case["diff"]}


def test_the_config_gives_each_upstream_a_model_reached_through_the_harness_variables() -> None:
    models = {m["model_name"]: m["litellm_params"] for m in yaml.safe_load(CONFIG.read_text())["model_list"]}
    assert models["chat-upstream-via-chat"]["api_base"] == "os.environ/OPENAI_BASE_URL"
    assert models["anthropic-upstream"]["api_base"] == "os.environ/ANTHROPIC_BASE_URL"
    assert models["responses-upstream"]["model"].startswith("openai/responses/")


@SLOW
def test_chat_to_messages_leaves_the_text_block_open_under_the_tool_block(
    gateway: Gateway, tmp_path: Path
) -> None:
    found = run(gateway, "openai-chat", "anthropic", "chat-upstream-via-chat",
                ["openai-chat/single-call::original::s0", "openai-chat/text-then-call::original::s0"],
                tmp_path / "r.json")  # fmt: skip
    assert found["openai-chat/single-call::original::s0"]["verdict"] == "pass"
    text_then_call = found["openai-chat/text-then-call::original::s0"]
    assert text_then_call["verdict"] == "fail"
    assert rules(text_then_call) == {"anthropic.block-overlap"}  # the calls themselves come through


@SLOW
def test_messages_to_chat_hands_server_tools_to_the_client(gateway: Gateway, tmp_path: Path) -> None:
    found = run(gateway, "anthropic", "openai-chat", "anthropic-upstream",
                ["anthropic/single-call::original::s0", "anthropic/web-search::original::s0"],
                tmp_path / "r.json")  # fmt: skip
    assert found["anthropic/single-call::original::s0"]["verdict"] == "pass"
    web_search = found["anthropic/web-search::original::s0"]
    assert web_search["verdict"] == "fail"
    assert "gateway.server-call-as-client-call" in rules(web_search)


@SLOW
def test_responses_to_chat_loses_arguments_sent_only_in_the_done_event(
    gateway: Gateway, tmp_path: Path
) -> None:
    cases = ["openai-responses/single-call::original::s0", "openai-responses/args-only-in-done::original::s0"]
    found = run(gateway, "openai-responses", "openai-chat", "responses-upstream", cases, tmp_path / "r.json")
    assert found["openai-responses/single-call::original::s0"]["verdict"] == "pass"
    done_only = found["openai-responses/args-only-in-done::original::s0"]
    assert done_only["verdict"] == "fail"
    assert any("expected, got {}" in line for line in done_only["diff"])


@SLOW
def test_probe_through_the_proxy_names_the_shape_its_upstream_streams(
    gateway: Gateway, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The proxy in front of a server that sends whole calls in one fragment (Groq, B5): LiteLLM
    passes the shape through, the probe names it, within the protocol (exit 0)."""
    from harness.cli import main
    from harness.gateway import serve_upstream
    from harness.matrix.selection import Matrix, Selection
    from harness.serve import ReplayServer

    (case,) = Matrix(Selection(cases=("openai-chat/groq-whole-calls::original::s0",))).all()
    with ReplayServer([], port=gateway.upstream_port).running() as server:
        serve_upstream(server, case)
        argv = ["probe", "--base-url", gateway.url + "/v1", "--dialect", "openai-chat",
                "--model", "chat-upstream", "--recipes", "single", "parallel",
                "--out", str(tmp_path)]  # fmt: skip
        assert main(argv) == 0
    out = capsys.readouterr().out
    assert re.search(
        r"\nB5 +a whole call, name and arguments, in one fragment +within +single, parallel", out
    )


REPROS = sorted((ROOT / "examples" / "repros" / "gateways").glob("*.py"))


def test_each_gateway_repro_is_listed() -> None:
    listed = (ROOT / "examples" / "repros" / "gateways" / "README.md").read_text()
    assert len(REPROS) == 3 and all(f"({script.name})" in listed for script in REPROS)


@SLOW
@pytest.mark.parametrize("script", REPROS, ids=lambda p: p.stem)
def test_each_gateway_repro_fails_on_the_pinned_proxy(script: Path) -> None:
    python = side_python("litellm-proxy")
    run = subprocess.run(
        [str(python), str(script)], capture_output=True, text=True, timeout=600, cwd=script.parent
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "bug present" in run.stdout
