"""Gateways in the middle, servers at the source (docs/gateways.md).

- Translation mode: a gateway that turns one provider's API into another's, judged on each case
  served as its upstream (`run_gateway`; the hop itself, reusable: `hop.py`; the gateway's
  process: `process.py`; the verdict: `judging.py`).
- The producer probe: which catalogued stream shapes a running server produces (`probe.py`).
"""

from __future__ import annotations

from harness.gateway.hop import ask, serve_upstream, upstream_of
from harness.gateway.process import started
from harness.gateway.runner import run_gateway

__all__ = ["ask", "run_gateway", "serve_upstream", "started", "upstream_of"]
