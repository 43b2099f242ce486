"""Record modes: parsing and what each mode lets a transport do."""

from __future__ import annotations

import pytest

from harness.errors import UsageError
from harness.transports.modes import Policy, RecordMode


@pytest.mark.parametrize("name", ["none", "once", "new_episodes", "all", "rewrite", "ONCE"])
def test_parse_known_modes(name: str) -> None:
    assert RecordMode.parse(name) == name.lower()
    assert RecordMode.parse(RecordMode(name.lower())) is RecordMode(name.lower())


def test_unknown_mode_is_a_usage_error_listing_the_modes() -> None:
    with pytest.raises(UsageError) as caught:
        RecordMode.parse("new-episodes")
    assert (
        str(caught.value)
        == "unknown record mode 'new-episodes'; choose one of none, once, new_episodes, all, rewrite"
    )


@pytest.mark.parametrize(
    ("mode", "exists", "policy"),
    [
        ("none", True, Policy(load=True, replay=True, record=False)),
        ("once", True, Policy(load=True, replay=True, record=False)),
        ("once", False, Policy(load=False, replay=False, record=True)),
        ("new_episodes", True, Policy(load=True, replay=True, record=True)),
        ("new_episodes", False, Policy(load=False, replay=True, record=True)),
        ("all", True, Policy(load=True, replay=False, record=True)),
        ("rewrite", True, Policy(load=False, replay=False, record=True)),
    ],
)
def test_policy(mode: str, exists: bool, policy: Policy) -> None:
    assert RecordMode.parse(mode).policy(exists) == policy
