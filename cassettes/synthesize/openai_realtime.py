"""Synthesize the OpenAI Realtime cassettes: `python cassettes/synthesize/openai_realtime.py` from
the repo root.

Shapes follow the documented Realtime server events (openai-python `types/realtime/`:
`response_output_item_added_event.py`, `response_function_call_arguments_{delta,done}_event.py`,
`response_output_item_done_event.py`, `response_done_event.py`, `realtime_response.py`;
developers.openai.com/api/docs/guides/realtime): one JSON event per WebSocket text message, each
message one network read, an `event_id` on every event, the session's own events first. The
request is the client events a program sends first (`session.update`, `conversation.item.create`,
`response.create`), kept as `{"events": [...]}`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.cassettes import format as cassettes  # noqa: E402
from harness.cassettes.format import Cassette  # noqa: E402
from harness.wire.synthesis import synthesize  # noqa: E402

OUT = ROOT / "cassettes" / "openai-realtime"
URL = "wss://api.openai.com/v1/realtime?model=gpt-realtime"
PROVENANCE = (
    "synthesized by cassettes/synthesize/openai_realtime.py from the documented Realtime server events "
    "(openai-python types/realtime/)"
)
TOOLS = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "get_time": {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]},
}


class Session:
    """Numbers events as the server does (`event_id`), one response."""

    def __init__(self, response: str) -> None:
        self.n = 0
        self.response = response

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.n += 1
        return {"type": kind, "event_id": f"event_{self.response[-6:]}{self.n:03d}", **fields}

    def call(self, index: int, item: str, call: str, name: str, pieces: list[str]) -> list[dict[str, Any]]:
        whole = "".join(pieces)
        added = {
            "id": item,
            "object": "realtime.item",
            "type": "function_call",
            "status": "in_progress",
            "name": name,
            "call_id": call,
            "arguments": "",
        }
        ids = {"response_id": self.response, "item_id": item, "output_index": index, "call_id": call}
        return [
            self.event(
                "response.output_item.added", response_id=self.response, output_index=index, item=added
            ),
            self.event("conversation.item.added", previous_item_id=None, item=added),
            *(self.event("response.function_call_arguments.delta", **ids, delta=p) for p in pieces),
            self.event("response.function_call_arguments.done", **ids, name=name, arguments=whole),
            self.event(
                "response.output_item.done",
                response_id=self.response,
                output_index=index,
                item={**added, "status": "completed", "arguments": whole},
            ),
        ]


def start(session: Session) -> list[dict[str, Any]]:
    return [
        session.event(
            "session.created",
            session={
                "type": "realtime",
                "object": "realtime.session",
                "id": "sess_C9qWmE4aXr2bT7yLpK3dN",
                "model": "gpt-realtime",
                "output_modalities": ["text"],
            },
        ),
        session.event(
            "session.updated",
            session={
                "type": "realtime",
                "object": "realtime.session",
                "id": "sess_C9qWmE4aXr2bT7yLpK3dN",
                "model": "gpt-realtime",
                "output_modalities": ["text"],
                "tools": [{"type": "function", "name": n, "parameters": p} for n, p in TOOLS.items()],
            },
        ),
        session.event(
            "response.created",
            response={
                "object": "realtime.response",
                "id": session.response,
                "status": "in_progress",
                "output": [],
            },
        ),
    ]


def done(session: Session, output: Any, status: str = "completed") -> dict[str, Any]:
    usage = {"total_tokens": 212, "input_tokens": 171, "output_tokens": 41}
    return session.event(
        "response.done",
        response={
            "object": "realtime.response",
            "id": session.response,
            "status": status,
            "status_details": None,
            "output": output,
            "usage": usage,
        },
    )


def request(prompt: str) -> dict[str, Any]:
    tools = [
        {"type": "function", "name": n, "description": f"The {n} tool.", "parameters": p}
        for n, p in TOOLS.items()
    ]
    return {
        "events": [
            {
                "type": "session.update",
                "session": {"type": "realtime", "output_modalities": ["text"], "tools": tools},
            },
            {
                "type": "conversation.item.create",
                "item": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": prompt}],
                },
            },
            {"type": "response.create"},
        ]
    }


def make(name: str, prompt: str, events: list[dict[str, Any]]) -> Cassette:
    made = synthesize(
        name,
        "openai-realtime",
        url=URL,
        body=request(prompt),
        events=events,
        provenance=PROVENANCE,
        status=101,
        request_headers={"upgrade": "websocket", "openai-beta": "realtime=v1"},
        response_headers={"upgrade": "websocket", "connection": "Upgrade"},
    )
    made.interactions[0].request.method = "GET"  # the upgrade request
    return made


def items(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["item"] for e in events if e["type"] == "response.output_item.done"]


def build() -> list[Cassette]:
    out = []
    s = Session("resp_C9qWn1Lk8sTq")
    head = start(s)
    calls = s.call(0, "item_C9qWn2Vb7dHs", "call_Hq7Xw2mZk9Tb", "get_weather", ['{"ci', 'ty":"Par', 'is"}'])
    out.append(make("single-call", "Weather in Paris?", [*head, *calls, done(s, items(calls))]))

    s = Session("resp_C9qWo4Rf3nPz")
    head = start(s)
    calls = [
        *s.call(0, "item_C9qWo5Gx1cLm", "call_Lp4Nd8sQx2Rv", "get_weather", ['{"city":', '"Paris"}']),
        *s.call(1, "item_C9qWo6Hy2dMn", "call_Tz9Wk3fBv6Yc", "get_time", ['{"timezone":', '"Europe/Paris"}']),
    ]
    out.append(
        make("parallel-calls", "Weather and time in Paris?", [*head, *calls, done(s, items(calls))])
    )

    s = Session("resp_C9qWp7Ja5eQr")
    head = start(s)
    calls = s.call(0, "item_C9qWp8Kb6fRs", "call_Vb2Mx7qLd4Ns", "get_weather", ['{"city":"', 'Lyon"}'])
    out.append(make("done-output-null", "Weather in Lyon?", [*head, *calls, done(s, None)]))

    s = Session("resp_C9qWq9Lc7gSt")
    head = start(s)
    text_item = {
        "id": "item_C9qWr0Md8hTu",
        "object": "realtime.item",
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    text = [
        s.event("response.output_item.added", response_id=s.response, output_index=0, item=text_item),
        *(
            s.event(
                "response.output_text.delta",
                response_id=s.response,
                item_id=text_item["id"],
                output_index=0,
                content_index=0,
                delta=piece,
            )
            for piece in ("Let me ", "check.")
        ),
        s.event(
            "response.output_item.done",
            response_id=s.response,
            output_index=0,
            item={
                **text_item,
                "status": "completed",
                "content": [{"type": "output_text", "text": "Let me check."}],
            },
        ),
    ]
    rate = s.event(
        "rate_limits.updated",
        rate_limits=[{"name": "tokens", "limit": 40000, "remaining": 39788, "reset_seconds": 0.318}],
    )
    calls = s.call(1, "item_C9qWr1Ne9iUv", "call_Xc5Pq1zWm8Kd", "get_time", ['{"timezone":"Asia/', 'Tokyo"}'])
    out.append(
        make("text-then-call", "Time in Tokyo?", [*head, *text, rate, *calls, done(s, items(calls))])
    )
    return out


def main() -> None:
    for made in build():
        path = cassettes.save(made, OUT / f"{made.name}.yaml")
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
