"""Warm starts for Node programs: `node SCRIPT.mjs` run per case in a worker thread of a Node
process kept running, instead of a new process per case.

A case run this way is still a fresh start of the program: each worker is its own V8 isolate with
its own module graph, so the program and its SDK are loaded and evaluated anew, with the case's
environment (`process.env` is exactly the case's), `process.argv` as `node SCRIPT ARGS` gives it,
the harness's working directory, and stdin at its end. What is saved is the process: Node's own
start, and the subreaper wrapper's, paid once per warm process instead of once per case (measured
in benchmarks/bench_clients.py and docs/clients.md).

Each warm process (`node node_warm.mjs FD`, under the `subreaper` wrapper) runs one case at a time,
so the case has the process's stdout and stderr to itself (a child it starts writes there too,
as under a cold start), and what the case does to the process (`process.abort()`, a signal to
its own pid) ends that process and is that case's exit status. `process.exit(N)` ends the worker
with N; an uncaught error or rejection is printed on stderr the way `node SCRIPT` prints it (less
the source line it points at) and exits 1. At the case's end the worker is terminated if it still
runs (a timeout, a program still running after its follow-up), every process the case started is
killed, as a cold start's tree is, and a random marker written on both pipes says where the
case's output ends. A warm process that does not answer is killed and not used again.

Only a plain `[VAR=value ...] [exec] node SCRIPT.mjs [ARG ...]` (`harness.processes.command`; no
options to node, no `NODE_*` assignment, an existing `.mjs` file) runs warm: `process.argv[1]`,
`require.main` and the like would differ for anything else. The warm processes are a
`NodeWarmStart`'s, ended by its `close()`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from harness.processes import subreaper
from harness.processes.capture import Captured
from harness.processes.command import parse

__all__ = ["NodeCommand", "NodeWarmStart", "WarmRun", "node_program"]

RUNNER = Path(__file__).with_name("node_warm.mjs")
# V8 flags of a warm process (process-wide, so its workers run with them; they change how fast
# code runs, never what it does). Each case is a new isolate that would compile undici's HTTP
# parser (WebAssembly) again with the optimizing tier and optimize the SDK's JavaScript as soon as
# it warms up, work a short run never earns back: Liftoff alone for WebAssembly, and ten times the
# default budget before JavaScript is optimized (hot code still is). Measured: 0.30 -> 0.20 s of
# CPU per case of examples/clients/node-openai (benchmarks/bench_clients.py).
V8_FLAGS = ("--liftoff-only", "--interrupt-budget=675840")
_ANSWER_S = 5.0  # how long a warm process gets to answer (a start, a kill, a flush)


@dataclass(frozen=True, slots=True)
class NodeCommand:
    """`[VAR=value ...] [exec] node SCRIPT ARGS` taken apart."""

    node: str  # the executable, as found on PATH
    script: str  # absolute
    args: tuple[str, ...]
    assignments: tuple[tuple[str, str], ...]


def node_program(command: str | Sequence[str]) -> NodeCommand | None:
    """The Node program `command` runs, when it is one that can run warm (see the module
    docstring); None for anything else."""
    parsed = parse(command)
    if parsed is None or len(parsed.argv) < 2:
        return None
    if any(name.startswith("NODE_") for name, _ in parsed.assignments):
        return None  # it changes how node itself starts
    words = parsed.argv
    if Path(words[0]).name != "node" or not words[1].endswith(".mjs"):
        return None
    node = shutil.which(words[0])
    script = os.path.abspath(words[1])
    if node is None or not os.path.isfile(script):
        return None
    return NodeCommand(node, script, tuple(words[2:]), parsed.assignments)


class _Pipe:
    """One of a warm process's output pipes, read by a thread into the running case's `Captured`
    up to the case's marker (held back by the marker's length, which may be arriving split)."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.sink: Captured | None = None
        self.marker = b""
        self.ended = threading.Event()  # the marker was read, or the pipe's end
        self._held = b""
        self._lock = threading.Lock()
        self._fd = pipe.fileno()
        self._thread = threading.Thread(target=self._read, name="toolstream-node-output", daemon=True)
        self._thread.start()

    def begin(self, sink: Captured, marker: bytes) -> None:
        with self._lock:
            self.sink, self.marker, self._held = sink, marker, b""
            self.ended.clear()

    def _read(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while data := os.read(self._fd, 1 << 16):
                self._feed(data)
        with self._lock:
            if self.sink is not None and self._held:
                self.sink.add(self._held)
            self._held = b""
        self.ended.set()

    def _feed(self, data: bytes) -> None:
        with self._lock:
            if self.sink is None or self.ended.is_set():
                return  # between cases: nothing of a case's
            data = self._held + data
            at = data.find(self.marker)
            if at >= 0:
                self.sink.add(data[:at])
                self._held = b""
                self.ended.set()
                return
            keep = len(self.marker) - 1
            self.sink.add(data[: len(data) - keep])
            self._held = data[len(data) - keep :]


class _Process:
    """One warm Node process (under the subreaper wrapper) and its pipes; one case at a time."""

    def __init__(self, node: str, env: Mapping[str, str], answer: float) -> None:
        ours, theirs = socket.socketpair()
        try:
            argv = [node, *V8_FLAGS, str(RUNNER), str(theirs.fileno())]
            wrapped = subreaper.CONTAINED
            self.wrapped = wrapped
            self.process = subprocess.Popen(
                subreaper.contained(argv) if wrapped else argv,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        finally:
            theirs.close()
        self.control = ours
        self.messages = ours.makefile("rb")
        assert self.process.stdout is not None and self.process.stderr is not None
        self.out, self.err = _Pipe(self.process.stdout), _Pipe(self.process.stderr)
        self.exit_code: int | None = None
        self.unsupported: str | None = None  # what the running case called that a worker cannot do
        self.exited = threading.Event()
        self.broken = False
        hello = self._receive(answer) if answer > 0 else None
        if hello is None or hello.get("op") != "ready":
            self.end()
            raise OSError("the warm Node process did not start")
        self.pid = int(hello["pid"])
        self._listener = threading.Thread(target=self._listen, name="toolstream-node-control", daemon=True)
        self._listener.start()

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        self.control.settimeout(timeout)
        try:
            line = self.messages.readline()
        except OSError:
            return None
        finally:
            self.control.settimeout(None)
        if not line:
            return None
        message = json.loads(line)
        return message if isinstance(message, dict) else None

    def _listen(self) -> None:
        while True:
            try:
                line = self.messages.readline()
            except (OSError, ValueError):
                line = b""
            if not line:  # the process ended (a case aborted it, a signal): its status is the case's
                self.broken = True
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(_ANSWER_S)
                code = self.process.poll()
                self.exit_code = code if code is not None else 128 + signal.SIGKILL
                self.exited.set()
                return
            message = json.loads(line)
            if message.get("op") == "unsupported":  # the case called what a worker cannot do
                self.unsupported = str(message.get("what", "?"))
            elif message.get("op") == "exit":
                code = message.get("code")
                self.exit_code = code if isinstance(code, int) else 1
                self.exited.set()

    def send(self, message: dict[str, Any]) -> bool:
        try:
            self.control.sendall(json.dumps(message).encode() + b"\n")
        except OSError:
            self.broken = True
            return False
        return True

    def end_strays(self) -> None:
        """Kill what the last case started: every process below the wrapper but the warm one."""
        if not subreaper.CONTAINED or self.broken:
            return
        strays = [pid for pid in subreaper.descendants(self.process.pid) if pid != self.pid]
        for pid in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def end(self) -> None:
        self.broken = True
        with contextlib.suppress(OSError):
            self.control.close()
        subreaper.stop(self.process, wrapped=self.wrapped, grace=2.0)
        for pipe in (self.process.stdout, self.process.stderr):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()


class WarmRun:
    """One case running in a warm process, waited on like a `subprocess.Popen` (`poll`, `wait`);
    `finish()` ends it and gives its stdout and stderr."""

    def __init__(
        self,
        pool: _Pool,
        process: _Process,
        program: NodeCommand,
        env: Mapping[str, str],
        out: Captured,
        err: Captured,
    ) -> None:
        self._pool, self._process = pool, process
        self.out, self.err = out, err
        self._marker = secrets.token_hex(16).encode()
        process.exited.clear()
        process.exit_code = None
        process.unsupported = None
        process.out.begin(self.out, self._marker)
        process.err.begin(self.err, self._marker)
        worker_env = {**env, **dict(program.assignments)}
        sent = process.send(
            {
                "op": "run",
                "script": program.script,
                "url": Path(program.script).as_uri(),
                "argv": list(program.args),
                "env": worker_env,
            }
        )
        if not sent:
            process.exited.set()
            process.exit_code = 128 + signal.SIGKILL

    @property
    def refused(self) -> str | None:
        """What the case did that a worker cannot do as a process does (see node_warm.mjs)."""
        return self._process.unsupported

    def poll(self) -> int | None:
        return self._process.exit_code if self._process.exited.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._process.exited.wait(timeout):
            raise subprocess.TimeoutExpired("node", timeout or 0.0)
        return self._process.exit_code if self._process.exit_code is not None else 1

    def finish(self) -> None:
        """End the case (its worker and every process it started) and read the rest of its output;
        the warm process goes back to the pool, or is ended when it did not answer."""
        process = self._process
        healthy = not process.broken
        if healthy and not process.exited.is_set():
            process.send({"op": "kill"})
            healthy = process.exited.wait(_ANSWER_S) and not process.broken
        if healthy:
            process.end_strays()
            healthy = process.send({"op": "flush", "marker": self._marker.decode()})
        if healthy:
            until = time.monotonic() + _ANSWER_S
            pipes = (process.out, process.err)
            healthy = all(pipe.ended.wait(max(0.0, until - time.monotonic())) for pipe in pipes)
            healthy = healthy and not process.broken
        if not healthy:
            process.end()  # its pipes reach their end: the readers hand over what is left
            for pipe in (process.out, process.err):
                pipe.ended.wait(_ANSWER_S)
        process.out.sink = process.err.sink = None
        self._pool.release(process, healthy)


class _Pool:
    """Idle warm processes by (node, working directory, the environment they started in)."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, str, str], list[_Process]] = {}
        self._keys: dict[int, tuple[str, str, str]] = {}
        self._lock = threading.Lock()

    def acquire(self, node: str, deadline: float) -> _Process:
        key = (node, os.getcwd(), json.dumps(sorted(os.environ.items())))
        with self._lock:
            idle = self._idle.get(key, [])
            while idle:
                process = idle.pop()
                if not process.broken and process.process.poll() is None:
                    return process
                process.end()
        process = _Process(node, os.environ, max(0.0, min(_ANSWER_S, deadline - time.monotonic())))
        with self._lock:
            self._keys[id(process)] = key
        return process

    def release(self, process: _Process, healthy: bool) -> None:
        with self._lock:
            key = self._keys.get(id(process))
            if healthy and key is not None and not process.broken:
                self._idle.setdefault(key, []).append(process)
                return
            self._keys.pop(id(process), None)
        process.end()

    def close(self) -> None:
        """End every idle warm process (one running a case ends when it is released)."""
        with self._lock:
            idle = [process for processes in self._idle.values() for process in processes]
            self._idle.clear()
            for process in idle:
                self._keys.pop(id(process), None)
        for process in idle:
            process.end()


class NodeWarmStart:
    """Warm starts of one Node program: its kept Node processes, one case at a time each."""

    def __init__(self, program: NodeCommand, say: Callable[[str], None] | None = None) -> None:
        self.program = program
        self.say = say
        self.off: str | None = None  # why this program now starts cold
        self._pool = _Pool()
        self._lock = threading.Lock()

    def refuse(self, why: str) -> None:
        """The program does something a worker cannot honour (`why`): it runs cold from now on."""
        with self._lock:
            if self.off is not None:
                return
            self.off = why
        if self.say is not None:
            self.say(f"node {self.program.script}: runs cold from now on: {why}")

    def start(self, env: Mapping[str, str], out: Captured, err: Captured, deadline: float) -> WarmRun | None:
        """Start one case with `env` in a warm process, its output read into `out` and `err`;
        None when no warm process could be had by `deadline` (the caller then starts it cold)."""
        if self.off is not None:
            return None
        try:
            process = self._pool.acquire(self.program.node, deadline)
        except OSError:
            return None
        return WarmRun(self._pool, process, self.program, env, out, err)

    def close(self) -> None:
        """End the idle warm processes (one running a case ends when that case finishes)."""
        self._pool.close()
