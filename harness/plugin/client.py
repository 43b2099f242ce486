"""`--toolstream-client CMD` (ini `toolstream_client`): a program run unchanged once per case of
the conformance matrix, judged by the follow-up request it sends to the replay server.

It is `--toolstream-accumulator client:CMD` spelled for programs: this module only turns one into
the other before the plugin reads its settings, so the matrix items, reports and replay lines are
the ones every accumulator gets (`harness.accumulators.program.ClientProgram`).
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    programs = config.getoption("toolstream_client") or config.getini("toolstream_client") or []
    if not programs:
        return
    from harness.accumulators.program import PREFIX  # the server, imported only when a program is given

    specs = [PREFIX + str(command) for command in programs]
    if not all(spec[len(PREFIX) :].strip() for spec in specs):
        raise pytest.UsageError("--toolstream-client: needs a command")
    given = config.getoption("toolstream_accumulator") or []
    config.option.toolstream_accumulator = [*given, *specs]
