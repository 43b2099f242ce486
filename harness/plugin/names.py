"""Names the plugin registers before anything runs, kept here so loading the plugin stays cheap.

Every pytest session of a project with toolstream-harness installed loads the plugin; registering
options, ini keys and markers must not import the transports, the matrix or the server. These are
copies of the library's names (record modes, match fields) and the keys the matrix items' reports
carry; `tests/test_plugin_lazy.py` checks they agree with the library.
"""

from __future__ import annotations

from typing import Final

# harness.transports.modes.RecordMode, in its order
RECORD_MODES: Final = ("none", "once", "new_episodes", "all", "rewrite")
# harness.transports.matching.MATCH_FIELDS (the default) and MATCH_NAMES
MATCH_FIELDS: Final = ("method", "url", "body")
MATCH_NAMES: Final = ("method", "scheme", "host", "port", "path", "query", "url", "body")
# user_properties keys. Each value is one JSON text, not a mapping: pytest copies an item's
# user_properties into its setup, call and teardown reports, and xdist pickles every report object
# by object in Python, so a verdict as nested data cost more to carry than to judge.
RESULT_KEY: Final = "toolstream_result"  # one verdict
COMPARE_KEY: Final = "toolstream_compare"  # an A/B pair
