#!/usr/bin/env python3
"""LiteLLM's proxy (1.102.4), `/v1/messages` in front of an OpenAI chat model: the text block is
still open when the tool block after it starts, and is stopped after it (Anthropic's protocol: a
block starts only after the previous one stopped; toolstream: `anthropic.block-overlap`).

Needs only: pip install 'litellm[proxy]==1.102.4'
Run: python this file, with the Python that has `litellm` beside it. It serves the recorded OpenAI
chat stream below (text, then a call) as the proxy's upstream on loopback, asks the proxy the same
question on /v1/messages, prints the events, and exits 1 while a block starts with another open.
Found by: toolstream check --gateway (LiteLLM's proxy) --from openai-chat --to anthropic
  --case openai-chat/text-then-call::original::s0 (docs/gateways.md)
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
    b'data: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1',
    b'755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"HStNfUN5IBuCT"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","',
    b'created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"content":"Let"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"UGC"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"content":" me"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"J7PF38iyOVCO"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"content":" look"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"762ujLGu0ojrv"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"content":" that"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscati',
    b'on":"o0jcan"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chu',
    b'nk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"content":" file"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"f"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model',
    b'":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"content":" up"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"FgWF"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"content":" for"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"5wKg8UGYh893"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"content":" you."},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"3M5z1"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_h50QMyZiTfBTfDcaff0R69uj","type":"function","function":{"name":"read_file","a',
    b'rguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"JultVKBIGGl"}',
    b'\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\""}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscat',
    b'ion":"SOwY"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"path"}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"sNX"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\":\\""}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"is3viq6A"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"docs"}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"au8Zn"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","creat',
    b'ed":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_0787',
    b'1e2ad8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"/"}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"IwvIKxc"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerpr',
    b'int":"fp_07871e2ad8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"instal"}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"1G1R"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"l"}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"Hu30uwoSJidBv"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"."}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"lHoQjXPc"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"',
    b'md"}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"gL1N"}\n\ndata: {"id":"c',
    b'hatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"V8ERAcHXW"',
    b'}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null,"obfuscation":"IBNe65NFw"}\n\ndata: {"id":"chatcmpl-5Ai01DA1Rw2x20SRP0mc4W49pRh5V","object":"chat.completion.chunk","created":1755360913,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":31,"total_tokens":151,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"obfuscation":"U3aGDytnQ4WJagL"}\n\ndata: [DONE]\n\n',
]
UPSTREAM_ROOT = "/v1"
PATH = "/v1/messages"
CONFIG = "model_list:\n  - model_name: upstream\n    litellm_params:\n      model: openai/upstream\n      api_base: {upstream}\n      api_key: sk-repro\n      use_chat_completions_api: true\n"
REQUEST = {
    "model": "upstream",
    "max_tokens": 1024,
    "stream": True,
    "messages": [{"role": "user", "content": "Tell me what you will do, then read docs/install.md."}],
    "tools": [
        {
            "name": "read_file",
            "description": "Read a file.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ],
}


def check(found: list) -> list[str]:
    """Where a block starts while another is open."""
    open_blocks: set = set()
    problems = []
    for event in found:
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "content_block_start":
            if open_blocks:
                problems.append(f"block {event['index']} starts while {sorted(open_blocks)} open")
            open_blocks.add(event["index"])
        elif kind == "content_block_stop":
            open_blocks.discard(event["index"])
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
