"""Recording recipes: provider-neutral prompts and tools, each eliciting one tool-call shape.

A recipe says what to ask (a prompt, tools, whether to think: `Recipe` and `Tool`, the words a
dialect's request is made from, are in `harness.wire.dialects.requesting`); how a provider is
asked is its dialect's `Requesting` role, and `harness.wire.dialects.providers` puts the two
together.
"""

from __future__ import annotations

from harness.errors import UsageError
from harness.wire.dialects.requesting import THINKING_BUDGET, Recipe, Tool

__all__ = ["PROBE_RECIPES", "RECIPES", "THINKING_BUDGET", "Recipe", "Tool", "recipe"]


WEATHER = Tool(
    "get_weather",
    "Current weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}},
        "required": ["city"],
    },
)
TIME = Tool(
    "get_time",
    "Current local time in an IANA time zone.",
    {
        "type": "object",
        "properties": {"timezone": {"type": "string", "description": "IANA zone, e.g. Asia/Tokyo"}},
        "required": ["timezone"],
    },
)
OPEN_ISSUES = Tool(
    "list_open_issues",
    "List the open issues of the current project. Takes no arguments.",
    {"type": "object", "properties": {}},
)

RUN_SHELL = Tool(
    "run_shell",
    "Run one POSIX shell command line in the workspace; the input is the command line itself.",
    {},
    freeform=True,
)

RECIPES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in (
        Recipe("single", "What is the weather in Paris right now? Use the get_weather tool.", (WEATHER,)),
        Recipe(
            "parallel",
            "I need the weather in Paris and the local time in Tokyo. "
            "Call get_weather and get_time in parallel, in one turn, before answering.",
            (WEATHER, TIME),
        ),
        Recipe(
            "parallel-same-tool",
            "Compare the weather in Paris, Tokyo and Lima. "
            "Call get_weather once per city, all three calls in parallel in one turn.",
            (WEATHER,),
        ),
        Recipe(
            "text-then-tool",
            "First tell me in one short sentence what you are about to do, then call get_weather for Paris.",
            (WEATHER,),
        ),
        Recipe("no-args", "Show me the open issues: call list_open_issues.", (OPEN_ISSUES,)),
        # The shapes inference servers' tool parsers get wrong (vLLM, SGLang, llama.cpp, Ollama):
        # the arguments of a call after an empty-argument one dropped; many calls in one turn,
        # several packed into one increment or sharing an index.
        Recipe(
            "no-args-then-args",
            "Call list_open_issues, and in the same turn get_weather for Paris: both calls in parallel.",
            (OPEN_ISSUES, WEATHER),
        ),
        Recipe(
            "many-calls",
            "Get the weather in Paris, Tokyo, Lima, Oslo, Cairo and Perth, and the local time in "
            "Asia/Tokyo and Europe/Oslo: eight calls in parallel in one turn, before answering.",
            (WEATHER, TIME),
        ),
        Recipe(
            "thinking-parallel",
            "Think about which two cities are the capitals of France and Norway, then call get_weather "
            "for both of them in parallel, in one turn, before answering.",
            (WEATHER,),
            thinking=True,
        ),
        Recipe(
            "server-tool-then-call",
            "Search the web for the city where PyCon US 2026 is held, say in one sentence what you found, "
            "then call get_weather for that city.",
            (WEATHER,),
            web_search=True,
        ),
        Recipe(
            "thinking-then-tool",
            "Which city is the capital of the country that hosted the 1998 football World Cup? "
            "Work it out, then call get_weather for that city.",
            (WEATHER,),
            thinking=True,
        ),
        Recipe(
            "custom-tool",
            'Count the lines containing "TODO" or "FIXME" under src/ with one shell command line. '
            "Call run_shell with the command line itself as its input.",
            (RUN_SHELL,),
        ),
    )
}

# What `toolstream probe` asks a server: the shapes a tool parser gets wrong (parallel calls to
# one function, a zero-argument call then an argument call, many small calls, a call after text).
PROBE_RECIPES: tuple[str, ...] = (
    "single",
    "parallel",
    "parallel-same-tool",
    "no-args",
    "no-args-then-args",
    "many-calls",
    "text-then-tool",
)


def recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise UsageError(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}")
    return RECIPES[name]
