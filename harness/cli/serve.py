"""`toolstream serve`: the selected cases behind a local server that speaks each provider's API.

    toolstream serve --dialect openai-chat --scenarios parallel-calls-share-index-0
    toolstream serve --dialect openai-chat --client 'python my_agent.py' -j 8
    toolstream serve --record --upstream https://api.openai.com --cassette-dir cassettes/recorded

Without `--client` it serves until interrupted; with it, it runs the program once per case (its
SDK's base URL pointing at the case) and judges each run by the follow-up request it sends.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from harness.accumulators.program import run_clients
from harness.cli import arguments
from harness.cli.check import add_selection_options, selection_of
from harness.errors import UsageError
from harness.matrix.selection import cases
from harness.mutate.case import Case
from harness.report.results import render_check, report_to_dict, write_json
from harness.serve import ReplayServer, base_urls
from harness.serve.upstream import Recorder

# What to set, per dialect, for its SDK to reach a case.
_VARIABLES = {
    "openai-chat": "OPENAI_BASE_URL",
    "openai-responses": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "gemini": "GOOGLE_GEMINI_BASE_URL",
    "bedrock-converse": "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "ollama": "OLLAMA_HOST",
    "cohere": "CO_API_URL",
    "openai-realtime": "OPENAI_BASE_URL",
}


def _variable(dialect: str) -> str:
    """What the banner names the URL by: the SDK's variable, or (an app's or agent's endpoint, as
    ai-sdk-ui and ag-ui are, which no SDK variable takes) `endpoint`."""
    return _VARIABLES.get(dialect, "endpoint")


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="serve cases over HTTP as each provider's API; judge a client program by its follow-up request",
        description=(
            "Serve the selected cases on 127.0.0.1 under /case/<case id>/, speaking each provider's API "
            "(streaming and not). With --client, run a program once per case with its SDK's base URL "
            "pointing at the case, and judge the follow-up request it sends (exit 1 when any case fails)."
        ),
    )
    add_selection_options(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=arguments.PORT, default=0, help="port to listen on (default: a free one)"
    )
    parser.add_argument("--pace", action="store_true", help="send each read at its recorded time")
    parser.add_argument(
        "--client",
        metavar="CMD",
        help="run this shell command once per case and judge it (see docs/serve.md)",
    )
    parser.add_argument(
        "--json", type=arguments.output_file, metavar="FILE", help="with --client: write the JSON report here"
    )
    parser.add_argument(
        "--max-failures",
        type=arguments.LIMIT,
        default=50,
        metavar="N",
        help="failures printed in full (default 50; 0: all)",
    )
    record = parser.add_argument_group("recording through the server")
    record.add_argument(
        "--record",
        action="store_true",
        help="forward every request to --upstream and save each exchange as a redacted cassette",
    )
    record.add_argument("--upstream", metavar="URL", help="with --record: the provider's root URL")
    record.add_argument(
        "--cassette-dir",
        default="cassettes/recorded",
        metavar="DIR",
        help="with --record: where the cassettes go, one per request (default cassettes/recorded)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    if args.record or args.upstream:
        return _record(args)
    selection = selection_of(args)
    selected = list(cases(selection))
    if not selected:
        raise UsageError("no cases selected")
    if args.client:
        if args.timeout <= 0:
            raise UsageError("--timeout: a client needs a timeout of more than 0 seconds")
        server = ReplayServer(selected, pace=args.pace, host=args.host, port=args.port)
        with server.running():
            jobs = args.jobs or 1  # the option is shared with `check`, where unset means "decide"
            report = run_clients(selected, args.client, jobs=jobs, timeout=args.timeout, server=server)
        if args.json:
            write_json(report_to_dict(report, selection), args.json)
        # With a report on stdout (`--json -`), this goes to stderr: the JSON stays JSON.
        print(
            render_check(report, selection=selection, max_failures=args.max_failures),
            file=arguments.terminal_report(args),
        )
        return 0 if report.ok else 1
    return asyncio.run(_serve(selected, args))


def _quiet_interrupt() -> None:
    """Ctrl-C (or SIGTERM) raises in whatever the loop runs, mid-answer too: a connection's task
    then holds the interrupt (or, open and cancelled at shutdown, a CancelledError its stream
    callback trips on), which asyncio would log with a traceback after `toolstream: interrupted`.
    The interrupt is the orderly exit (130/143), not an error: not logged."""
    loop = asyncio.get_running_loop()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # Terminated is a KeyboardInterrupt too.
        if not isinstance(context.get("exception"), (KeyboardInterrupt, asyncio.CancelledError)):
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)


async def _serve(cases: list[Case], args: argparse.Namespace) -> int:
    _quiet_interrupt()
    server = ReplayServer(cases, pace=args.pace, host=args.host, port=args.port)
    await server.start()
    print(_banner(server, cases), flush=True)
    try:
        await asyncio.Event().wait()  # until interrupted
    finally:
        await server.close()
    return 0


def _record(args: argparse.Namespace) -> int:
    if not (args.record and args.upstream):
        raise UsageError("--record and --upstream URL go together")
    if args.client:
        raise UsageError("--record: run your program yourself, its base URL pointing at the printed one")
    recorder = Recorder(args.upstream, args.cassette_dir)
    return asyncio.run(_serve_recording(recorder, args))


async def _serve_recording(recorder: Recorder, args: argparse.Namespace) -> int:
    _quiet_interrupt()
    server = ReplayServer((), host=args.host, port=args.port, recorder=recorder)
    await server.start()
    print(
        f"toolstream serve: recording {recorder.shown} through {server.url}"
        f" into {recorder.cassette_dir}/\n"
        f"  point the SDK's base URL at {server.url} plus the upstream's path"
        f" (e.g. OPENAI_BASE_URL={server.url}/v1)\n"
        "Ctrl-C stops it.",
        flush=True,
    )
    try:
        await asyncio.Event().wait()  # until interrupted
    finally:
        await server.close()
    return 0


def _banner(server: ReplayServer, cases: list[Case]) -> str:
    lines = [f"toolstream serve: {len(cases)} cases on {server.url}/ (index; /cases.json lists them)"]
    if len(cases) == 1:
        case = cases[0]
        lines.append(f"  {_variable(case.dialect)}={base_urls(server.url, case.id)[case.dialect]}")
        lines.append(f"  expected: {json.dumps(case.expected.to_dict()['tool_calls'])}")
    else:
        dialects = sorted({case.dialect for case in cases})
        urls = base_urls(server.url, "CASE")
        for dialect in dialects:
            template = urls[dialect].replace("CASE", "<url-quoted case id>")
            lines.append(f"  {dialect:<17} {_variable(dialect)}={template}")
    lines.append("Ctrl-C stops it.")
    return "\n".join(lines)
