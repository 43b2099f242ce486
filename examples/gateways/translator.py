"""A small streaming gateway, for the docs and the tests (docs/gateways.md): OpenAI chat <->
Anthropic Messages, event by event, standard library only. Faithful by default; `--fault` makes it
break the translation the way real gateways have:

- `drop-switch`: the event that switches from text to a tool call is dropped (chat -> messages:
  the tool_use block's start after a text block never comes);
- `server-as-client`: a call the provider ran itself (`server_tool_use`) is handed to the client
  as a function call (messages -> chat);
- `renumber`: content blocks are numbered from 1, not 0 (chat -> messages).

    python examples/gateways/translator.py --from openai-chat --to anthropic --upstream URL --port P
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

STOP_TO_FINISH = {"tool_use": "tool_calls", "end_turn": "stop", "max_tokens": "length"}
FINISH_TO_STOP = {value: key for key, value in STOP_TO_FINISH.items()}


def sse_events(response: http.client.HTTPResponse) -> Iterator[tuple[str | None, str]]:
    """(event name, data) of each SSE event, as the upstream sends them."""
    name, data = None, []
    while True:
        line = response.readline()
        if not line:
            return
        text = line.decode("utf-8").rstrip("\r\n")
        if not text:
            if data:
                yield name, "\n".join(data)
            name, data = None, []
        elif text.startswith("event:"):
            name = text[6:].strip()
        elif text.startswith("data:"):
            data.append(text[5:].lstrip(" "))


def chat_request(body: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic request asked of an OpenAI chat upstream."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description", ""),
                "parameters": t.get("input_schema", {}),
            },
        }
        for t in body.get("tools", [])
    ]
    made = {"model": body["model"], "messages": body["messages"], "stream": True}
    return {**made, "tools": tools} if tools else made


def messages_request(body: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat request asked of an Anthropic upstream."""
    tools = [
        {
            "name": t["function"]["name"],
            "description": t["function"].get("description", ""),
            "input_schema": t["function"].get("parameters", {}),
        }
        for t in body.get("tools", [])
    ]
    made = {"model": body["model"], "max_tokens": 1024, "messages": body["messages"], "stream": True}
    return {**made, "tools": tools} if tools else made


def chat_to_messages(
    events: Iterator[tuple[str | None, str]], fault: str | None
) -> Iterator[tuple[str, Any]]:
    first = 1 if fault == "renumber" else 0
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_gw",
                "type": "message",
                "role": "assistant",
                "model": "gw",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        },
    )
    blocks = 0
    open_kind: str | None = None
    calls: dict[Any, str] = {}  # chat index -> call id
    finish = None
    for _, data in events:
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        for choice in chunk.get("choices", []):
            delta = choice.get("delta") or {}
            if delta.get("content"):
                if open_kind != "text":
                    if open_kind is not None:
                        yield (
                            "content_block_stop",
                            {"type": "content_block_stop", "index": first + blocks - 1},
                        )
                    block = {"type": "text", "text": ""}
                    yield (
                        "content_block_start",
                        {"type": "content_block_start", "index": first + blocks, "content_block": block},
                    )
                    blocks, open_kind = blocks + 1, "text"
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": first + blocks - 1,
                        "delta": {"type": "text_delta", "text": delta["content"]},
                    },
                )
            for entry in delta.get("tool_calls") or []:
                key = entry.get("index")
                new_id = entry.get("id")
                if key not in calls or (new_id and new_id != calls[key]):
                    switch = open_kind == "text"
                    if open_kind is not None:
                        yield (
                            "content_block_stop",
                            {"type": "content_block_stop", "index": first + blocks - 1},
                        )
                    calls[key] = new_id or f"toolu_gw{blocks}"
                    function = entry.get("function") or {}
                    block = {"type": "tool_use", "id": calls[key], "name": function.get("name"), "input": {}}
                    if not (switch and fault == "drop-switch"):
                        yield (
                            "content_block_start",
                            {"type": "content_block_start", "index": first + blocks, "content_block": block},
                        )
                    blocks, open_kind = blocks + 1, "tool"
                arguments = (entry.get("function") or {}).get("arguments")
                if arguments:
                    yield (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": first + blocks - 1,
                            "delta": {"type": "input_json_delta", "partial_json": arguments},
                        },
                    )
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    else:
        return  # the upstream was cut: so is the answer
    if open_kind is not None:
        yield "content_block_stop", {"type": "content_block_stop", "index": first + blocks - 1}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": FINISH_TO_STOP.get(finish, "end_turn"), "stop_sequence": None},
            "usage": {"output_tokens": 1},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def messages_to_chat(
    events: Iterator[tuple[str | None, str]], fault: str | None
) -> Iterator[tuple[None, Any]]:
    head = {"id": "chatcmpl-gw", "object": "chat.completion.chunk", "created": 0, "model": "gw"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, Any]:
        return None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    client_blocks: dict[int, int] = {}  # block index -> chat call index
    for _, data in events:
        event = json.loads(data)
        kind = event.get("type")
        if kind == "message_start":
            yield chunk({"role": "assistant", "content": ""})
        elif kind == "content_block_start":
            block = event["content_block"]
            if block["type"] == "tool_use" or (
                block["type"] == "server_tool_use" and fault == "server-as-client"
            ):
                client_blocks[event["index"]] = n = len(client_blocks)
                call = {
                    "index": n,
                    "id": block["id"],
                    "type": "function",
                    "function": {"name": block["name"], "arguments": ""},
                }
                yield chunk({"tool_calls": [call]})
        elif kind == "content_block_delta":
            delta = event["delta"]
            if delta.get("type") == "text_delta":
                yield chunk({"content": delta["text"]})
            elif delta.get("type") == "input_json_delta" and event["index"] in client_blocks:
                part = {
                    "index": client_blocks[event["index"]],
                    "function": {"arguments": delta["partial_json"]},
                }
                yield chunk({"tool_calls": [part]})
        elif kind == "message_delta":
            stop = (event.get("delta") or {}).get("stop_reason")
            yield chunk({}, STOP_TO_FINISH.get(stop, "stop"))
        elif kind == "message_stop":
            yield None, "[DONE]"
            return
        elif kind == "error":
            yield None, {"error": event.get("error")}
            return
    return


class Gateway(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    options: argparse.Namespace

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        o = self.options
        upstream = urlsplit(o.upstream)
        if o.source == "openai-chat":
            path, asked = upstream.path.rstrip("/") + "/chat/completions", chat_request(body)
            headers = {"authorization": f"Bearer {o.key}"}
        else:
            path, asked = upstream.path.rstrip("/") + "/v1/messages", messages_request(body)
            headers = {"x-api-key": o.key, "anthropic-version": "2023-06-01"}
        connection = http.client.HTTPConnection(upstream.hostname or "", upstream.port, timeout=30)
        connection.request("POST", path, json.dumps(asked), {**headers, "content-type": "application/json"})
        answer = connection.getresponse()
        if answer.status != 200:
            data = answer.read()
            self.send_response(answer.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        translate = chat_to_messages if o.source == "openai-chat" else messages_to_chat
        ended = False
        try:
            for name, payload in translate(sse_events(answer), o.fault):
                data = payload if isinstance(payload, str) else json.dumps(payload)
                text = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
                self.write_chunk(text.encode())
                ended = payload == "[DONE]" or name == "message_stop"
        except (http.client.HTTPException, OSError):
            pass
        if ended:
            self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--from", dest="source", choices=["openai-chat", "anthropic"], required=True)
    parser.add_argument("--to", dest="target", choices=["openai-chat", "anthropic"], required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--key", default="none")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--fault", choices=["drop-switch", "server-as-client", "renumber"])
    Gateway.options = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", Gateway.options.port), Gateway)
    print(f"listening on {Gateway.options.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
