"""`harness.serve.routes`: a case id is one URL path segment and reads back as it was, a file name
that is not UTF-8 included (`serve --cassettes` exited 3 on one: the id could not be quoted)."""

from __future__ import annotations

import pytest

from harness.serve import routes


@pytest.mark.parametrize(
    "case_id",
    [
        "openai-chat/single-call::original::s0",
        "dir/with space/é::original::s1",
        b"nonutf/bad\xff::original::s0".decode("utf-8", "surrogateescape"),
    ],
)
def test_a_case_id_round_trips_through_its_url(case_id: str) -> None:
    prefix = routes.case_prefix(case_id)
    assert "/" not in routes.quoted(case_id) and prefix.isascii()
    route = routes.parse(prefix + "/v1/chat/completions", {case_id})
    assert route is not None and route.case_id == case_id
