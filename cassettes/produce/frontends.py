"""Produce the frontend cassettes: `python cassettes/produce/frontends.py` from the repo root.

Each provider cassette below is served unmutated by the replay server and read by a real
producer, whose answer is kept read by read (`harness.serve.produce`): the AI SDK's
`streamText(...).toUIMessageStreamResponse()` (examples/producers/ai-sdk-ui, its package-lock
pins `ai`) makes `cassettes/ai-sdk-ui/`, Pydantic AI's AG-UI bridge with the `ag-ui-protocol`
encoder (examples/producers/ag-ui/requirements.txt) makes `cassettes/ag-ui/`. Needs
`npm ci --prefix examples/producers/ai-sdk-ui` and a virtualenv with that requirements file
(AG_UI_PYTHON names its python; default `.venv-ag-ui/bin/python`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.cassettes import format as cassettes  # noqa: E402
from harness.cassettes.model import Cassette, Interaction, Source  # noqa: E402
from harness.matrix.selection import build_case  # noqa: E402
from harness.serve.produce import produce  # noqa: E402
from harness.wire import dialects  # noqa: E402

SOURCES = (
    "openai-chat/single-call",
    "openai-chat/parallel-2",
    "openai-chat/text-then-call",
    "openai-chat/no-arguments",
    "anthropic/single-call",
    "anthropic/parallel-calls",
    "anthropic/text-before-call",
)
PRODUCERS = ROOT / "examples" / "producers"


def _lock_version(package: str) -> str:
    lock = json.loads((PRODUCERS / "ai-sdk-ui" / "package-lock.json").read_text())
    return str(lock["packages"][f"node_modules/{package}"]["version"])


def _producers() -> dict[str, tuple[list[str], str]]:
    python = os.environ.get("AG_UI_PYTHON", str(ROOT / ".venv-ag-ui" / "bin" / "python"))
    ai = (
        f"ai {_lock_version('ai')} (@ai-sdk/openai {_lock_version('@ai-sdk/openai')}, "
        f"@ai-sdk/anthropic {_lock_version('@ai-sdk/anthropic')})"
    )
    return {
        "ai-sdk-ui": (
            ["node", str(PRODUCERS / "ai-sdk-ui" / "produce.mjs")],
            f"streamText(...).toUIMessageStreamResponse() of {ai}, examples/producers/ai-sdk-ui",
        ),
        "ag-ui": (
            [python, str(PRODUCERS / "ag-ui" / "produce.py")],
            "AGUIAdapter of pydantic-ai-slim 2.68.0 with the ag-ui-protocol 1.0.0 encoder, "
            "examples/producers/ag-ui",
        ),
    }


def _prompt(body: dict[str, object]) -> str:
    for message in body.get("messages") or []:  # type: ignore[union-attr]
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "Go on."


def _tools(body: dict[str, object]) -> list[str]:
    names = []
    for entry in body.get("tools") or []:  # type: ignore[union-attr]
        if isinstance(entry, dict):
            name = entry.get("name") or (entry.get("function") or {}).get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def main() -> None:
    for dialect, (command, producer) in _producers().items():
        out = ROOT / "cassettes" / dialect
        for source in SOURCES:
            case = build_case(f"{source}::original::s0")
            body = case.request.body
            provider = "anthropic" if case.dialect == "anthropic" else "openai"
            env = {
                "TOOLSTREAM_PROVIDER": provider,
                "TOOLSTREAM_MODEL": str(body.get("model", "model")),
                "TOOLSTREAM_TOOLS": json.dumps(_tools(body)),
                "TOOLSTREAM_PROMPT": _prompt(body),
            }
            made = produce(case, command, cwd=ROOT, env=env)
            interaction = Interaction(made.request, made.response)
            interaction.expected = dialects.reference_outcome(made.response, dialect)
            name = f"from-{source.replace('/', '-')}"
            provenance = (
                f"recorded from {producer}, reading the bundled cassette {source} served by toolstream serve"
            )
            cassette = Cassette(name=name, dialect=dialect, source=Source("recorded", provenance),
                                interactions=[interaction])  # fmt: skip
            path = cassettes.save(cassette, out / f"{name}.yaml")
            print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
