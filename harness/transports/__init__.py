"""Transports for httpx and httpx2 clients (sync and async) that record and replay cassettes.

    client = httpx.Client(transport=RecordingTransport(path="cassettes/chat.yaml", mode="once"))
    client = httpx2.AsyncClient(transport=ReplayTransport("cassettes/chat.yaml", speed=1.0))

Neither library is imported until a request of it arrives.
"""

from __future__ import annotations

from ..modes import RecordMode
from ..redaction import Redaction
from .recording import RecordingTransport
from .replay import ReplayTransport

__all__ = ["RecordMode", "RecordingTransport", "Redaction", "ReplayTransport"]
