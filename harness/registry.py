"""What other packages register with toolstream under an entry-point group (`toolstream.dialects`,
`toolstream.accumulators`, `toolstream.mutations`): one `Registry` per group, read once per process
when first asked for (`importlib.metadata` is imported only then: it costs a fresh
`serve-accumulator` child more than the rest of its start-up), no entry taking a built-in name,
and an entry that fails to load said in one line naming it, as the caller's own error."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["Registry", "entry_points"]


def entry_points(group: str) -> list[EntryPoint]:
    """`importlib.metadata.entry_points` of one group, imported when first needed."""
    from importlib.metadata import entry_points as read

    return list(read(group=group))


class Registry:
    """The entry points of one group, by name. `error` makes the exception of the stage that asks
    (`DialectError`, `UsageError`) from a one-line message; `what` names an entry in it."""

    def __init__(
        self, group: str, *, what: str, error: Callable[[str], Exception], builtins: Iterable[str] = ()
    ) -> None:
        self.group = group
        self.what = what
        self.error = error
        self.builtins = frozenset(builtins)
        self._entries: dict[str, EntryPoint] | None = None

    @property
    def read(self) -> bool:
        """Whether the group was read in this process."""
        return self._entries is not None

    def entries(self) -> dict[str, EntryPoint]:
        """Name -> entry point, read on the first call; an entry named as a built-in is an error."""
        if self._entries is None:
            found = {entry.name: entry for entry in entry_points(self.group)}
            taken = sorted(set(found) & self.builtins)
            if taken:
                raise self.error(f"entry points of {self.group} reuse built-in {self.what} names: {taken}")
            self._entries = found
        return self._entries

    def load(self, name: str) -> Any:
        """The object entry point `name` names (a `KeyError` for a name not registered)."""
        entry = self.entries()[name]
        try:
            return entry.load()
        except Exception as exc:
            said = f"{self.what} {name!r}: its entry point {entry.value} failed to load: {exc}"
            raise self.error(said) from None

    def load_all(self) -> None:
        """Load every entry (a registration that happens on import, as mutations' does)."""
        for name in self.entries():
            self.load(name)

    def forget(self) -> None:
        """Read the group again when next asked (a distribution installed since)."""
        self._entries = None
