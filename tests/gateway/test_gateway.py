"""Translation mode (`check --gateway`): a gateway written for the tests and the docs
(examples/gateways/translator.py), faithful or with one fault, judged on the bundled cases
served as its upstream."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cassettes.outcome import Outcome, ServerCall, State, ToolCall
from harness.cli import main
from harness.wire.dialects.translation import asked_again, translated_outcome
from tests._pytester_support import copy_cassettes, plugin_args, prepare

ROOT = Path(__file__).resolve().parents[2]
TRANSLATOR = ROOT / "examples" / "gateways" / "translator.py"


def gateway(source: str, target: str, fault: str | None = None) -> str:
    argv = [sys.executable, str(TRANSLATOR), "--from", source, "--to", target]
    command = shlex.join(argv) + " --upstream {upstream} --key {key} --port {port}"
    return command + (f" --fault {fault}" if fault else "")


def check(source: str, target: str, cassette: str, fault: str | None = None, *extra: str) -> list[str]:
    return [
        "check", "--gateway", gateway(source, target, fault), "--from", source, "--to", target,
        "--cassettes", str(ROOT / "cassettes" / cassette), "--scenarios", "original", *extra,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("source", "target", "cassette"),
    [
        ("openai-chat", "anthropic", "openai-chat/text-then-call.yaml"),
        ("openai-chat", "anthropic", "openai-chat/parallel-2.yaml"),
        ("anthropic", "openai-chat", "anthropic/web-search.yaml"),
        ("anthropic", "openai-chat", "anthropic/text-before-call.yaml"),
    ],
)
def test_a_faithful_translator_passes(
    source: str, target: str, cassette: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(check(source, target, cassette)) == 0, capsys.readouterr().out
    assert "1 pass" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("source", "target", "cassette", "fault", "line"),
    [
        (
            "openai-chat", "anthropic", "openai-chat/text-then-call.yaml", "drop-switch",
            "gateway openai-chat -> anthropic: anthropic.delta-outside-block at event",
        ),
        (
            "anthropic", "openai-chat", "anthropic/web-search.yaml", "server-as-client",
            "gateway anthropic -> openai-chat: gateway.server-call-as-client-call: call 1: unexpected"
            " 'web_search'",
        ),
        (
            "openai-chat", "anthropic", "openai-chat/text-then-call.yaml", "renumber",
            "gateway openai-chat -> anthropic: anthropic.block-index-out-of-order at event 1:"
            " block 0 has index 1",
        ),
    ],
)  # fmt: skip
def test_each_broken_translation_is_named_by_its_hop_and_rule(
    source: str, target: str, cassette: str, fault: str, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(check(source, target, cassette, fault)) == 1
    out = capsys.readouterr().out
    assert line in out
    replay = next(text for text in out.splitlines() if "replay:" in text)
    assert f"--gateway {shlex.quote(gateway(source, target, fault))} --from {source} --to {target}" in replay


def test_a_gateway_that_does_not_start_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    argv = check("openai-chat", "anthropic", "openai-chat/single-call.yaml")
    argv[2] = "echo no such gateway; exit 3"
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "exited 3 before listening" in err[0] and "it said: no such gateway" in err[0]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ([], "--gateway: needs --from DIALECT and --to DIALECT"),
        (["--from", "openai-chat", "--to", "klingon"], "--to: unknown dialect 'klingon'"),
    ],
)
def test_gateway_options_are_checked(
    options: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--gateway", "true", *options]) == 2
    assert said in capsys.readouterr().err


def test_the_expected_outcome_is_translated() -> None:
    upstream = Outcome(
        tool_calls=(ToolCall("get_weather", {"city": "Paris"}, "toolu_1"),),
        text="Let me look.",
        finish_reason="tool_use",
        server_calls=(ServerCall("web_search", {"query": "q"}, "srvtoolu_1", "web_search_tool_result"),),
    )
    found = translated_outcome(upstream, "anthropic", "openai-chat")
    assert found.tool_calls == (ToolCall("get_weather", {"city": "Paris"}, None),)  # ids may be minted anew
    assert (found.text, found.finish_reason, found.state) == ("Let me look.", "tool_calls", State.COMPLETE)
    assert found.server_calls == (ServerCall("web_search", {"query": "q"}, None, "web_search_tool_result"),)
    gemini = Outcome(tool_calls=found.tool_calls, finish_reason="STOP")
    assert translated_outcome(gemini, "gemini", "anthropic").finish_reason == "tool_use"
    assert translated_outcome(found, "openai-chat", "openai-responses").finish_reason == "completed"


def test_the_question_is_asked_again_in_the_other_dialect() -> None:
    chat = {
        "model": "gpt-4.1-mini",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}],
        "tools": [
            {
                "type": "function",
                "function": {"name": "w", "description": "d", "parameters": {"type": "object"}},
            }
        ],
        "stream": True,
    }
    path, body = asked_again(chat, "openai-chat", "anthropic", "m")
    assert path == "/v1/messages"
    assert body["messages"] == [{"role": "user", "content": "Weather?"}]
    assert body["tools"] == [{"name": "w", "description": "d", "input_schema": {"type": "object"}}]
    path, body = asked_again(body, "anthropic", "openai-responses", "m")
    assert (path, body["input"], body["tools"][0]["name"]) == ("/responses", "Weather?", "w")
    path, body = asked_again(
        {"input": "Hi", "tools": [{"type": "web_search"}]}, "openai-responses", "openai-chat", "m"
    )
    assert "tools" not in body  # a server tool is not a function a chat client could be offered


def test_compare_two_gateways_names_the_rule_only_one_breaks(capsys: pytest.CaptureFixture[str]) -> None:
    faithful, renumbering = (
        gateway("openai-chat", "anthropic"),
        gateway("openai-chat", "anthropic", "renumber"),
    )
    hop = ["--from", "openai-chat", "--to", "anthropic", "--scenarios", "original"]
    cassette = ["--cassettes", str(ROOT / "cassettes/openai-chat/parallel-2.yaml")]
    assert main(["compare", "--gateway", faithful, renumbering, *hop, *cassette]) == 1
    assert "B breaks anthropic.block-index-out-of-order, A does not" in capsys.readouterr().out
    assert main(["compare", "--gateway", faithful, faithful, *hop, *cassette]) == 0
    assert "A and B agree on all 1 cases" in capsys.readouterr().out


def test_the_pytest_option_makes_an_item_per_case_naming_the_hop_and_rule(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(pytester, monkeypatch)
    copy_cassettes(pytester, "openai-chat/text-then-call", "openai-chat/parallel-2")
    hop = ["--toolstream-gateway-from", "openai-chat", "--toolstream-gateway-to", "anthropic"]
    common = [
        *plugin_args(),
        "--toolstream-cassette-dir",
        "corpus",
        "--toolstream-scenarios",
        "original",
        *hop,
    ]
    result = pytester.runpytest(*common, "--toolstream-gateway", gateway("openai-chat", "anthropic"))
    result.assert_outcomes(passed=2)
    broken = gateway("openai-chat", "anthropic", "drop-switch")
    result = pytester.runpytest(*common, "--toolstream-gateway", broken)
    result.assert_outcomes(passed=1, failed=1)  # parallel-2 has no text before its calls: no switch
    result.stdout.fnmatch_lines(
        ["*gateway openai-chat -> anthropic: anthropic.delta-outside-block at event*"]
    )
    result.stdout.fnmatch_lines(["*pytest --toolstream-gateway*-k 'gateway[[]*openai-chat/text-then-call*"])


def test_a_gateway_already_running_is_given_by_url_and_its_upstream_port(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from harness.gateway.process import free_port

    upstream, port = free_port(), free_port()
    argv = [sys.executable, str(TRANSLATOR), "--from", "openai-chat", "--to", "anthropic",
            "--upstream", f"http://127.0.0.1:{upstream}/case/gateway-0/v1", "--port", str(port)]  # fmt: skip
    with subprocess.Popen(argv, stderr=subprocess.PIPE) as running:
        try:
            assert running.stderr is not None and b"listening" in running.stderr.readline()
            options = ["--gateway", f"http://127.0.0.1:{port}", "--upstream-port", str(upstream)]
            assert (
                main(
                    ["check", *options, *check("openai-chat", "anthropic", "openai-chat/parallel-2.yaml")[3:]]
                )
                == 0
            )
            assert "1 pass" in capsys.readouterr().out
        finally:
            running.terminate()


def test_jobs_start_one_gateway_each_and_report_as_one(capsys: pytest.CaptureFixture[str]) -> None:
    argv = check("anthropic", "openai-chat", "anthropic", None, "-j", "2")
    assert main(argv) == 0
    out = capsys.readouterr().out
    # 17: the merge added four anthropic cassettes (eager input, thinking, server tool), which pass
    assert "17 cases: 15 pass, 0 fail, 2 warn" in out  # the two cut cases warn: a call withheld


def test_a_custom_call_the_gateway_was_never_asked_for_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The question is asked again with its function tools only: a custom (freeform) call in the
    upstream's stream is one no provider sends for the request the gateway makes, so the case is
    skipped with the reason, not judged (the LiteLLM proxy's chat -> messages row failed 33 spec
    verdicts on openai-chat/custom-tool for it)."""
    report = tmp_path / "r.json"
    argv = check("openai-chat", "anthropic", "openai-chat/custom-tool.yaml", None, "--json", str(report))
    assert main(argv) == 0, capsys.readouterr().out
    (case,) = json.loads(report.read_text(encoding="utf-8"))["cases"]
    assert case["verdict"] == "skipped"
    assert case["error"] == (
        "the stream calls the custom (freeform) tool 'run_shell': the question asked again in"
        " anthropic's words offers function tools only"
    )


def test_a_client_run_responses_item_the_gateway_was_never_asked_for_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same for a client-run Responses item (`apply_patch_call`): a chat client cannot be
    offered the tool, so the gateway's upstream request never asks for it (the LiteLLM proxy's
    responses -> chat row failed 34 verdicts on apply-patch and shell-call recordings for it). The
    case is skipped before the gateway is asked: any HTTP server stands in for it."""
    report = tmp_path / "r.json"
    server = shlex.join([sys.executable, "-m", "http.server", "--bind", "127.0.0.1"]) + " {port}"
    cassette = str(ROOT / "cassettes" / "openai-responses" / "apply-patch.yaml")
    argv = ["check", "--gateway", server, "--from", "openai-responses", "--to", "openai-chat"]
    argv += ["--cassettes", cassette, "--scenarios", "original", "--json", str(report)]
    assert main(argv) == 0, capsys.readouterr().out
    (case,) = json.loads(report.read_text(encoding="utf-8"))["cases"]
    assert case["verdict"] == "skipped"
    assert case["error"] == (
        "the stream calls a `apply_patch_call` item: the question asked again in openai-chat's words"
        " offers function tools only"
    )
