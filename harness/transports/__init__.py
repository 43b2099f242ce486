"""Transports for httpx and httpx2 clients (sync and async) that record and replay cassettes.

    client = httpx.Client(transport=RecordingTransport(path="cassettes/chat.yaml", mode="once"))
    client = httpx2.AsyncClient(transport=ReplayTransport("cassettes/chat.yaml", speed=1.0))

Neither library is imported until a request of it arrives. The public names are `harness`'s
(`harness.RecordingTransport`, ...); this package imports nothing itself, so the pytest plugin can
read `modes` while every session starts without loading the transports.
"""
