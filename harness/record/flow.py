"""The `record` flow: send a recipe's request through `RecordingTransport` and store a
corpus-ready cassette (source, dialect, and each interaction's expected outcome)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path

from harness.errors import UsageError
from harness.record.providers import build_request, provider
from harness.transports.redaction import Redaction

__all__ = ["default_output", "record"]


def default_output(provider_name: str, recipe_name: str, model: str, root: str | Path = "cassettes") -> Path:
    """`cassettes/<dialect>/<provider>-<recipe>-<model>.yaml`, the model made file-name safe."""
    spec = provider(provider_name)
    safe_model = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"
    return Path(root) / spec.dialect / f"{spec.name}-{recipe_name}-{safe_model}.yaml"


def record(
    provider_name: str,
    recipe_name: str = "single",
    *,
    model: str | None = None,
    output: str | Path | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    mode: str = "all",
    timeout: float = 120.0,
    env: Mapping[str, str] | None = None,
    redact: Redaction | None = None,
) -> Path:
    """Run a recipe against a live provider (or any `base_url`) and save a corpus cassette.

    The request goes through `RecordingTransport` over httpx's real network transport; the
    stream is read to its end, then the saved cassette gets its source, dialect and each
    interaction's `expected` outcome from the reference accumulator. Secrets are redacted by
    `redact` (default `Redaction.DEFAULT`, docs/redaction.md). Returns the cassette path.
    """
    import httpx

    from harness.cassettes import format as cassettes
    from harness.transports.recording import RecordingTransport
    from harness.wire import dialects

    spec = provider(provider_name)
    request = build_request(
        provider_name, recipe_name, model=model, base_url=base_url, api_key_env=api_key_env, env=env
    )
    model = model or spec.default_model or ""
    path = Path(output) if output is not None else default_output(provider_name, recipe_name, model)
    before = _stamp(path)
    transport = RecordingTransport(httpx.HTTPTransport(), path=path, mode=mode, redact=redact)
    try:
        with (
            httpx.Client(transport=transport, timeout=timeout) as client,
            client.stream(
                request.method, request.url, headers=request.headers, content=request.body
            ) as response,
        ):
            for _ in response.iter_raw():
                pass  # every read lands in the cassette; nothing to do with it here
            status = response.status_code
    except httpx.TransportError as exc:
        raise UsageError(
            f"{spec.name} at {request.url}: {type(exc).__name__}: {exc or 'no detail'}"
        ) from None
    if _stamp(path) == before:
        raise UsageError(f"{path}: nothing was recorded (record mode {mode!r} replayed the request)")
    saved = cassettes.load(path)
    if status >= 400:
        # Keep the corpus clean: the failed exchange is reported, not stored.
        failed = saved.interactions.pop()
        snippet = " ".join(failed.response.body.decode("utf-8", "replace").split())[:200]
        if saved.interactions:
            cassettes.save(saved, path)
        else:
            path.unlink()
        hint = ""
        if status in (401, 403) and not _sends_credentials(request.headers):
            names = api_key_env or " or ".join(_key_variables(spec.dialect)) or "a key variable"
            hint = f" (no key was sent: set {names}, or name yours with --api-key-env VAR)"
        raise UsageError(f"{spec.name} answered HTTP {status}: {snippet or '(empty body)'}{hint}")
    saved.name = path.stem
    saved.dialect = spec.dialect
    saved.source = cassettes.Source(
        "recorded",
        f"toolstream record {spec.name} --recipe {recipe_name} --model {model} on {dt.date.today():%Y-%m-%d}",
    )
    for interaction in saved.interactions:
        interaction.expected = dialects.stored_outcome(interaction.response, spec.dialect)
    transport.scrub(saved)  # a secret echoed in pieces can reappear whole in `expected`
    cassettes.save(saved, path)
    return path


def _sends_credentials(headers: Mapping[str, str]) -> bool:
    """Whether a prepared request carries any credential (it has only its two own headers else)."""
    return bool({name.lower() for name in headers} - {"content-type", "accept"})


def _key_variables(dialect: str) -> tuple[str, ...]:
    from harness.wire import dialects
    from harness.wire.dialects.requesting import Requesting

    asking = dialects.get(dialect)
    return asking.key_env if isinstance(asking, Requesting) else ()


def _stamp(path: Path) -> tuple[int, int] | None:
    """What changes when a file is (re)written: None when there is no file."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_mtime_ns, stat.st_ino
