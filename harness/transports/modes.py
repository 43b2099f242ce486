"""Record modes, with vcrpy's meaning, and what each one lets a transport do; the request fields it
can match on.

- `none`: replay only; a request nothing matches raises `NoMatchError`.
- `once`: record when the cassette file does not exist, else behave as `none`.
- `new_episodes`: replay what matches, forward and record (append) the rest.
- `all`: always forward and record; old interactions are kept but never replayed.
- `rewrite`: drop the old interactions and record everything fresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from harness.errors import UsageError

MATCH_FIELDS: Final = ("method", "url", "body")  # the default
URL_PARTS: Final = ("scheme", "host", "port", "path", "query")
MATCH_NAMES: Final = ("method", *URL_PARTS, "url", "body")  # and `body.<path>`


class RecordMode(StrEnum):
    """When a transport replays and when it forwards to the network and records."""

    NONE = "none"
    ONCE = "once"
    NEW_EPISODES = "new_episodes"
    ALL = "all"
    REWRITE = "rewrite"

    @classmethod
    def parse(cls, value: str | RecordMode) -> RecordMode:
        """The mode named `value`; an unknown name raises `UsageError` listing the modes."""
        try:
            return cls(value.lower() if isinstance(value, str) else value)
        except ValueError:
            names = ", ".join(mode.value for mode in cls)
            raise UsageError(f"unknown record mode {value!r}; choose one of {names}") from None

    def policy(self, cassette_exists: bool) -> Policy:
        """What this mode does given whether the cassette file is already there."""
        match self:
            case RecordMode.NONE:
                return Policy(load=True, replay=True, record=False)
            case RecordMode.ONCE:
                if cassette_exists:
                    return Policy(load=True, replay=True, record=False)
                return Policy(load=False, replay=False, record=True)
            case RecordMode.NEW_EPISODES:
                return Policy(load=cassette_exists, replay=True, record=True)
            case RecordMode.ALL:
                return Policy(load=cassette_exists, replay=False, record=True)
            case RecordMode.REWRITE:
                return Policy(load=False, replay=False, record=True)
        raise AssertionError(self)  # pragma: no cover


@dataclass(frozen=True, slots=True)
class Policy:
    """`load` the existing cassette, `replay` matching interactions, `record` what is forwarded."""

    load: bool
    replay: bool
    record: bool
