"""The producer probe: the recipes sent to a running server (an inference server, a gateway), each
answer recorded as a cassette (redacted, saved atomically: the `record` flow), and each stream
read for the catalogue classes it shows (`Dialect.shapes`, one detector per class) and the rules
of its protocol it breaks (`Dialect.invariants`, `request_rules`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.cassettes.format import load
from harness.errors import CodecError, DialectError, UsageError
from harness.record.flow import record
from harness.record.providers import providers
from harness.record.recipes import PROBE_RECIPES, recipe
from harness.wire import dialects
from harness.wire.codecs import decode_all
from harness.wire.dialects import Violation

__all__ = ["Probed", "probe", "provider_for"]


@dataclass(frozen=True)
class Probed:
    """One recipe's answer: where it was saved, the classes it shows (code -> first event), the
    protocol rules it breaks, and whether it ended whole."""

    recipe: str
    cassette: Path
    shapes: dict[str, int] = field(default_factory=dict)
    violations: tuple[Violation, ...] = ()
    complete: bool = True
    error: str | None = None


def provider_for(dialect: str) -> str:
    """The `record` provider that asks a server of the user's in `dialect` (its base URL given)."""
    compatible = [p.name for p in providers().values() if p.dialect == dialect and not p.own_endpoint]
    own = [p.name for p in providers().values() if p.dialect == dialect]
    if not own:
        raise UsageError(f"--dialect {dialect}: no provider speaks it (known: {', '.join(dialects.names())})")
    return (compatible or own)[0]


def probe(
    base_url: str,
    dialect: str,
    *,
    model: str,
    out: Path,
    recipes: Sequence[str] = PROBE_RECIPES,
    timeout: float = 120.0,
) -> list[Probed]:
    """Each recipe asked of the server at `base_url`, recorded into `out/<recipe>.yaml` and read."""
    name = provider_for(dialect)
    for asked in recipes:
        recipe(asked)  # an unknown recipe is refused before anything is sent
    d = dialects.get(dialect)
    found = []
    for asked in recipes:
        path = out / f"{asked}.yaml"
        path.unlink(missing_ok=True)  # a probe records afresh
        record(name, asked, model=model, output=path, base_url=base_url, timeout=timeout)
        interaction = load(path).interactions[-1]
        response = interaction.response
        try:
            events = dialects.parse_all(d, decode_all(d.codec(), (c.data for c in response.chunks)))
        except (CodecError, DialectError) as exc:
            found.append(Probed(asked, path, complete=response.complete, error=f"undecodable: {exc}"))
            continue
        violations = (*d.invariants(events), *d.request_rules(interaction.request, events))
        shapes = d.shapes(events) if response.complete else {}
        found.append(Probed(asked, path, shapes, tuple(violations), response.complete, response.error))
    return found
