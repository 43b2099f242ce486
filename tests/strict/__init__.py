"""Strict accumulators: test fixtures written to each provider's documented protocol, nothing more,
nothing less, and independent of the harness's reference accumulators (they import only the public
`Outcome` types). `tests/oracle/test_strict_accumulators.py` runs each over the full bundled matrix of its
dialect: a difference in a `spec` case is a harness bug (a stream no provider sends, or an
expectation that is not the protocol's), never the fixture's licence to bend.

Shared rule: a call is reported only once it is final by the protocol's own marker; a stream that
never reached its terminal event is `cut` (or `error` when the provider said so in-band).
"""

from tests.strict.anthropic import StrictAnthropic
from tests.strict.gemini import StrictGemini
from tests.strict.openai_chat import StrictChat
from tests.strict.openai_responses import StrictResponses

STRICT = {
    "openai-chat": "tests.strict.openai_chat:StrictChat",
    "anthropic": "tests.strict.anthropic:StrictAnthropic",
    "openai-responses": "tests.strict.openai_responses:StrictResponses",
    "gemini": "tests.strict.gemini:StrictGemini",
}

__all__ = ["STRICT", "StrictAnthropic", "StrictChat", "StrictGemini", "StrictResponses"]
