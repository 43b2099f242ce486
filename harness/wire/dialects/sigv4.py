"""AWS Signature Version 4 for one request (hashlib and hmac only): how Bedrock requests are signed."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from collections.abc import Mapping
from urllib.parse import quote, unquote, urlsplit

__all__ = ["sign_sigv4"]


def sign_sigv4(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    access_key: str,
    secret_key: str,
    region: str,
    service: str,
    session_token: str | None = None,
    now: dt.datetime | None = None,
) -> dict[str, str]:
    """AWS Signature Version 4 for one request: the headers to add (`Authorization`, `X-Amz-Date`,
    and `X-Amz-Security-Token` with temporary credentials). Signs `host` and every given header."""
    now = now or dt.datetime.now(dt.UTC)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    added = {"X-Amz-Date": amz_date}
    if session_token:
        added["X-Amz-Security-Token"] = session_token
    signed = {k.lower(): " ".join(str(v).split()) for k, v in {**headers, **added}.items()}
    signed["host"] = host
    names = sorted(signed)
    canonical = "\n".join(
        [
            method.upper(),
            # Non-S3 services sign the already-encoded path encoded once more.
            quote(parts.path or "/", safe="/~"),
            _canonical_query(parts.query),
            "".join(f"{name}:{signed[name]}\n" for name in names),
            ";".join(names),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret_key).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    added["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return added


def _canonical_query(query: str) -> str:
    pairs = []
    for item in query.split("&") if query else []:
        name, _, value = item.partition("=")
        pairs.append((quote(unquote(name), safe="-_.~"), quote(unquote(value), safe="-_.~")))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))
