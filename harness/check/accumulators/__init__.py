"""Accumulators from spec strings, the same strings in the CLI, the pytest plugin and the API.

- `reference`: each dialect's reference accumulator (event level).
- a built-in adapter: `openai-sdk`, `anthropic-sdk`, `langchain-core`, `langchain-openai`,
  `langchain-anthropic` (each behind an extra of the same family).
- `module.path:attr`: a Python object, resolved by `wrap` (see there for the rule).
- `cmd:COMMAND` / `cmd-bytes:COMMAND`: a process speaking the stdio protocol, fed events / bytes.
- a name another package registers under the entry-point group `toolstream.accumulators`
  (its object is resolved like `module.path:attr`).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from importlib.metadata import entry_points
from typing import Any, Final

from harness.check.accumulators.base import Accumulator, ClientRunner, EventAccumulator
from harness.check.accumulators.client_level import ClientLevel
from harness.check.accumulators.event_level import EventLevel
from harness.check.accumulators.stdio import Stdio
from harness.errors import UsageError

__all__ = [
    "ENTRY_POINT_GROUP",
    "Accumulator",
    "ClientLevel",
    "ClientRunner",
    "EventAccumulator",
    "EventLevel",
    "Stdio",
    "builtin_names",
    "import_object",
    "resolve",
    "wrap",
]

ENTRY_POINT_GROUP: Final = "toolstream.accumulators"
# Built-in name -> module in this package with an `accumulator()` factory.
_BUILTINS: Final = {
    "reference": "reference",
    "openai-sdk": "openai_sdk",
    "anthropic-sdk": "anthropic_sdk",
    "langchain-core": "langchain_core",
    "langchain-openai": "langchain_openai",
    "langchain-anthropic": "langchain_anthropic",
}
_FORMS: Final = "reference, a built-in name ({}), module.path:attr, cmd:COMMAND or cmd-bytes:COMMAND"


def builtin_names() -> list[str]:
    """The names of the built-in accumulators, `reference` first."""
    return list(_BUILTINS)


def resolve(spec: str | Any) -> Accumulator:
    """The accumulator a spec names (an object is wrapped as `wrap` says); `UsageError` when unknown."""
    if not isinstance(spec, str):
        name = getattr(spec, "name", None) or getattr(spec, "__name__", None) or type(spec).__name__
        return wrap(spec, str(name))
    spec = spec.strip()
    for prefix, feed in (("cmd-bytes:", "bytes"), ("cmd:", "events")):
        if spec.startswith(prefix):
            command = spec[len(prefix) :].strip()
            if not command:
                raise UsageError(f"accumulator {spec!r}: {prefix} needs a command")
            return Stdio(command, "bytes" if feed == "bytes" else "events", name=spec)
    if spec in _BUILTINS:
        module = importlib.import_module(f"{__name__}.{_BUILTINS[spec]}")
        built: Accumulator = module.accumulator()
        return built
    registered = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if spec in registered:
        try:
            loaded = registered[spec].load()
        except Exception as exc:
            raise UsageError(f"accumulator {spec!r}: its entry point failed to load: {exc}") from None
        return wrap(loaded, spec)
    if ":" in spec:
        return wrap(import_object(spec), spec)
    known = ", ".join(name for name in _BUILTINS if name != "reference")
    raise UsageError(f"unknown accumulator {spec!r}; use {_FORMS.format(known)}")


def import_object(spec: str) -> Any:
    """The object `module.path:attr` names. The working directory is importable, as with
    `python -m`, so `--accumulator mypkg.acc:make` works from a project's folder."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UsageError(f"accumulator {spec!r}: expected module.path:attr")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"accumulator {spec!r}: cannot import {module_name}: {exc}") from None
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise UsageError(f"accumulator {spec!r}: {module_name} has no attribute {attr}") from None
    return found


def wrap(obj: Any, name: str) -> Accumulator:
    """A Python object as an accumulator. The rule, in order:

    1. `toolstream_level = "client"` on the object: a client-level callable `(transport, case)`;
       `"event"`: an event-level factory; `"factory"`: a zero-argument callable returning an accumulator.
    2. An object with `run` and `shutdown` (not a class) already is an accumulator.
    3. A class is an event-level factory (instantiated per case, with the dialect name when its
       constructor takes a parameter).
    4. A function with two required positional parameters `(transport, case)` is client level;
       any other callable is an event-level factory.
    """
    level = getattr(obj, "toolstream_level", None)
    if level == "client":
        return ClientLevel(obj, name)
    if level == "event":
        return EventLevel(obj, name)
    if level == "factory":
        return resolve(obj())
    if (
        not inspect.isclass(obj)
        and callable(getattr(obj, "run", None))
        and callable(getattr(obj, "shutdown", None))
    ):
        if not isinstance(getattr(obj, "name", None), str):
            obj.name = name
        accumulator: Accumulator = obj
        return accumulator
    if inspect.isclass(obj):
        return EventLevel(obj, name)
    if callable(obj):
        return ClientLevel(obj, name) if _required_positional(obj) == 2 else EventLevel(obj, name)
    raise UsageError(
        f"accumulator {name!r}: {type(obj).__name__} is neither a class, a function nor an accumulator"
    )


def _required_positional(fn: Any) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 0
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in parameters if p.kind in kinds and p.default is inspect.Parameter.empty)
