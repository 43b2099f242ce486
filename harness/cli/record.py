"""`toolstream record`: run a recipe against a live provider and save a corpus cassette."""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli import arguments, redaction
from harness.record import flow, providers, recipes


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="record a tool-call recipe against a live provider into a cassette",
        description=(
            "Send a recipe's request (tools and a prompt that elicit one tool-call shape, streaming on) "
            "to a provider, keep every network read, and save a redacted cassette with the reference "
            "outcome. Keys come from the provider's usual environment variables; with --base-url "
            "(a local server, a gateway) the key is sent when its variable is set, else none."
        ),
    )
    parser.add_argument(
        "provider",
        metavar="PROVIDER",
        help=f"one of {', '.join(providers.providers())}",
    )
    parser.add_argument(
        "--recipe",
        default="single",
        metavar="NAME",
        help=f"one of {', '.join(recipes.RECIPES)} (default: single)",
    )
    parser.add_argument("--model", metavar="M", help="model name (default: the provider's usual one)")
    parser.add_argument(
        "-o",
        "--output",
        type=arguments.output_file,
        metavar="PATH",
        help="cassette to write (default: cassettes/<dialect>/<provider>-<recipe>-<model>.yaml)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="API root to send to instead of the provider's (needed for openai-compatible)",
    )
    parser.add_argument(
        "--api-key-env", metavar="VAR", help="environment variable holding the API key (required when named)"
    )
    parser.add_argument("--mode", default="all", metavar="MODE", help="record mode (default: all)")
    parser.add_argument(
        "--timeout", type=arguments.seconds, default=120.0, metavar="S", help="HTTP timeout in seconds"
    )
    redaction.add_options(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    path = flow.record(
        args.provider,
        args.recipe,
        model=args.model,
        output=args.output,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        mode=args.mode,
        timeout=args.timeout,
        redact=redaction.from_args(args),
    )
    print(f"recorded {path}")
    return 0
