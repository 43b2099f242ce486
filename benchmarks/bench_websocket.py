"""Replaying a WebSocket session: `python benchmarks/bench_websocket.py [--quick | --smoke]` from the
repo root. Sessions per second of `toolstream serve` replaying a Realtime session, against
`@copilotkit/aimock` serving the same session, both measured in one run.

The peer is aimock (pinned in `benchmarks/aimock/package.json`; this benchmark installs it with
`npm ci --prefix benchmarks/aimock` when its `node_modules` is missing), serving a Realtime tool
call fixture (`benchmarks/aimock/serve.mjs`: a user message answered with two function calls).
The same payload on our side: that session recorded from aimock through `toolstream serve
--record` (a cassette of aimock's own frames), replayed by `toolstream serve`. Each server is
its own process, started before the clock starts. One driver in this process (asyncio, raw
sockets, the harness's RFC 6455 codec) runs the sessions the same way against both: connect,
send the user message and `response.create`, read every message until `response.done`, close.
Several sessions at once (`CONCURRENCY`), a fixed count per round, best of N rounds, the two
servers taking turns. Figure: sessions per second, wall clock.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figure, Scale, parse_scale, print_figures, speedup  # noqa: E402

NAME = "websocket"
AIMOCK = ROOT / "benchmarks" / "aimock"
RUNS: dict[Scale, int] = {"full": 5, "quick": 3, "smoke": 1}
SESSIONS: dict[Scale, int] = {"full": 400, "quick": 150, "smoke": 20}
CONCURRENCY = 8
ASKED = "Weather in Paris?"  # what aimock's fixture matches (benchmarks/aimock/serve.mjs)


@dataclass(frozen=True)
class Surface:
    """A WebSocket API: where a session connects, what the client sends, the last server event."""

    name: str
    path: str
    sends: tuple[dict[str, Any], ...]
    last: str
    case_path: str  # below `toolstream serve`'s base URL for the case


SURFACES = (
    Surface(
        "Realtime",
        "/v1/realtime?model=gpt-realtime",
        (
            {
                "type": "conversation.item.create",
                "item": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": ASKED}],
                },
            },
            {"type": "response.create"},
        ),
        "response.done",
        "/realtime?model=gpt-realtime",
    ),
    Surface(
        "Responses API",
        "/v1/responses",
        ({"type": "response.create", "model": "gpt-5.2", "input": ASKED},),
        "response.completed",
        "/responses",
    ),
)


def installed() -> bool:
    return (AIMOCK / "node_modules" / "@copilotkit" / "aimock" / "package.json").is_file()


def install() -> None:
    """The peer's own setup: `npm ci` of the pinned aimock beside its server script."""
    if installed():
        return
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise SystemExit("bench_websocket: node and npm are needed to run @copilotkit/aimock")
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--prefix", str(AIMOCK)], check=True, timeout=600)


def aimock_version() -> str:
    manifest = AIMOCK / "node_modules" / "@copilotkit" / "aimock" / "package.json"
    return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])


@contextlib.contextmanager
def started(argv: list[str], pattern: str, cwd: Path = ROOT) -> Iterator[str]:
    """A server process; the first line of its stdout matching `pattern` (its URL) while it runs."""
    process = subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 60
        found = None
        while found is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                raise SystemExit(f"bench_websocket: {argv[0]} exited before printing its URL")
            found = re.search(pattern, line)
        if found is None:
            raise SystemExit(f"bench_websocket: {argv[0]} printed no URL within a minute")
        yield found.group(1)
    finally:
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def session(url: str, surface: Surface) -> int:
    """One session: the messages read until the surface's last event (then closed)."""
    from harness.wire.codecs.websocket import CLOSE, TEXT, WebSocketDecoder, frame

    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    key = base64.b64encode(os.urandom(16)).decode()
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    writer.write(
        f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0]
    if b" 101 " not in status:
        raise RuntimeError(f"{url}: {status!r}")
    mask = os.urandom(4)
    for message in surface.sends:
        writer.write(frame(TEXT, json.dumps(message).encode(), mask=mask))
    decoder, messages, done = WebSocketDecoder(), 0, False
    decoder.feed(head.partition(b"\r\n\r\n")[2])
    while not done:
        data = await reader.read(65536)
        if not data:
            raise RuntimeError(f"{url}: closed before {surface.last}")
        for event in decoder.feed(data):
            if event.name is None and not event.is_comment:
                messages += 1
                done = done or json.loads(event.data).get("type") == surface.last
    writer.write(frame(CLOSE, b"\x03\xe8", mask=mask))
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()
    return messages


async def sessions(url: str, surface: Surface, count: int) -> list[int]:
    """`count` sessions, `CONCURRENCY` at a time: each one's message count."""
    left = iter(range(count))
    out: list[int] = []

    async def worker() -> None:
        for _ in left:
            out.append(await session(url, surface))

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return out


def record_from(aimock: str, surface: Surface, folder: Path) -> Path:
    """aimock's session recorded through `toolstream serve --record`: the cassette we replay."""
    from harness.serve import ReplayServer
    from harness.serve.upstream import Recorder

    recorder = Recorder(aimock, folder)
    with ReplayServer((), recorder=recorder).running() as through:
        asyncio.run(session(through.url.replace("http://", "ws://") + surface.path, surface))
        (path,) = recorder.wait(1, 30)
    return path


def measure(scale: Scale) -> list[Figure]:
    install()
    count = SESSIONS[scale]
    figures = []
    with tempfile.TemporaryDirectory(prefix="bench-websocket-") as scratch:
        node = ["node", str(AIMOCK / "serve.mjs")]
        with started(node, r"(http://\S+)", cwd=AIMOCK) as aimock:
            for n, surface in enumerate(SURFACES):
                cassette = record_from(aimock, surface, Path(scratch) / str(n))
                figures.append(_compare(surface, aimock, cassette, count, RUNS[scale]))
    return figures


def _compare(surface: Surface, aimock: str, cassette: Path, count: int, runs: int) -> Figure:
    serve = [sys.executable, "-m", "harness.cli", "serve", "--cassettes", str(cassette)]
    serve += ["--scenarios", "original", "--port", "0"]
    best = {"ours": 0.0, "aimock": 0.0}
    with started(serve, r"OPENAI_BASE_URL=(http://\S+/v1)") as ours:
        urls = {
            "ours": ours.replace("http://", "ws://") + surface.case_path,
            "aimock": aimock.replace("http://", "ws://") + surface.path,
        }
        # Untimed: the first connections; and both must send the same session.
        heard = {side: asyncio.run(sessions(url, surface, CONCURRENCY)) for side, url in urls.items()}
        if heard["ours"] != heard["aimock"]:
            raise SystemExit(f"bench_websocket: the two {surface.name} sessions differ: {heard}")
        for _ in range(runs):
            for side, url in urls.items():
                start = time.perf_counter()
                asyncio.run(sessions(url, surface, count))
                best[side] = max(best[side], count / (time.perf_counter() - start))
    what = (
        f"replaying a {surface.name} WebSocket session ({heard['ours'][0]} messages, two function calls; "
        f"{count} sessions, {CONCURRENCY} at once), wall"
    )
    peer = f"`@copilotkit/aimock` {aimock_version()}, the same session"
    return speedup(NAME, what, best["ours"], best["aimock"], peer, "sessions/s", goal=1.0)


def main() -> None:
    scale = parse_scale(__doc__ or "")
    print_figures(measure(scale), scale)


if __name__ == "__main__":
    main()
