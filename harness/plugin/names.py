"""The keys the matrix items' reports carry, kept here so the hooks read them without importing the
matrix: every pytest session of a project with toolstream-harness installed loads the plugin.
"""

from __future__ import annotations

from typing import Final

# user_properties keys. Each value is one JSON text, not a mapping: pytest copies an item's
# user_properties into its setup, call and teardown reports, and xdist pickles every report object
# by object in Python, so a verdict as nested data cost more to carry than to judge.
RESULT_KEY: Final = "toolstream_result"  # one verdict
COMPARE_KEY: Final = "toolstream_compare"  # an A/B pair
