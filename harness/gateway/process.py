"""A gateway under test: a URL already listening, or a command the harness starts, contains and
stops. A command is a template: `{upstream}` becomes the base URL of the upstream dialect's SDK
at the replay server (`.../v1` for OpenAI), `{key}` a fake API key, `{port}` the loopback port
the gateway must listen on. The command also gets the variables provider SDKs read (pointing at
the upstream) and runs under the same containment as a client program: when the run ends, it and
everything it started end.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import IO

from harness.errors import UsageError
from harness.processes import subreaper

__all__ = ["FAKE_KEY", "PLACEHOLDERS", "GatewayFailed", "Upstream", "free_port", "started"]

FAKE_KEY = "sk-toolstream-gateway"
PLACEHOLDERS = ("{upstream}", "{key}", "{port}")
START_TIMEOUT = 120.0  # seconds a gateway may take to listen (LiteLLM's proxy takes several)
_TAIL = 16 * 1024  # bytes of a gateway's output kept to say why it did not start


class GatewayFailed(UsageError):
    """The gateway did not start, or died: its command and the last lines it wrote."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where a gateway's upstream is: the base URL its provider's SDK takes, and the variables."""

    base_url: str
    environment: Mapping[str, str]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def fill(command: str, upstream: Upstream, port: int) -> str:
    """The command with its placeholders filled (nothing else in it is touched: JSON braces stay)."""
    for placeholder, value in zip(PLACEHOLDERS, (upstream.base_url, FAKE_KEY, str(port)), strict=True):
        command = command.replace(placeholder, value)
    return command


@contextlib.contextmanager
def started(spec: str, upstream: Upstream, *, start_timeout: float = START_TIMEOUT) -> Iterator[str]:
    """The gateway's base URL while the block runs: `spec` itself when it is a URL, else the
    command started (contained) and listening on its port; stopped, with all it started, after."""
    if spec.startswith(("http://", "https://")):
        yield spec.rstrip("/")
        return
    if not spec.strip():
        raise UsageError("--gateway: needs a URL or a command")
    port = free_port()
    command = fill(spec, upstream, port)
    env = {**os.environ, **upstream.environment, "TOOLSTREAM_GATEWAY_PORT": str(port)}
    wrapped = subreaper.CONTAINED
    process = subprocess.Popen(
        subreaper.contained(["/bin/sh", "-c", command]) if wrapped else command,
        shell=not wrapped,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    tail = _Tail()
    reader = tail.follow(process.stdout)
    try:
        _wait_listening(process, port, start_timeout, spec, tail)
        yield f"http://127.0.0.1:{port}"
    finally:
        subreaper.stop(process, wrapped=wrapped, grace=5.0)
        reader.join(2.0)
        if process.stdout is not None:
            process.stdout.close()


def _wait_listening(
    process: subprocess.Popen[bytes], port: int, timeout: float, spec: str, tail: _Tail
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        code = process.poll()
        if code is not None:
            raise GatewayFailed(
                f"--gateway {spec!r} exited {code} before listening on port {port}{tail.said()}"
            )
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        if time.monotonic() >= deadline:
            raise GatewayFailed(
                f"--gateway {spec!r} did not listen on port {port} within {timeout:g} s{tail.said()}"
            )
        time.sleep(0.05)


class _Tail:
    """The last bytes a process wrote, read on a thread of its own."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.lock = threading.Lock()

    def follow(self, pipe: IO[bytes] | None) -> threading.Thread:
        def read() -> None:
            assert pipe is not None
            with contextlib.suppress(OSError, ValueError):
                while chunk := os.read(pipe.fileno(), 1 << 16):
                    with self.lock:
                        self.data += chunk
                        del self.data[:-_TAIL]

        thread = threading.Thread(target=read, name="toolstream-gateway-output", daemon=True)
        thread.start()
        return thread

    def said(self) -> str:
        with self.lock:
            lines = self.data.decode("utf-8", "replace").strip().splitlines()
        last = " | ".join(line.strip() for line in lines[-3:])[-400:]
        last = "".join(ch if ch.isprintable() else "?" for ch in last)  # a stranger's bytes, on a terminal
        return f"; it said: {last}" if last else ""
