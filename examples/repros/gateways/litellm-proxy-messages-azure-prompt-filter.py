#!/usr/bin/env python3
"""LiteLLM's proxy (1.102.4), `/v1/messages` in front of an Azure OpenAI chat deployment: Azure's
first chunk (`choices: []`, with its `prompt_filter_results`) ends the answer after
`message_start`: the call that follows never comes, nor `message_stop`.

Needs only: pip install 'litellm[proxy]==1.102.4'
Run: python this file, with the Python that has `litellm` beside it. It serves the recorded Azure
stream below as the proxy's upstream on loopback, asks the proxy on /v1/messages, prints the
events, and exits 1 while the answer has no tool_use block or no message_stop.
Found by: toolstream check --gateway (LiteLLM's proxy) --from openai-chat --to anthropic
  --case openai-chat/azure-prompt-filter::original::s0 (docs/gateways.md)
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
    b'data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":false,"detected":false}}}]}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_MjMmxhQos4lbqC3f7JmfTtxl","type":"function","function":',
    b'{"name":"get_weather","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null,"content_filter_results":{}}],"usage',
    b'":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\""}}]},"logprobs":null,"finish_reason":null,"content_filter_results":{}}],"usage":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"city"}}]},"logprobs":null,"finish_reason":null,"content_filter_results":{}}],"usage":null}\n\nda',
    b'ta: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-',
    b'20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\":\\""}}]},"logprobs":null,"finish_reason":null,"content_filter_results":{}}],"usage":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"Seattl"}}]},"logprobs":null,"finish_reason":null,"content_filter_results":{}}],"usage":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","sy',
    b'stem_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"e"}}]},"logpro',
    b'bs":null,"finish_reason":null,"content_filter_results":{}}],"usage":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\",\\""}}]},"logprobs":null,"finish_reason":null,"content_filter_results":{}}],"usage":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"unit"}}]},"logprobs":null,',
    b'"finish_reason":null,"content_filter_results":{}}],"usage":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"',
    b'chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\":\\""}}]},"logprobs":null,"finish_reason":null,"content_filter_results":{}}],"usage":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"fahren"}}]},"logprobs":null,"finish_reason":null,"content_filter_results":{}}],"usage":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.co',
    b'mpletion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delt',
    b'a":{"tool_calls":[{"index":0,"function":{"arguments":"heit"}}]},"logprobs":null,"finish_reason":null,"content_filter_results":{}}],"usage":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"}"}}]},"logprobs":null,"finish_reason":null,"content_filter_results":{}}],"usage":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3DwaUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[{"index":0,"delta":{},"logp',
    b'robs":null,"finish_reason":"tool_calls","content_filter_results":{}}],"usage":null}\n\ndata: {"id":"chatcmpl-oeZG3pcs1KyhzQqGZRNM3D',
    b'waUdZm8","object":"chat.completion.chunk","created":1755087116,"model":"gpt-4o-2024-11-20","system_fingerprint":"fp_ee1d74bde0","choices":[],"usage":{"prompt_tokens":90,"completion_tokens":22,"total_tokens":112,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}\n\ndata: [DONE]\n\n',
]
UPSTREAM_ROOT = "/v1"
PATH = "/v1/messages"
CONFIG = "model_list:\n  - model_name: upstream\n    litellm_params:\n      model: openai/upstream\n      api_base: {upstream}\n      api_key: sk-repro\n      use_chat_completions_api: true\n"
REQUEST = {
    "model": "upstream",
    "max_tokens": 1024,
    "stream": True,
    "messages": [{"role": "user", "content": "What is the weather in Seattle?"}],
    "tools": [
        {
            "name": "get_weather",
            "description": "Weather.",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            },
        }
    ],
}


def check(found: list) -> list[str]:
    """A call that never arrives, an answer that never ends."""
    kinds = [event.get("type") for event in found if isinstance(event, dict)]
    blocks = [
        e["content_block"].get("type")
        for e in found
        if isinstance(e, dict) and e.get("type") == "content_block_start"
    ]
    problems = []
    if "tool_use" not in blocks:
        problems.append("the get_weather call the upstream sent never arrives")
    if "message_stop" not in kinds:
        problems.append("the answer ends without message_stop")
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
