"""The card's gateways: a real gateway judged as a translator (`check --gateway`'s judge,
`harness.gateway.runner.GatewayRun`), one row per hop (library = the gateway and its hop, version
= the release installed in its side environment, adapter = `gateway:NAME`).

A gateway runs from the checkout (its side environment at the checkout's root, built by `.ci/run`,
and its config in `examples/gateways/`); without them its row names the command that installs it.
Each row's cases are the selected ones of its upstream dialect, asked of the gateway in the
downstream one.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness import bounded
from harness.bounded.yaml import plain_data
from harness.card import environments
from harness.card.environments import EnvironmentProblem
from harness.card.verdicts import files_digest
from harness.errors import HarnessError, UsageError
from harness.search.repro import GatewayProgram

__all__ = ["GATEWAYS", "Gateway", "command", "contents", "installed_version", "standalone"]

MAX_CONFIG = 1024 * 1024  # a gateway's config file


@dataclass(frozen=True)
class Gateway:
    """A gateway's hop as the card grades it."""

    name: str  # on the command line (`--libraries`) and in its report's file name
    product: str  # what the row calls the gateway (`litellm proxy`)
    package: str  # the distribution whose installed version is the row's version
    install: str  # what `pip install` names for it, without the version (`litellm[proxy]`)
    source: str  # the upstream dialect: its cases are served to the gateway
    target: str  # the dialect the gateway is asked in
    model: str  # the model of the gateway's config that reaches the upstream
    venv: str  # the side environment at the checkout's root it runs from
    extra: str  # the extra of this project that pins it (`pip install '.[EXTRA]'`)
    config: str  # its config, relative to the checkout
    executable: str  # what starts it, in the side environment's bin/
    arguments: str  # what follows: `{config}` the config, `{port}` the port it listens on
    environment: tuple[tuple[str, str], ...] = ()  # variables it is started with

    @property
    def library(self) -> str:
        """The row's library: the gateway and its hop (one row per hop and release)."""
        return f"{self.product}, {self.source} to {self.target}"

    @property
    def adapter(self) -> str:
        return f"gateway:{self.name}"


def _litellm(name: str, source: str, target: str, model: str) -> Gateway:
    return Gateway(
        name, "litellm proxy", "litellm", "litellm[proxy]", source, target, model,
        venv=".venv-litellm-proxy", extra="litellm-proxy", config="examples/gateways/litellm-proxy.yaml",
        executable="litellm", arguments="--config {config} --host 127.0.0.1 --port {port}",
        environment=(("LITELLM_LOCAL_MODEL_COST_MAP", "True"),),  # offline: no cost map fetched
    )  # fmt: skip


GATEWAYS: dict[str, Gateway] = {
    g.name: g
    for g in (
        # LiteLLM's proxy at its pinned release (pyproject's `litellm-proxy` extra), in front of
        # each upstream through examples/gateways/litellm-proxy.yaml (docs/gateways.md).
        _litellm("litellm-proxy-chat-to-messages", "openai-chat", "anthropic", "chat-upstream-via-chat"),
        _litellm("litellm-proxy-messages-to-chat", "anthropic", "openai-chat", "anthropic-upstream"),
        _litellm("litellm-proxy-responses-to-chat", "openai-responses", "openai-chat", "responses-upstream"),
    )
}


def _checkout() -> Path:
    root = environments.source_root()
    if root is None:
        raise EnvironmentProblem("not in a checkout of toolstream-harness (its side environment lives there)")
    return root


def _install(gateway: Gateway) -> str:
    return f"python3 -m venv {gateway.venv} && {gateway.venv}/bin/pip install '.[{gateway.extra}]'"


def installed_version(gateway: Gateway) -> str:
    """The release of the gateway's package in its side environment; a problem naming the
    command that installs it when there is none."""
    python = _checkout() / gateway.venv / "bin" / "python"
    found = environments.installed_version(str(python), gateway.package) if python.exists() else None
    if found is None:
        raise EnvironmentProblem(f"not installed (run `{_install(gateway)}`)")
    return found


def command(gateway: Gateway) -> str:
    """The `--gateway` command template that starts it (`{port}` left for the harness to fill)."""
    root = _checkout()
    config = root / gateway.config
    if not config.is_file():
        raise EnvironmentProblem(f"{gateway.config}: missing from the checkout")
    program = root / gateway.venv / "bin" / gateway.executable
    arguments = gateway.arguments.replace("{config}", shlex.quote(str(config)))
    variables = [f"{k}={shlex.quote(v)}" for k, v in gateway.environment]
    return " ".join(["env", *variables, shlex.quote(str(program)), arguments])


def contents(gateway: Gateway) -> dict[str, Any]:
    """What a gateway row's verdicts depend on besides the harness (`harness.card.verdicts`): its
    config, and its side environment's Python and every distribution installed there."""
    root = _checkout()
    found = environments.contents(str(root / gateway.venv / "bin" / "python"))
    return {
        "config": files_digest([root / gateway.config], root),
        "python": found.get("python"),
        "distributions": found.get("distributions"),
        "model": gateway.model,
    }


def standalone(gateway: Gateway) -> GatewayProgram:
    """How a standalone script starts the gateway (`toolstream repro CASE --gateway NAME`): its
    config cut to the one model the row asks for, the upstream's URL and key left for the script
    (a LiteLLM config: `os.environ/...` values, which only the harness's variables would fill)."""
    root = _checkout()
    try:
        loaded = plain_data(bounded.read(root / gateway.config, MAX_CONFIG), gateway.config)
        (entry,) = [m for m in loaded["model_list"] if m["model_name"] == gateway.model]
        params = {k: _standalone_value(k, v) for k, v in entry["litellm_params"].items()}
    except (OSError, HarnessError, KeyError, TypeError, ValueError) as exc:
        said = f"{gateway.config}: model_list: no model {gateway.model!r} to run alone ({exc})"
        raise UsageError(said) from None
    alone = {"model_list": [{"model_name": gateway.model, "litellm_params": params}]}
    config = yaml.safe_dump(alone, sort_keys=False)
    release = installed_version(gateway)
    return GatewayProgram(
        name=f"{gateway.product} {release}",
        requirement=f"{gateway.install}=={release}",
        program=gateway.executable,
        arguments=tuple(shlex.split(gateway.arguments)),
        environment=dict(gateway.environment),
        config=config,
        model=gateway.model,
    )


def _standalone_value(key: str, value: Any) -> Any:
    if key == "api_base":
        return "{upstream}"
    if key == "api_key":
        return "sk-repro"
    return value
