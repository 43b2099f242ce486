"""An application's agent on the OpenAI Agents SDK (`Runner.run_streamed`) with tools of its own,
none named as the corpus's recordings call theirs: `toolstream check --client` moves each case
onto these tools (retargeting, docs/testing-your-agent.md), so the matrix tests the SDK's stream
handling, not whether the recording's tool names exist. It reads nothing but OPENAI_BASE_URL and
OPENAI_API_KEY (through the `openai` client the SDK makes). Tracing is off: it would upload.

    toolstream check --client "python examples/clients/openai-agents/own_tools.py" --dialect openai-chat
"""

import asyncio

from agents import Agent, Runner, function_tool, set_default_openai_api, set_tracing_disabled


@function_tool
def get_forecast(city: str, days: int) -> str:
    """The weather forecast for a city, for the next few days."""
    return f"{city}: sunny for {days} days"


@function_tool
def convert_currency(amount: float, currency: str) -> str:
    """An amount of euros in another currency."""
    return f"{amount * 1.1:.2f} {currency}"


def main() -> None:
    set_tracing_disabled(True)
    set_default_openai_api("chat_completions")
    agent = Agent(
        name="assistant",
        instructions="Use the tools.",
        tools=[get_forecast, convert_currency],
        model="gpt-4.1",
    )

    async def run() -> None:
        result = Runner.run_streamed(agent, "Forecast for Paris, and 20 euros in dollars?", max_turns=4)
        async for _ in result.stream_events():
            pass
        print(result.final_output)

    asyncio.run(run())


if __name__ == "__main__":
    main()
