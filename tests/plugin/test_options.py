"""The plugin's settings are one table (`harness.plugin.options.OPTIONS`): `pytest --help` lists
its options and ini keys and no other, and a session given none of them reads each default."""

from __future__ import annotations

import re

import pytest

from harness.plugin.options import OPTIONS

pytest_plugins = ["pytester"]


def test_help_lists_the_tables_options_and_ini_keys_and_no_other(pytester: pytest.Pytester) -> None:
    shown = pytester.runpytest("--help").stdout.str()
    options = set(re.findall(r"^  (--toolstream-[\w-]+)", shown, re.MULTILINE))
    keys = set(re.findall(r"^  (toolstream_\w+) \(", shown, re.MULTILINE))
    assert options == {o.option for o in OPTIONS if o.help is not None}
    assert keys == {o.name for o in OPTIONS if o.ini is not None}
    flat = " ".join(shown.split())
    for option in OPTIONS:  # each help text as written, wrapped however the terminal is
        for text in (option.help, option.ini):
            if text is not None:
                assert " ".join(text.split()).replace("%%", "%") in flat, text


def test_a_session_given_nothing_reads_each_default(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    for option in OPTIONS:
        if option.ini is not None:
            assert config.getini(option.name) == option.ini_default, option.name
    assert config.getoption("toolstream_retarget") is None  # neither --toolstream-[no-]retarget given
    assert config.getoption("toolstream_only_matrix") is False
    assert config.getoption("toolstream_accumulator") is None
    given = pytester.parseconfig("--toolstream-no-retarget", "--toolstream-compare", "a", "b")
    assert given.getoption("toolstream_retarget") is False
    assert given.getoption("toolstream_compare") == ["a", "b"]
