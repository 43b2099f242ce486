"""Accumulators from spec strings, the same strings in the CLI, the pytest plugin and the API.

- `reference`: each dialect's reference accumulator (event level).
- a built-in adapter: `openai-sdk`, `anthropic-sdk`, `langchain-core`, `langchain-openai`,
  `langchain-anthropic`, `pydantic-ai`, `litellm`, `google-adk`, `strands-agents`, `smolagents`,
  `agno` (each behind an extra of the same family).
- `module.path:attr`: a Python object, by the rule in `resolve`.
- `cmd:COMMAND` / `cmd-bytes:COMMAND`: a process speaking the stdio protocol, fed events / bytes.
- `client:COMMAND`: a program run unchanged once per case against the replay server, judged by
  the follow-up request it sends (`harness.accumulators.program.ClientProgram`).
- a name another package registers under the entry-point group `toolstream.accumulators`
  (its object is resolved like `module.path:attr`).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from harness.accumulators.base import (
    LEVEL_ATTRIBUTE,
    Accumulator,
    ClientRunner,
    EventAccumulator,
    EventFactory,
    client_level,
)
from harness.accumulators.event_level import EventLevel
from harness.errors import UsageError, did_you_mean
from harness.registry import Registry

if TYPE_CHECKING:
    from harness.accumulators.client import ClientLevel
    from harness.accumulators.stdio_process import Stdio

__all__ = [
    "ENTRY_POINT_GROUP",
    "REGISTERED",
    "Accumulator",
    "ClientLevel",
    "ClientRunner",
    "EventAccumulator",
    "EventFactory",
    "EventLevel",
    "Stdio",
    "builtin_names",
    "client_level",
    "dialects_of",
    "import_object",
    "prepare",
    "resolve",
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
    "pydantic-ai": "pydantic_ai",
    "litellm": "litellm",
    "google-adk": "google_adk",
    "strands-agents": "strands_agents",
    "smolagents": "smolagents",
    "agno": "agno",
}
REGISTERED: Final = Registry(ENTRY_POINT_GROUP, what="accumulator", error=UsageError, builtins=_BUILTINS)
_FORMS: Final = (
    "reference, a built-in name ({}), module.path:attr, cmd:COMMAND, cmd-bytes:COMMAND or client:COMMAND"
)


def __getattr__(name: str) -> Any:
    # Client level needs the replay transports (httpx, asyncio), the stdio client processes and
    # threads: loaded when first asked for, so a `serve-accumulator reference` child pays for neither.
    if name == "ClientLevel":
        from harness.accumulators.client import ClientLevel

        return ClientLevel
    if name == "Stdio":
        from harness.accumulators.stdio_process import Stdio

        return Stdio
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def builtin_names() -> list[str]:
    """The names of the built-in accumulators, `reference` first."""
    return list(_BUILTINS)


def resolve(spec: str | Any) -> Accumulator:
    """The one way from a spec string (or a Python object) to a runner-level `Accumulator`.

    A Python object (given, named by `module.path:attr` or by an entry point) is, in order:
    1. marked client level (`@client_level`, i.e. `toolstream_level = "client"`): a `ClientRunner`
       called as `fn(transport, case)`;
    2. an instance with `run` and `shutdown`: already an `Accumulator`, used as it is (given a
       `prepare` that does nothing when it has none);
    3. any other class or function: an event-level factory, always called as `factory(dialect)`.
    The level is never guessed from a signature; the signature is only checked, so a spec that
    cannot be loaded or called that way is a `UsageError` here rather than an error in every case.
    """
    if not isinstance(spec, str):
        name = getattr(spec, "name", None) or getattr(spec, "__name__", None) or type(spec).__name__
        return _from_object(spec, str(name))
    spec = spec.strip()
    for prefix, feed in (("cmd-bytes:", "bytes"), ("cmd:", "events")):
        if spec.startswith(prefix):
            command = spec[len(prefix) :].strip()
            if not command:
                raise UsageError(f"accumulator {spec!r}: {prefix} needs a command")
            _check_program(spec, command)
            from harness.accumulators.stdio_process import Stdio

            return Stdio(command, "bytes" if feed == "bytes" else "events", name=spec)
    if spec.startswith("client:"):
        from harness.accumulators.program import ClientProgram  # the server is loaded only when asked for

        return ClientProgram(spec[len("client:") :].strip(), name=spec)
    if spec in _BUILTINS:
        module = importlib.import_module(f"{__name__}.{_BUILTINS[spec]}")
        built: Accumulator = module.accumulator()
        return built
    registered = REGISTERED.entries()
    if spec in registered:
        return _from_object(REGISTERED.load(spec), spec)
    if ":" in spec:
        return _from_object(import_object(spec), spec)
    known = ", ".join(name for name in _BUILTINS if name != "reference")
    hint = did_you_mean(spec, [*_BUILTINS, *registered])
    raise UsageError(f"unknown accumulator {spec!r}{hint or '; use ' + _FORMS.format(known)}")


def prepare(accumulator: Accumulator, name: str, *, quiet: bool = True) -> None:
    """Warm `accumulator` up (`prepare()`), what it prints thrown away with its outcome (`quiet`).
    One whose own `prepare` raises cannot run at all: a `UsageError` naming it, as a worker process
    reports it, never a verdict and never an internal error of the harness."""
    from harness.errors import HarnessError
    from harness.processes.capture import captured_output

    try:
        with captured_output() if quiet else contextlib.nullcontext():
            accumulator.prepare()
    except HarnessError:
        raise
    except Exception as exc:
        text = " ".join(str(exc).split())
        raise UsageError(
            f"accumulator {name!r} cannot start: its prepare() raised {type(exc).__name__}"
            + (f": {text}" if text else "")
        ) from None


def cwd_shadows_harness() -> bool:
    """Whether the working directory holds a copy of the harness package other than the one this
    process runs (a checkout of it, beside an installed wheel): a Python started there with the
    working directory first on its path (`python -c`, a forkserver) would import that copy."""
    found = Path(os.getcwd()) / "harness"
    return found.is_dir() and found.resolve() != Path(__file__).resolve().parent.parent


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
    except Exception as exc:  # the user's module failed as it ran (a syntax error, a raise): their input
        raise UsageError(
            f"accumulator {spec!r}: cannot import {module_name}: {type(exc).__name__}: {exc}"
        ) from None
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            hint = did_you_mean(part, [n for n in dir(found) if not n.startswith("_")])
            raise UsageError(f"accumulator {spec!r}: {module_name} has no attribute {attr}{hint}") from None
    return found


def _from_object(obj: Any, name: str) -> Accumulator:
    level = getattr(obj, LEVEL_ATTRIBUTE, None)
    if level == "client":
        from harness.accumulators.client import ClientLevel

        _check_call(obj, name, ("transport", "case"), "a client-level function takes (transport, case)")
        return ClientLevel(obj, name, dialects=_declared_dialects(obj, name))
    if level is not None:
        raise UsageError(
            f"accumulator {name!r}: {LEVEL_ATTRIBUTE} = {level!r} is not a level; "
            "mark a client-level function with @client_level, leave an event-level factory unmarked"
        )
    if (
        not isinstance(obj, type)
        and callable(getattr(obj, "run", None))
        and callable(getattr(obj, "shutdown", None))
    ):
        if not isinstance(getattr(obj, "name", None), str):
            obj.name = name
        _declared_dialects(obj, name)  # checked; the object keeps its own attribute
        if not callable(getattr(obj, "prepare", None)):
            obj.prepare = _nothing_to_prepare  # `prepare` is optional for objects written before it
        accumulator: Accumulator = obj
        return accumulator
    if callable(obj):
        _check_call(
            obj,
            name,
            ("openai-chat",),
            "an event-level factory is called with the dialect name, e.g. def __init__(self, dialect)"
            " (mark a (transport, case) function with @client_level)",
        )
        factory: EventFactory = obj
        return EventLevel(factory, name, dialects=_declared_dialects(obj, name))
    raise UsageError(
        f"accumulator {name!r}: {type(obj).__name__} is neither a class, a function nor an accumulator"
    )


def dialects_of(accumulator: Accumulator) -> tuple[str, ...] | None:
    """The dialects an accumulator declares it reads (`dialects = ("openai-chat",)` on its class,
    factory or function); None: it takes every dialect."""
    found = getattr(accumulator, "dialects", None)
    return None if found is None else tuple(found)


def _declared_dialects(obj: Any, name: str) -> tuple[str, ...] | None:
    """`obj.dialects`, checked: a sequence of known dialect names (a string alone counts as one)."""
    from harness.wire import dialects

    found = getattr(obj, "dialects", None)
    if found is None:
        return None
    if isinstance(found, str):
        found = (found,)
    if not isinstance(found, list | tuple | set | frozenset) or not all(isinstance(d, str) for d in found):
        raise UsageError(f"accumulator {name!r}: dialects = {found!r} must be a tuple of dialect names")
    known = dialects.names()
    for dialect in found:
        if dialect not in known:
            raise UsageError(
                f"accumulator {name!r}: dialects names unknown dialect {dialect!r}"
                f"{did_you_mean(dialect, known) or '; known: ' + ', '.join(known)}"
            )
    return tuple(found)


def _check_program(spec: str, command: str) -> None:
    """A `cmd:` whose program is not there is a usage error before the first case, not an error
    in every case."""
    import shlex
    import shutil

    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        raise UsageError(f"accumulator {spec!r}: cannot split the command {command!r} into words") from None
    if shutil.which(program) is None:
        where = "no such executable file" if os.sep in program else "not found on PATH"
        raise UsageError(f"accumulator {spec!r}: program {program!r}: {where}")


def _nothing_to_prepare(timeout: float | None = None) -> None:
    """The `prepare` of an accumulator object that has none."""


def _check_call(fn: Any, name: str, args: tuple[str, ...], rule: str) -> None:
    import inspect

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: leave it to the call
        return
    try:
        signature.bind(*args)
    except TypeError as exc:
        raise UsageError(
            f"accumulator {name!r}: cannot be called with {len(args)} argument(s) ({exc}); {rule}"
        ) from None
