#!/usr/bin/env python3
"""LiteLLM's proxy (1.102.4), `/v1/chat/completions` in front of an Anthropic model: a web search
Anthropic ran itself (`server_tool_use`) is handed to the chat client as a function call it should
run, and the finish reason is `stop` after it (toolstream: `gateway.server-call-as-client-call`,
`openai-chat.finish-contradicts-calls`).

Needs only: pip install 'litellm[proxy]==1.102.4'
Run: python this file, with the Python that has `litellm` beside it. It serves the recorded
Anthropic stream below (a web search run by Anthropic, then the answer) as the proxy's upstream on
loopback, asks the proxy on /v1/chat/completions, prints the chunks, and exits 1 while a
`web_search` reaches the client as a tool call.
Found by: toolstream check --gateway (LiteLLM's proxy) --from anthropic --to openai-chat
  --case anthropic/web-search::original::s0 (docs/gateways.md)
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

# The upstream's stream, one bytes literal per network read, as recorded.
READS = [
    b'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929","id":"msg_01OMt206W83AAviMRb3uUQ2g","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2315,"cache_creation_input_tokens":0,"cache_read_input_tokens"',
    b':0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens',
    b'":0},"output_tokens":1,"service_tier":"standard"}}}\n\nevent: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\nevent: ping\ndata: {"type": "ping"}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I\'ll search for the latest"}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" release. "}}\n\nevent: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\nevent: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_01XOxJ2DcepqLb48x0gxoemQ","name":"web_search","input":{}}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"query"}}\n\nevent: content_block_delta\ndata: ',
    b'{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\\": \\"Py"}}\n\nevent: content_block_delta\ndata: {"t',
    b'ype":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"thon 3"}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":".14 rel"}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":1,"d',
    b'elta":{"type":"input_json_delta","partial_json":"eas"}}\n\nevent: content_block',
    b'_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"e date\\"}"}}\n\nevent: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\nevent: content_block_start\ndata: {"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01XOxJ2DcepqLb48x0gxoemQ","content":[{"type":"web_search_result","title":"Python 3.14 release schedule","url":"https://peps.python.org/pep-0745/","encrypted_content":"Ev0DCioIBxgCIiQy7c8Q63ZtKE30h08hOqQNq5acbsJ2JFhTfi7XJ5JiBULXLazRWElo9926JAy2YyoaUhjxrB8kvfuVkIqQjLH3nIzz16S3QXvqtmUgr9tQosS9UqZYMjvnn1F","page_age":"October 7, 2025"}]}}\n\nevent: content_block_stop\ndata: {"type":"content_block_stop","index":2}\n\nevent: content_block_start\ndata: {"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}\n\nevent: content_block_delta\ndata: {"type"',
    b':"content_block_delta","index":3,"delta":{"type":"text_delta","text":"Python 3.14.0 was released"}}\n\nevent: content_block_delta\ndata: {"type',
    b'":"content_block_delta","index":3,"delta":{"type":"text_delta","text":" on 7 October 2025."}}\n\nevent: content_block_stop\ndata: {"type":"content_block_stop","index":3}\n\nevent: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":2315,"cache',
    b'_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":97}}\n\ne',
    b'vent: message_stop\ndata: {"type":"message_stop"}\n\n',
]
UPSTREAM_ROOT = ""
PATH = "/v1/chat/completions"
CONFIG = "model_list:\n  - model_name: upstream\n    litellm_params:\n      model: anthropic/upstream\n      api_base: {upstream}\n      api_key: sk-repro\n"
REQUEST = {
    "model": "upstream",
    "stream": True,
    "messages": [{"role": "user", "content": "When was Python 3.14 released?"}],
}


def check(found: list) -> list[str]:
    """A call the provider ran itself, handed to the client."""
    problems = []
    for chunk in found:
        for choice in chunk.get("choices", []) if isinstance(chunk, dict) else []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                name = (call.get("function") or {}).get("name")
                if name == "web_search":
                    problems.append(
                        f"web_search, run by the provider, handed to the client as call {call.get('id')}"
                    )
    return problems


def serve_upstream() -> http.server.ThreadingHTTPServer:
    """The recorded stream, read by read, to every POST (the proxy's upstream, on loopback)."""

    class Upstream(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for data in READS:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def events(body: str) -> list[dict]:
    """The JSON payloads of an SSE body (`[DONE]` as the string)."""
    out = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in block.split("\n") if line.startswith("data:"))
        if data:
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def main() -> int:
    upstream = serve_upstream()
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="litellm-proxy-repro-"))
    config = folder / "config.yaml"
    config.write_text(CONFIG.replace("{upstream}", f"http://127.0.0.1:{upstream.server_port}{UPSTREAM_ROOT}"))
    litellm = Path(sys.executable).with_name("litellm")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proxy = subprocess.Popen(
        [str(litellm), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proxy.poll() is not None or time.monotonic() > deadline:
                    print("the proxy did not start", file=sys.stderr)
                    return 2
                time.sleep(0.2)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}{PATH}",
            json.dumps(REQUEST).encode(),
            {
                "content-type": "application/json",
                "authorization": "Bearer sk-repro",
                "x-api-key": "sk-repro",
                "anthropic-version": "2023-06-01",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                body = answer.read().decode("utf-8", "replace")
        except Exception as exc:  # a connection the proxy broke mid-body is part of what is seen
            body = getattr(exc, "partial", b"").decode("utf-8", "replace") if hasattr(exc, "partial") else ""
            print(f"the answer broke: {type(exc).__name__}: {exc}")
        found = events(body)
        for event in found:
            print(json.dumps(event)[:200])
        problems = check(found)
        for problem in problems:
            print(f"BUG: {problem}")
        print("bug present" if problems else "fixed: the proxy's answer keeps the protocol")
        return 1 if problems else 0
    finally:
        os.killpg(proxy.pid, 15)
        proxy.wait(30)
        upstream.shutdown()


if __name__ == "__main__":
    sys.exit(main())
