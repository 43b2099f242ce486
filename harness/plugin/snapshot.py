"""A syrupy extension that keeps outcomes as readable YAML, one file per cassette.

    def test_my_accumulator(toolstream_case, toolstream_snapshot):
        assert toolstream_case.run("mypkg.acc:make") == toolstream_snapshot

Layout: `__snapshots__/<test module>/<cassette>.yaml`, a mapping from snapshot name to outcome
(calls with their parsed arguments). A case of a meaning-preserving scenario is kept under the
test's name, shared with every other such case of the cassette; a meaning-changing one under
`<test>[<scenario>::s<seed>]`. The serializer, the storage and the comparison are separate pieces,
as syrupy splits them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from syrupy.data import Snapshot, SnapshotCollection
from syrupy.extensions.base import AbstractSyrupyExtension
from syrupy.location import PyTestLocation

from harness import bounded, files
from harness.bounded.yaml import plain_data
from harness.cassettes.outcome import Outcome
from harness.mutate.scenario import SEPARATOR
from harness.oracle.verdict import Result
from harness.plugin.options import file_safe

__all__ = ["ToolstreamSnapshotExtension", "outcome_yaml"]


# -- serializer ---------------------------------------------------------------------------------


def _plain(data: Any) -> Any:
    if isinstance(data, Outcome):
        out = data.to_dict()
        out.pop("usage", None)  # not compared by `diff`: a snapshot should not churn on token counts
        out.pop("notes", None)  # nor on how the outcome was reached
        return out
    if isinstance(data, Result):
        return (
            _plain(data.actual)
            if data.actual is not None
            else {"verdict": str(data.verdict), "error": data.error}
        )
    return data


def outcome_yaml(data: Any) -> str:
    """An outcome (or a verdict, or plain data) as stable, readable YAML."""
    return yaml.safe_dump(
        _plain(data), sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )


# -- storage ------------------------------------------------------------------------------------


MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024  # a snapshot file holds outcomes, as a cassette does


def _read(location: str | Path) -> dict[str, Any]:
    if not Path(location).exists():
        return {}
    data = plain_data(bounded.read_input(location, MAX_SNAPSHOT_BYTES, "a snapshot file"), location)
    return dict(data) if isinstance(data, Mapping) else {}


def _write(location: str | Path, entries: Mapping[str, Any]) -> None:
    text = yaml.safe_dump(dict(sorted(entries.items())), sort_keys=False, allow_unicode=True, width=100)
    files.write(Path(location), text.encode("utf-8"))


def _test_name(test_location: PyTestLocation) -> str:
    # Not `snapshot_name`: syrupy splits node ids on "::", which case ids contain too.
    item = test_location.item
    name = str(getattr(item, "originalname", None) or item.name)
    owner = getattr(item, "cls", None)
    return f"{owner.__name__}.{name}" if owner is not None else name


class ToolstreamSnapshotExtension(AbstractSyrupyExtension):
    """Outcomes as YAML; the snapshot `name=` is a case key (`cassette` or `cassette::scenario::sN`)."""

    file_extension = "yaml"

    def serialize(self, data: Any, *, exclude: Any = None, include: Any = None, matcher: Any = None) -> str:
        return outcome_yaml(data)

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        base = Path(test_location.filepath).parent / str(cls.snapshot_dirname)
        return str(base / test_location.basename)

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(Path(cls.dirname(test_location=test_location)).parent)

    def owns_snapshot_collection(self, *, filepath: str, test_location: PyTestLocation) -> bool:
        path = Path(filepath)
        return path.suffix == ".yaml" and path.parent == Path(self.dirname(test_location=test_location))

    @classmethod
    def matches_test_location(cls, *, test_location: PyTestLocation, snapshot_location: str) -> bool:
        return Path(snapshot_location).parent.name == test_location.basename and (
            test_location.matches_snapshot_site(snapshot_location)
        )

    @classmethod
    def get_file_basename(cls, *, test_location: PyTestLocation, index: Any) -> str:
        if isinstance(index, str):
            return file_safe(index.split(SEPARATOR)[0])
        return file_safe(_test_name(test_location))

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: Any = 0) -> str:
        name = _test_name(test_location)
        if isinstance(index, str):
            rest = index.split(SEPARATOR)[1:]
            return f"{name}[{SEPARATOR.join(rest)}]" if rest else name
        return f"{name}.{index}" if index else name

    def read_snapshot_collection(self, *, snapshot_location: str) -> SnapshotCollection:
        collection = SnapshotCollection(location=snapshot_location)
        for name in _read(snapshot_location):
            collection.add(Snapshot(name=str(name)))
        return collection

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> str | None:
        entries = _read(snapshot_location)
        return outcome_yaml(entries[snapshot_name]) if snapshot_name in entries else None

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        entries = _read(snapshot_collection.location)
        for snapshot in snapshot_collection:
            entries[snapshot.name] = yaml.safe_load(str(snapshot.data))
        _write(snapshot_collection.location, entries)

    def delete_snapshots(self, *, snapshot_location: str, snapshot_names: set[str]) -> None:
        entries = {k: v for k, v in _read(snapshot_location).items() if k not in snapshot_names}
        if entries:
            _write(snapshot_location, entries)
        else:
            Path(snapshot_location).unlink(missing_ok=True)
