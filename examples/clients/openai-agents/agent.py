"""The OpenAI Agents SDK's own loop (`Runner.run_streamed`), no adapter: one tool, offered under the
tool names the corpus's recordings call, over chat completions. It reads nothing but
OPENAI_BASE_URL and OPENAI_API_KEY (through the `openai` client the SDK makes), so
`toolstream check --client` runs it unchanged. Tracing is off: it would upload to OpenAI.
"""

import asyncio
import json
from typing import Any

from agents import Agent, FunctionTool, Runner, set_default_openai_api, set_tracing_disabled

NAMES = (
    "get_weather", "get_time", "get_current_time", "web_search", "search_text", "read_file",
    "list_issues", "get_file_contents", "list_open_tabs", "code_execution", "bocha_websearch_tool",
)  # fmt: skip


async def lookup(context: Any, arguments: str) -> str:
    """The one tool: it answers any call (arguments that do not parse: an error told to the model)."""
    try:
        return f"ok ({', '.join(json.loads(arguments or '{}'))})"
    except ValueError as exc:
        return f"error: {exc}"


def main() -> None:
    set_tracing_disabled(True)
    set_default_openai_api("chat_completions")
    schema = {"type": "object", "properties": {}, "additionalProperties": True}
    tools = [
        FunctionTool(name, "Look something up.", schema, lookup, strict_json_schema=False) for name in NAMES
    ]
    agent = Agent(name="assistant", instructions="Use the tools.", tools=list(tools), model="gpt-4.1")

    async def run() -> None:
        result = Runner.run_streamed(agent, "Weather and time in Paris?", max_turns=4)
        async for _ in result.stream_events():
            pass
        print(result.final_output)

    asyncio.run(run())


if __name__ == "__main__":
    main()
