"""`toolstream repro`: one case as a standalone script that needs only the library under test.

The script inlines the case's response read by read (and the transport error that cut it, if
any), serves it through the library's own HTTP mocking point (`httpx2.MockTransport` given as the
SDK's `http_client`), runs the library the way the matching built-in adapter does, prints what it
returned next to what the stream means (the harness's expected outcome, inlined as data), and
exits 1 while they differ (the bug is present), 0 once they agree. One template per library lives
in `harness.search.repro_templates`; this module picks it and fills in the data.
"""

from __future__ import annotations

import json
import pprint
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness._version import __version__
from harness.accumulators.client import base_url, recorded_request, request_body
from harness.cassettes.format import Request, dumps
from harness.errors import UsageError
from harness.mutate.scenario import case_cassette
from harness.oracle.expectation import classify, declaration
from harness.search import repro_templates as templates
from harness.serve import base_urls
from harness.text.escape import python_text
from harness.transports.replay import served_headers
from harness.wire.dialects.translation import asked_again, requesting, translated_outcome

if TYPE_CHECKING:
    from harness.mutate.case import Case
    from harness.mutate.scenario import Scenario

__all__ = [
    "SPECS",
    "GatewayProgram",
    "Template",
    "adapter_script",
    "gateway_script",
    "has_template",
    "repro_script",
    "template_for",
]


@dataclass(frozen=True)
class Template:
    """One library's part of a script: what to install, the dialects it reads, its `run()` code."""

    library: str  # what `pip install` names
    dialects: tuple[str, ...]
    code: str
    endpoints: dict[str, str]  # dialect -> the path the base URL is cut before


_OPENAI_ENDPOINTS = {"openai-chat": "/chat/completions"}
_ANTHROPIC_ENDPOINTS = {"anthropic": "/v1/messages"}
_BOTH = {**_OPENAI_ENDPOINTS, **_ANTHROPIC_ENDPOINTS}
# Gemini's model (and Vertex's project and location) is in the path: the base URL keeps it.
_GEMINI_ENDPOINTS = {"gemini": ":streamGenerateContent"}

# Accumulator spec -> the template that reproduces what its adapter runs.
SPECS: dict[str, Template] = {
    "openai-sdk": Template("openai", ("openai-chat",), templates.OPENAI, _OPENAI_ENDPOINTS),
    "anthropic-sdk": Template("anthropic", ("anthropic",), templates.ANTHROPIC, _ANTHROPIC_ENDPOINTS),
    "pydantic-ai": Template(
        "pydantic-ai-slim[openai,anthropic]", ("openai-chat", "anthropic"), templates.PYDANTIC_AI, _BOTH
    ),
    "litellm": Template("litellm", ("openai-chat", "anthropic"), templates.LITELLM, _BOTH),
    "google-adk": Template(
        "google-adk anthropic",
        ("gemini", "anthropic"),
        templates.GOOGLE_ADK,
        {**_GEMINI_ENDPOINTS, **_ANTHROPIC_ENDPOINTS},
    ),
    "smolagents": Template("smolagents[openai]", ("openai-chat",), templates.SMOLAGENTS, _OPENAI_ENDPOINTS),
    "agno": Template("agno[openai,anthropic]", ("openai-chat", "anthropic"), templates.AGNO, _BOTH),
    "strands-agents": Template(
        "strands-agents[openai,anthropic,gemini]",
        ("openai-chat", "anthropic", "gemini"),
        templates.STRANDS_AGENTS,
        {**_BOTH, **_GEMINI_ENDPOINTS},
    ),
    "langchain-openai": Template(
        "langchain-openai", ("openai-chat",), templates.LANGCHAIN_OPENAI, _OPENAI_ENDPOINTS
    ),
    "langchain-anthropic": Template(
        "langchain-anthropic", ("anthropic",), templates.LANGCHAIN_ANTHROPIC, _ANTHROPIC_ENDPOINTS
    ),
}
# langchain-core alone makes no request: its bug is reproduced through the provider package.
_LANGCHAIN_CORE = {"openai-chat": "langchain-openai", "anthropic": "langchain-anthropic"}
# Request fields the scripts pass on (the mocked server answers whatever is sent).
_REQUEST_FIELDS = (
    "model",
    "max_tokens",
    "system",
    "messages",
    "tools",
    "tool_choice",
    "stream_options",
    "toolConfig",  # Gemini's (streamed function-call arguments asked for)
)


def has_template(spec: str) -> bool:
    """Whether `repro` writes scripts for this accumulator spec (for some dialect)."""
    return spec in SPECS or spec == "langchain-core"


def template_for(spec: str, dialect: str) -> Template:
    """The template for an accumulator spec and a case's dialect; `UsageError` when there is none."""
    name = _LANGCHAIN_CORE.get(dialect, "") if spec == "langchain-core" else spec
    template = SPECS.get(name)
    if template is None:
        known = ", ".join([*SPECS, "langchain-core"])
        raise UsageError(f"repro: no script template for accumulator {spec!r}; use one of {known}")
    if dialect not in template.dialects:
        raise UsageError(
            f"repro: {spec} reads {' and '.join(template.dialects)} streams; this case is {dialect}"
        )
    return template


def repro_script(case: Case, spec: str, *, command: str, scenario: Scenario | None = None) -> str:
    """The standalone script reproducing `case` with the library behind `spec` (`scenario`: the one
    that made it, as for `classify`)."""
    template = template_for(spec, case.dialect)
    expectation = classify(case, scenario)
    request = recorded_request(case)
    body = request_body(case)
    response = case.response
    expected = case.expected.to_dict()
    expected.pop("usage", None)
    expected.pop("notes", None)
    expected.pop("server_calls", None)
    expected.pop("parts", None)  # a repro judges what the library hands over: calls, text, ending
    cut = None if response.complete else [response.error_type or "ReadError", response.error or "cut"]
    data = {
        "DIALECT": case.dialect,
        "URL": _base_url(request.url, template.endpoints[case.dialect]),
        "REQUEST": {key: body[key] for key in _REQUEST_FIELDS if key in body},
        "STATUS": response.status,
        "HEADERS": served_headers(response.headers),
        "CUT": cut,
        "EXPECTED": expected,
    }
    # Names and values from the cassette, scenario and case id are data: escaped in the docstring
    # (a `"""` in a file name must not end it), as literals below.
    said = python_text
    lines = [
        "#!/usr/bin/env python3",
        f'"""{said(case.id)} through {said(spec)}: a standalone reproduction.',
        "",
        f"Stream: {said(str(expectation.case_class))} ({said(expectation.reason)}).",
        f"Needs only: pip install {template.library}",
        "Run: python this file. It serves the recorded (and mutated) stream below through the",
        "library's own HTTP mocking point, prints what the library returned and what the stream",
        "means, and exits 1 while they differ, 0 once the library handles this stream.",
        f"Generated by: {said(command)}",
        '"""',
        "",
        "import json",
        "import sys",
        "",
        "# The response, one bytes literal per network read, exactly as the client received it.",
        "READS = [",
        *(f"    {chunk.data!r}," for chunk in response.chunks),
        "]",
    ]
    for key, value in data.items():
        lines.append(f"{key} = {_literal(value)}")
    for part in (templates.TRANSPORT, templates.HELPERS, template.code, templates.MAIN):
        lines += ["", "", part.strip()]
    return "\n".join(lines) + "\n"


def _base_url(url: str, endpoint: str) -> str:
    return base_url(Request(method="POST", url=url), endpoint)


def _literal(value: Any) -> str:
    """A Python literal of plain JSON data (None, True, False spelled the Python way)."""
    json.dumps(value)  # only plain data goes in a script
    return pprint.pformat(value, width=110, sort_dicts=False)


def adapter_script(case: Case, spec: str, *, command: str, scenario: Scenario | None = None) -> str:
    """The standalone script reproducing `case` with any accumulator (`spec`: the user's own
    `module:attr`, an entry point, a `cmd:` process): the case inlined as a cassette (its request,
    its response read by read, its expected outcome and class), run through the harness's own
    replay seam exactly as `check` runs it, exit 1 while the verdict fails, 0 once it passes."""
    expectation = classify(case, scenario)
    cassette = case_cassette(case, declared=declaration(case, scenario))
    said = python_text
    lines = [
        "#!/usr/bin/env python3",
        f'"""{said(case.id)} through {said(spec)}: a standalone reproduction.',
        "",
        f"Stream: {said(str(expectation.case_class))} ({said(expectation.reason)}).",
        f"Needs: pip install toolstream-harness=={__version__}, and {said(spec)} importable (or runnable).",
        "Run: python this file. It replays the case below (request, the response read by read, the",
        "outcome the stream means) to the accumulator as `toolstream check` does, prints what it",
        "reported and what differs, and exits 1 while it fails the case, 0 once it passes.",
        f"Generated by: {said(command)}",
        '"""',
        "",
        "import json",
        "import pathlib",
        "import sys",
        "import tempfile",
        "",
        f"SPEC = {spec!r}",
        "# The case as a cassette (YAML): what the harness replays, byte for byte.",
        f"CASSETTE = {dumps(cassette)!r}",
        "",
        "",
        _ADAPTER_MAIN.strip(),
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class GatewayProgram:
    """How a gateway's script starts it: `program` beside the script's Python, its `arguments`
    (`{config}`: the config file written from `config`; `{upstream}`, there or in an argument: the
    loopback upstream's base URL; `{port}`: where it listens), the variables it needs, and what
    to install."""

    name: str  # what the docstring calls it (`litellm proxy 1.102.4`)
    requirement: str  # what `pip install` names
    program: str
    arguments: tuple[str, ...]
    environment: dict[str, str]
    config: str
    model: str  # the model of `config` the request asks for


def gateway_script(case: Case, gateway: GatewayProgram, *, source: str, target: str, command: str) -> str:
    """The standalone script reproducing what `gateway` makes of `case` served as its upstream:
    the upstream's stream inlined read by read and served from loopback, the gateway started on
    it, asked in `target` what `check --gateway` asks, its answer read the way a client of `target`
    reads it and compared with the case's outcome translated; exit 1 while they differ or the
    answer breaks `target`'s protocol, 0 once it keeps both."""
    judge = templates.GATEWAY_JUDGES.get(target)
    if judge is None:
        known = ", ".join(templates.GATEWAY_JUDGES)
        raise UsageError(f"repro --gateway: no script template reads {target} answers (known: {known})")
    path, body = asked_again(case.request.body if case.request else None, source, target, gateway.model)
    asking = requesting(target)
    root = urlsplit(asking.api_root or "").path.rstrip("/")
    upstream = urlsplit(base_urls("http://127.0.0.1", "0")[source]).path.removeprefix("/case/0")
    expected = translated_outcome(case.expected, source, target).to_dict()
    response = case.response
    data = {
        "STATUS": response.status,
        "CONTENT_TYPE": response.headers.get("content-type", "text/event-stream"),
        "UPSTREAM_ROOT": upstream,
        "PROGRAM": gateway.program,
        "ARGUMENTS": list(gateway.arguments),
        "ENVIRONMENT": gateway.environment,
        "CONFIG": gateway.config,
        "PATH": root + path,
        "HEADERS": asking.auth_headers("sk-repro"),
        "REQUEST": body,
        "EXPECTED": {
            "calls": [{"name": c["name"], "arguments": c["arguments"]} for c in expected["tool_calls"]],
            "server_calls": sorted({c["name"] for c in expected.get("server_calls", [])}),
            "state": expected["state"],
        },
    }
    said = python_text
    lines = [
        "#!/usr/bin/env python3",
        f'"""{said(case.id)} through {said(gateway.name)}, {said(source)} to {said(target)}: a standalone',
        "reproduction.",
        "",
        f"Needs only: pip install '{said(gateway.requirement)}'",
        f"Run: python this file, with the Python that has `{said(gateway.program)}` beside it. It serves",
        f"the recorded {said(source)} stream below as the gateway's upstream on loopback, starts the",
        f"gateway on it, asks it the same question in {said(target)} ({said(root + path)}), prints the",
        f"answer's events, and exits 1 while a client of {said(target)} reads wrong calls in it or the",
        "answer breaks the protocol, 0 once it keeps both.",
        f"Generated by: {said(command)}",
        '"""',
        "",
        "import http.server",
        "import json",
        "import os",
        "import socket",
        "import subprocess",
        "import sys",
        "import tempfile",
        "import threading",
        "import time",
        "import urllib.request",
        "from pathlib import Path",
        "",
        "# The upstream's stream, one bytes literal per network read, as recorded.",
        "READS = [",
        *(f"    {chunk.data!r}," for chunk in response.chunks),
        "]",
    ]
    for key, value in data.items():
        lines.append(f"{key} = {_literal(value)}")
    for part in (templates.GATEWAY_UPSTREAM, judge, templates.GATEWAY_MAIN):
        lines += ["", "", part.strip()]
    return "\n".join(lines) + "\n"


_ADAPTER_MAIN = """
def main():
    import harness

    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder, "case.yaml")
        path.write_text(CASSETTE, encoding="utf-8")
        report = harness.run_matrix(SPEC, harness.Selection(cassettes=(str(path),), scenarios=("original",)))
    result = report.results[0]
    print("What the stream means (the outcome a correct client reaches):")
    print(json.dumps(result.expected.to_dict(), indent=2, ensure_ascii=True))
    if result.actual is not None:
        print("What the accumulator reported:")
        print(json.dumps(result.actual.to_dict(), indent=2, ensure_ascii=True))
    if result.error:
        print(f"It raised: {result.error!a}")
    if result.failed:
        print(f"\\nBUG ({result.verdict}):")
        for line, severity in zip(result.diff, result.severities, strict=False):
            print(f"  {severity:<9} {line!a}")
        return 1
    print(f"\\nOK ({result.verdict}): the accumulator handles this stream.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
"""
