"""Transports for httpx and httpx2 clients (sync and async) that record and replay cassettes.

    client = httpx.Client(transport=RecordingTransport(path="cassettes/chat.yaml", mode="once"))
    client = httpx2.AsyncClient(transport=ReplayTransport("cassettes/chat.yaml", speed=1.0))

Neither library is imported until a request of it arrives.
"""

from __future__ import annotations

from harness.record.redaction import Redaction
from harness.transports.modes import RecordMode
from harness.transports.recording import RecordingTransport
from harness.transports.replay import ReplayTransport

__all__ = ["RecordMode", "RecordingTransport", "Redaction", "ReplayTransport"]
