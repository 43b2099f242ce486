"""How many examples a fuzz (property) test draws: `examples(ci, thorough)`.

The suite runs in a 10-minute budget on 2 cores (`pytest -q -n 2`, .ci/run), where a fuzz test
draws its `ci` count; `HYPOTHESIS_PROFILE=thorough` draws its `thorough` count (the count it had
before the two were told apart) for a deeper search. A test gets a smaller `ci` count only where
bugs planted in the code it covers were found as often with it as with the full count (the commit
that set it says which); where fewer examples found them less often, the test keeps one count.
"""

from __future__ import annotations

import os

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"


def examples(ci: int, thorough: int) -> int:
    """`thorough` under `HYPOTHESIS_PROFILE=thorough`, else `ci`."""
    return thorough if THOROUGH else ci
