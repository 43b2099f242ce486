"""An agent loop on the standard library alone, written the way many are: stream the chat
completion, keep each call's fragments by their `index`, run the one tool, send the results back.

It reads nothing but OPENAI_BASE_URL and OPENAI_API_KEY, so `toolstream check --client` runs it
unchanged. Keyed by `index` alone, it merges parallel calls that a gateway puts at index 0.
"""

import http.client
import json
import os
import sys
import urllib.parse

BASE = urllib.parse.urlsplit(os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"))
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def chat(messages: list[dict]) -> http.client.HTTPResponse:
    connection_type = http.client.HTTPSConnection if BASE.scheme == "https" else http.client.HTTPConnection
    connection = connection_type(BASE.hostname or "", BASE.port, timeout=30)
    headers = {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
    body = {"model": "gpt-4.1", "messages": messages, "tools": TOOLS, "stream": True}
    connection.request("POST", BASE.path + "/chat/completions", json.dumps(body), headers)
    return connection.getresponse()


def lookup(name: str, arguments: str) -> str:
    """The one tool: it answers any call."""
    try:
        return f"{name}: ok ({', '.join(json.loads(arguments or '{}'))})"
    except ValueError as exc:
        return f"error: {exc}"


messages: list[dict] = [{"role": "user", "content": "Weather and time in Paris?"}]
for _ in range(4):
    calls: dict[int, dict] = {}
    for line in chat(messages):
        line = line.strip()
        if not line.startswith(b"data:") or line == b"data: [DONE]":
            continue
        for choice in json.loads(line[5:]).get("choices") or []:
            for part in (choice.get("delta") or {}).get("tool_calls") or []:
                call = calls.setdefault(part.get("index", 0), {"id": None, "name": "", "arguments": ""})
                call["id"] = call["id"] or part.get("id")
                call["name"] += (part.get("function") or {}).get("name") or ""
                call["arguments"] += (part.get("function") or {}).get("arguments") or ""
    if not calls:
        break
    turn = [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in calls.values()
    ]
    messages.append({"role": "assistant", "content": None, "tool_calls": turn})
    messages += [
        {"role": "tool", "tool_call_id": c["id"], "content": lookup(c["name"], c["arguments"])}
        for c in calls.values()
    ]
sys.exit(0)
