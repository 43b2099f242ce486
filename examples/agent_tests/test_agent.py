"""The agent of agent.py tested over the conformance matrix, as its developer would: each test is
served one streamed case at a time and judged by the follow-up request the agent sends.

    pytest examples/agent_tests --toolstream-scenarios original,parallel-calls-share-index-0

fails `test_agent_keyed_by_index` on the cases whose parallel calls share index 0 (the scenario,
and a LiteLLM recording): it merges them into one call. Everything else passes. Over the whole
openai-chat matrix (`pytest examples/agent_tests -k keyed`), `calls_correctly` passes every case;
`calls_by_index` fails the index-0 cases and more (names repeated in full, placeholder or re-sent
arguments, cut streams whose truncated call it runs, ...).
"""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest
from agent import calls_by_index, calls_correctly, run_agent, run_agent_async

pytestmark = pytest.mark.toolstream_matrix(dialects=["openai-chat"])

QUESTION = "Weather and time in Paris?"
# One HTTP client for every test, as an application keeps one: each new `openai.OpenAI()` would
# otherwise build its own, loading the system's certificates again (half of a case's CPU time).
HTTP = httpx.Client()


def test_agent_keyed_by_index(toolstream_served_case):
    client = openai.OpenAI(base_url=toolstream_served_case.base_url, api_key="test", http_client=HTTP)
    run_agent(client, QUESTION, reassemble=calls_by_index)


def test_agent_keyed_correctly(toolstream_served_case):
    client = openai.OpenAI(base_url=toolstream_served_case.base_url, api_key="test", http_client=HTTP)
    run_agent(client, QUESTION, reassemble=calls_correctly)


def test_async_agent_from_the_environment(toolstream_served_case):
    async def ask() -> str:
        async with openai.AsyncOpenAI() as client:  # reads OPENAI_BASE_URL and OPENAI_API_KEY
            return await run_agent_async(client, QUESTION)

    with toolstream_served_case.environ():
        asyncio.run(ask())
