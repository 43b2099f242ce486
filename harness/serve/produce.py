"""A producer in the middle: a program that reads a provider's stream from the replay server and
answers with another stream (the AI SDK's `toUIMessageStreamResponse()`, an AG-UI bridge, a
gateway that translates one provider's API into another's). `produce` serves one case, runs the
program with the provider environment pointing at it, and keeps what the program answered read by
read, as a recorded response: how the frontend cassettes are made from the provider ones.

The program speaks JSON lines on its standard output, in this order:

    {"request": {"method": "POST", "url": "...", "headers": {...}, "body": {...}}}
    {"response": {"status": 200, "headers": {...}}}
    {"read": "data: {...}\\n\\n"}          (one line per read of its response body, as it came)
    {"end": true}                         (or {"error": "..."} when its body broke off)

`request` is what a client would have sent the producer (a `useChat` POST, a `RunAgentInput`).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cassettes.model import Chunk, Request, Response
from harness.errors import UsageError
from harness.mutate.case import Case
from harness.serve.routes import client_environment
from harness.serve.server import ReplayServer

__all__ = ["Produced", "produce", "read_produced"]

_MAX_OUTPUT = 16 * 1024 * 1024  # what a producer may print for one case


@dataclass(frozen=True, slots=True)
class Produced:
    """What a producer was asked and what it answered, read by read."""

    request: Request
    response: Response


def produce(
    case: Case,
    command: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> Produced:
    """Serve `case` on a replay server of its own, run `command` against it (the provider
    variables of `client_environment` set, plus `env`) and read its answer."""
    server = ReplayServer([case])
    with server.running():
        environment = {**os.environ, **client_environment(server.url, case.id), **(env or {})}
        try:
            done = subprocess.run(
                list(command), cwd=cwd, env=environment, capture_output=True, timeout=timeout,
                stdin=subprocess.DEVNULL, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise UsageError(
                f"producer {command[0]}: no answer within {timeout:.0f} s for {case.id}"
            ) from None
        except OSError as exc:
            raise UsageError(f"producer {command[0]}: cannot run it: {exc.strerror}") from None
    if done.returncode != 0:
        last = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise UsageError(f"producer {command[0]} exited {done.returncode} on {case.id}: {last[0]}")
    if len(done.stdout) > _MAX_OUTPUT:
        raise UsageError(f"producer {command[0]}: more than {_MAX_OUTPUT} bytes of output for {case.id}")
    return read_produced(done.stdout.decode(), where=f"producer {command[0]}")


def read_produced(text: str, *, where: str = "producer") -> Produced:
    """A producer's JSON lines read into its request and response (one-line `UsageError`s)."""
    request: Request | None = None
    response: Response | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item: Any = json.loads(line)
        except ValueError:
            raise UsageError(f"{where}: line {number} is not JSON") from None
        if not isinstance(item, dict) or len(item) != 1:
            raise UsageError(f"{where}: line {number}: must be an object with one key")
        key, value = next(iter(item.items()))
        if key == "request" and isinstance(value, dict):
            request = Request(
                str(value.get("method", "POST")), str(value.get("url", "")),
                {str(k): str(v) for k, v in (value.get("headers") or {}).items()}, value.get("body"),
            )  # fmt: skip
        elif key == "response" and isinstance(value, dict) and isinstance(value.get("status"), int):
            headers = {str(k).lower(): str(v) for k, v in (value.get("headers") or {}).items()}
            response = Response(value["status"], headers)
        elif key == "read" and isinstance(value, str) and response is not None:
            response.chunks.append(Chunk(value.encode()))
        elif key == "end" and response is not None:
            break
        elif key == "error" and response is not None:
            response.complete, response.error = False, str(value)
            break
        else:
            raise UsageError(
                f"{where}: line {number}: unexpected {key!r} (request, response, read, end, error)"
            )
    if request is None or response is None:
        raise UsageError(f"{where}: its output names no request or no response")
    return Produced(request, response)
