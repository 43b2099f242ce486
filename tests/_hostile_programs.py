"""Hostile client programs: each does what a warm start could get wrong (tests/test_processes_warm.py
runs them warm and cold through `check --client`; the slow lane's fuzz harness runs them too).

`HOSTILE_PYTHON` and `HOSTILE_NODE`: name -> the files of the program's folder (`prog.py` or
`prog.mjs`); `SITE`: the modules of the interpreter's site-packages the Python ones import (so a
zygote preloads them); `COLD`: each program's verdict cold, where not `pass`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "examples" / "clients" / "python-stdlib" / "agent.py"
# Three: the first warm run learns what to preload, the second is forked with it, the third after
# the second's end (which ends every process below the zygote).
CASES = (
    "openai-chat/single-call::original::s0",
    "openai-chat/parallel-2::original::s0",
    "openai-chat/no-arguments::original::s0",
)

# Each program checks what a warm start could get wrong (exit 3 when it did), then runs the
# standard-library agent loop, which passes both cases. `{agent}` is that loop's path.
_THEN = "import runpy\nrunpy.run_path({agent!r}, run_name='__main__')\n"
HOSTILE_PYTHON: dict[str, dict[str, str]] = {
    # The program's own module named like one the zygote has imported.
    "own-sysconfig": {
        "sysconfig.py": "MINE = True\n",
        "prog.py": "import sys, sysconfig\nif not getattr(sysconfig, 'MINE', False): sys.exit(3)\n" + _THEN,
    },
    "own-signal": {
        "signal.py": "MINE = True\n",
        "prog.py": "import sys, signal\nif not getattr(signal, 'MINE', False): sys.exit(3)\n" + _THEN,
    },
    # A module (site-packages: preloaded) that sees sys.argv and __main__ at import.
    "argv-at-import": {
        "prog.py": "import sys, hostile_argv\nif hostile_argv.SEEN != sys.argv[0]: sys.exit(3)\n" + _THEN,
    },
    # Modules that keep the endpoint read at import by ways `os.environ` does not watch; the
    # program makes its requests with what they kept.
    **{
        f"env-{way}": {
            "prog.py": f"import os, hostile_env_{way} as kept\nos.environ['OPENAI_BASE_URL'] = kept.SEEN\n"
            + _THEN
        }
        for way in ("environb", "data", "posix", "proc")
    },
    # The program itself reads its environment from /proc.
    "env-proc-at-run": {
        "prog.py": (
            "import os\n"
            "raw = open('/proc/self/environ').read().split('\\0')\n"
            "seen = dict(e.split('=', 1) for e in raw if '=' in e)\n"
            "os.environ['OPENAI_BASE_URL'] = seen['OPENAI_BASE_URL']\n" + _THEN
        )
    },
    # A module that writes to os.environ at import.
    "env-write-at-import": {
        "prog.py": "import os, sys, hostile_envwrite\nif os.environ.get('HOSTILE_SET') != '1': sys.exit(3)\n"
        + _THEN,
    },
    # A module that starts a helper process at import.
    "helper-at-import": {
        "prog.py": "import os, sys, hostile_helper\ntry:\n    os.kill(hostile_helper.PID, 0)\n"
        "except ProcessLookupError:\n    sys.exit(3)\n" + _THEN,
    },
    # A file left open with its buffer unwritten: written at exit, as the interpreter does.
    "unflushed-file": {
        "prog.py": "import os\nLEFT = open(os.environ['HOSTILE_FILE'], 'a')\nLEFT.write('written\\n')\n"
        + _THEN,
    },
}
# The modules of the interpreter's site-packages the programs above import.
SITE = {
    "hostile_argv.py": "import sys\nSEEN = sys.argv[0]\n",
    "hostile_env_environb.py": "import os\nSEEN = os.environb[b'OPENAI_BASE_URL'].decode()\n",
    "hostile_env_data.py": "import os\nSEEN = os.environ._data[b'OPENAI_BASE_URL'].decode()\n",
    "hostile_env_posix.py": "import posix\nSEEN = posix.environ[b'OPENAI_BASE_URL'].decode()\n",
    "hostile_env_proc.py": (
        "raw = open('/proc/self/environ', 'rb').read().split(b'\\0')\n"
        "SEEN = dict(e.split(b'=', 1) for e in raw if b'=' in e)[b'OPENAI_BASE_URL'].decode()\n"
    ),
    "hostile_envwrite.py": "import os\nos.environ['HOSTILE_SET'] = '1'\n",
    "hostile_helper.py": "import subprocess\nPID = subprocess.Popen(['sleep', '30']).pid\n",
}

# A Node agent on `fetch` (one request for the stream, the follow-up with the calls by index).
_NODE_AGENT = r"""
const base = process.env.OPENAI_BASE_URL;
const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }];
const messages = [{ role: "user", content: "Weather?" }];
const chat = async (messages) => (await fetch(`${base}/chat/completions`, {
  method: "POST", headers: { "content-type": "application/json" },
  body: JSON.stringify({ model: "m", stream: true, tools, messages }),
})).text();
const calls = [];
for (const line of (await chat(messages)).split("\n")) {
  if (!line.startsWith("data: ") || line.startsWith("data: [DONE]")) continue;
  for (const part of JSON.parse(line.slice(6)).choices?.[0]?.delta?.tool_calls ?? []) {
    const fresh = { id: null, type: "function", function: { name: "", arguments: "" } };
    const call = (calls[part.index ?? 0] ??= fresh);
    call.id ??= part.id;
    call.function.name += part.function?.name ?? "";
    call.function.arguments += part.function?.arguments ?? "";
  }
}
messages.push({ role: "assistant", content: null, tool_calls: calls.filter(Boolean) });
for (const call of calls.filter(Boolean)) {
  messages.push({ role: "tool", tool_call_id: call.id, content: "ok" });
}
await chat(messages);
"""
HOSTILE_NODE: dict[str, dict[str, str]] = {
    "node-chdir": {"prog.mjs": "import os from 'node:os';\nprocess.chdir(os.tmpdir());\n" + _NODE_AGENT},
    "node-umask": {"prog.mjs": "process.umask(0o022);\n" + _NODE_AGENT},
    # 8 MB ending in a report, then an exit: a process loses the report (no follow-up: an error).
    "node-8mb-exit": {
        "prog.mjs": "const report = JSON.stringify({ tool_calls: [], text: '' });\n"
        "process.stdout.write('x'.repeat(8 << 20) + '\\n' + report + '\\n');\nprocess.exit(0);\n"
    },
}
COLD = {"node-8mb-exit": "error"}


def python_site(root: Path) -> Path:
    """A virtualenv whose site-packages holds `SITE`; its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    (site,) = root.glob("lib/python*/site-packages")
    for name, text in SITE.items():
        (site / name).write_text(text)
    return root / "bin" / "python"


def write_program(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text.replace("{agent!r}", repr(str(AGENT))))
    return folder / ("prog.mjs" if "prog.mjs" in files else "prog.py")
