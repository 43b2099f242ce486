"""What changes on every recording without the stream changing: left out so re-records diff clean.

- Headers (`VOLATILE_HEADERS`, and names starting with `VOLATILE_PREFIXES`): dates, request and
  trace ids, rate-limit counters, server timings, SDK telemetry (`x-stainless-*`), the body length
  and the `host` header (it carries a loopback server's random port).
- A loopback URL's port (`127.0.0.1`, `localhost`, `::1`): a local test server picks a new one
  every run, so it is written without one, and matching takes a port-less loopback URL to match
  any port (see `harness.transports.matching`).
- Read timing (`offset_ms`) is dropped by the recorder unless asked for (`timing=True`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "LOOPBACK_HOSTS",
    "VOLATILE_HEADERS",
    "VOLATILE_PREFIXES",
    "is_volatile",
    "stable_headers",
    "stable_url",
]

VOLATILE_HEADERS: Final = (
    "host",
    "content-length",
    "date",
    "age",
    "etag",
    "expires",
    "last-modified",
    "x-request-id",
    "request-id",
    "openai-request-id",
    "x-amzn-requestid",
    "x-amz-request-id",
    "x-amzn-trace-id",
    "apim-request-id",
    "x-cloud-trace-context",
    "traceparent",
    "cf-ray",
    "cf-cache-status",
    "openai-processing-ms",
    "x-envoy-upstream-service-time",
    "server-timing",
    "retry-after",
    "via",
    "x-served-by",
    "x-timer",
)
VOLATILE_PREFIXES: Final = ("x-stainless-", "x-ratelimit-", "anthropic-ratelimit-")
LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def is_volatile(name: str) -> bool:
    """Whether a header of this name changes from one recording to the next."""
    lowered = name.lower()
    return lowered in VOLATILE_HEADERS or lowered.startswith(VOLATILE_PREFIXES)


def stable_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """`headers` without the volatile ones."""
    return {key: value for key, value in headers.items() if not is_volatile(key)}


def stable_url(url: str) -> str:
    """`url` without its port when the host is loopback (a test server's port is random)."""
    try:
        parts = urlsplit(url)
        if (parts.hostname or "").lower() not in LOOPBACK_HOSTS or parts.port is None:
            return url
    except ValueError:  # `http://[::1/x`, `http://h:80x/`: not ours to judge here
        return url
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{host}" if userinfo else host
    return urlunsplit(parts._replace(netloc=netloc))
