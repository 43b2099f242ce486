"""Warm starts for Python client programs: one preloaded interpreter per worker, forked per case.

A client command that is a Python program (`python agent.py ARGS`, `/venv/bin/python agent.py`,
`python -m module`, optionally after `exec` and `NAME=value` words; see `python_program`) pays
its interpreter's and its libraries' imports once per worker instead of once per case. Each
worker thread gets a zygote (`zygote.py`, run by the program's own interpreter, under the
`subreaper` wrapper like any run) that imports what the program imported, and forks it per case:
the child gets the environment, argv, cwd, stdin, stdout and stderr a cold start would (the
shell's and the interpreter's own additions to the environment included), its own session, and
runs the script fresh as `__main__`. The zygote is a child subreaper that ends the run's whole
tree when it exits or is stopped, so a warm run is watched, timed out and killed as a cold one
is (`PythonWarmStart.start` gives a `Run`, as `run.start_cold` does).

What to preload is learned: each run reports the standard-library and site-packages modules it
imported (never the program's own folder's), the zygote imports them before its next fork, and
the list is kept per program in the cache (`warm/` under `$TOOLSTREAM_CACHE`), keyed by the
interpreter and the script's path, size and modification time. A module that reads a per-case
variable (OPENAI_BASE_URL, ...) from `os.environ` while it is imported, or leaves a thread
running, is never preloaded (the zygote is replaced without it); a zygote that cannot start or
preload, or that stops answering (a program that stopped or killed its parent), is replaced;
after a few, its program runs cold, and `say` tells so once. Every wait of a start is within the
case's deadline.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from harness import cache
from harness.processes import subreaper
from harness.processes.capture import Captured
from harness.processes.command import parse
from harness.processes.run import STOP_GRACE, PipedRun

__all__ = ["Forked", "PythonProgram", "PythonWarmStart", "python_program"]

ZYGOTE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote.py")
START_TIMEOUT = 30.0  # seconds for a zygote to start and answer
PRELOAD_TIMEOUT = 180.0  # seconds for it to import what was learned
_RESTARTS = 5  # zygotes replaced (unsafe modules, no answer) before the program runs cold
_INTERPRETER = re.compile(r"python(\d+(\.\d+)?)?")


@dataclass(frozen=True)
class PythonProgram:
    """A client command that runs a Python program: its interpreter, its script or module, the
    argv it sees, and the variables the command line sets."""

    interpreter: str  # as written: the shell finds it on PATH as the zygote's start does
    script: str | None
    module: str | None
    argv: tuple[str, ...]  # the program's sys.argv (for `-m`: the module name, then its args)
    command_line: tuple[str, ...]  # the interpreter's whole command line (sys.orig_argv)
    assignments: dict[str, str] = field(default_factory=dict)

    def cache_key(self) -> str | None:
        """What the learned modules are kept under; None when the program cannot be found."""
        found = shutil.which(self.interpreter)
        if found is None:
            return None
        parts = [os.path.realpath(found), self.interpreter]
        if self.script is not None:
            try:
                stat = os.stat(self.script)
            except OSError:
                return None
            parts += [os.path.realpath(self.script), str(stat.st_size), str(stat.st_mtime_ns)]
        else:
            parts += [f"-m {self.module}", os.getcwd()]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def python_program(command: str | Sequence[str]) -> PythonProgram | None:
    """The Python program `command` runs, or None when it is anything else (shell syntax, other
    interpreter options, a program that is not a Python interpreter): that one starts cold."""
    parsed = parse(command)
    if parsed is None:
        return None
    words, assignments = list(parsed.argv), parsed.environment
    if len(words) < 2 or not _INTERPRETER.fullmatch(os.path.basename(words[0])):
        return None
    interpreter, rest = words[0], words[1:]
    if rest[0] == "-m" and len(rest) >= 2 and re.fullmatch(r"[\w.]+", rest[1]):
        return PythonProgram(interpreter, None, rest[1], tuple(rest[1:]), tuple(words), assignments)
    if rest[0].startswith("-") or not os.path.isfile(rest[0]):
        return None  # interpreter options, stdin, a folder or a zip: left to the interpreter
    return PythonProgram(interpreter, rest[0], None, tuple(rest), tuple(words), assignments)


def _left(limit: float, deadline: float) -> float:
    """Seconds to wait: `limit`, or what is left before `deadline` (monotonic) when that is less."""
    return max(0.0, min(limit, deadline - time.monotonic()))


class ZygoteError(Exception):
    """A zygote did not start, answer or preload: its program runs cold."""


class _Zygote:
    """The harness's side of one zygote: its process (under the subreaper wrapper), its socket."""

    def __init__(
        self, program: PythonProgram, env: dict[str, str], case_keys: Sequence[str], deadline: float
    ) -> None:
        self.program = program
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.control = ours
        self.buffer = b""
        self.loaded: set[str] = set()
        self.output = Captured(16 * 1024)
        argv = ["/bin/sh", "-c", 'exec "$@"', "sh", program.interpreter, ZYGOTE, str(theirs.fileno())]
        try:
            self.process = subprocess.Popen(
                subreaper.contained(argv),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        finally:
            theirs.close()
        self._reader = threading.Thread(
            target=self._read_output, name="toolstream-zygote-output", daemon=True
        )
        self._reader.start()
        script = os.path.abspath(program.script) if program.script is not None else None
        try:
            setup = {"op": "setup", "script": script, "module": program.module, "case_keys": list(case_keys)}
            self.send({**setup, "argv": list(program.argv), "orig_argv": list(program.command_line)})
            hello = self.receive(_left(START_TIMEOUT, deadline))
            if hello.get("cold"):
                raise ZygoteError(str(hello["cold"]))
            started = hello.get("environ")
            if not isinstance(started, dict) or hello.get("threads") != 1:
                raise ZygoteError(f"the zygote started with {hello.get('threads')} threads")
        except BaseException:
            self.close()
            raise
        # What the shell and the interpreter add to (or take from) the environment they are given.
        self.added = {k: str(v) for k, v in started.items() if env.get(k) != v}
        self.removed = [k for k in env if k not in started]

    def _read_output(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        with contextlib.suppress(OSError, ValueError):
            while data := os.read(stream.fileno(), 1 << 16):
                self.output.add(data)

    def send(self, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
        data = json.dumps(message).encode() + b"\n"
        try:
            sent = socket.send_fds(self.control, [data], list(fds)) if fds else 0
            self.control.sendall(data[sent:])
        except OSError as exc:
            raise ZygoteError(f"the zygote is gone ({exc.strerror or exc}){self._said()}") from exc

    def receive(self, timeout: float | None) -> dict[str, Any]:
        """The zygote's next message; ZygoteError when it ends or says nothing in `timeout`."""
        message = self.next(timeout)
        if message is None:
            raise ZygoteError(f"the zygote did not answer in {timeout:g} s{self._said()}")
        return message

    def next(self, timeout: float | None) -> dict[str, Any] | None:
        """The next message, None when none came in `timeout` seconds (0: only what is there)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self.control], [], [], left)[0]:
                return None
            try:
                data = self.control.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                raise ZygoteError(f"the zygote ended{self._said()}")
            self.buffer += data
        line, _, self.buffer = self.buffer.partition(b"\n")
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ZygoteError("the zygote said something that is not a message")
        return message

    def _said(self) -> str:
        said = self.output.text.strip()
        return f": {said.splitlines()[-1]}" if said else ""

    def preload(self, modules: Sequence[str], models: Sequence[str], deadline: float) -> dict[str, str]:
        """Import `modules` in the zygote and build `models`; the unsafe ones it stopped at (then it
        must be replaced)."""
        wanted = [name for name in modules if name not in self.loaded]
        built = [name for name in models if name not in self.loaded]
        if not wanted and not built:
            return {}
        self.send({"op": "preload", "modules": wanted, "models": built})
        answer = self.receive(_left(PRELOAD_TIMEOUT, deadline))
        self.loaded.update(wanted, built)
        unsafe = answer.get("unsafe") or {}
        if not unsafe and answer.get("threads") != 1:
            raise ZygoteError(f"the zygote has {answer.get('threads')} threads after preloading")
        return {str(k): str(v) for k, v in unsafe.items()}

    def fork(self, env: Mapping[str, str], pool: PythonWarmStart, deadline: float) -> Forked:
        """Start one run: the child's environment is `env` as a cold start would see it."""
        program = self.program
        child_env = {**env, **program.assignments, **self.added}
        for name in self.removed:
            child_env.pop(name, None)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            request = {
                "op": "run",
                "env": child_env,
                "argv": list(program.argv),
                "orig_argv": list(program.command_line),
                "cwd": os.getcwd(),
            }
            self.send(request, [out_w, err_w])
        except BaseException:
            for fd in (out_r, err_r):
                os.close(fd)
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
        answer = self.receive(_left(START_TIMEOUT, deadline))
        while "exit" in answer:  # a run given up on (its stop outlasted the wait) ended late
            answer = self.receive(_left(START_TIMEOUT, deadline))
        if "pid" not in answer:
            for fd in (out_r, err_r):
                os.close(fd)
            raise ZygoteError(str(answer.get("error", "the zygote did not start the run")))
        return Forked(
            self, pool, int(answer["pid"]), open(out_r, "rb", buffering=0), open(err_r, "rb", buffering=0)
        )

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.control.close()
        subreaper.stop(self.process, wrapped=subreaper.CONTAINED, grace=2.0)
        self._reader.join(1.0)
        if self.process.stdout is not None:
            with contextlib.suppress(OSError):
                self.process.stdout.close()


class Forked(subprocess.Popen[bytes]):
    """A run forked by a zygote, as the `Popen` that `program._run` watches: `poll` and `wait`
    read its exit from the zygote (which reports it once the run's tree has ended), SIGTERM asks
    the zygote to end the tree (as the `subreaper` wrapper does for a cold run)."""

    def __init__(
        self, zygote: _Zygote, pool: PythonWarmStart, pid: int, stdout: IO[bytes], stderr: IO[bytes]
    ) -> None:
        # No `Popen.__init__`: the process exists already, and it is the zygote's child.
        self.args = list(zygote.program.command_line)
        self.pid = pid
        self.returncode: Any = None
        self.stdin = None
        self.stdout = stdout
        self.stderr = stderr
        self._child_created = False
        self._zygote = zygote
        self._pool = pool

    def poll(self) -> int | None:
        if self.returncode is None:
            self._await(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not self._await(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode

    def _await(self, timeout: float | None) -> bool:
        """Whether the run's exit has come (within `timeout` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                message = self._zygote.next(left)
            except (ZygoteError, ValueError):
                self._pool.lost(self._zygote)
                self.returncode = 128 + 9  # the zygote is gone, and its subreaper wrapper ended the tree
                return True
            if message is None:
                return False
            if "exit" in message:
                self.returncode = int(message["exit"])
                self._pool.learn(message.get("modules") or [], message.get("models") or [])
        return True

    def send_signal(self, sig: int) -> None:
        if self.returncode is not None:
            return
        if sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(ZygoteError):
                self._zygote.send({"op": "stop"})
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def abandon(self) -> None:
        """The zygote did not report the run's end (stopped, or too busy to answer): it is replaced,
        its subreaper wrapper ending its whole tree, this run's with it."""
        if self.returncode is None:
            self._pool.lost(self._zygote, failed=True)
            self.returncode = 128 + signal.SIGKILL

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
        self.send_signal(signal.SIGTERM)


class _ForkedRun(PipedRun):
    """A forked run as a `Run`: its end asks the zygote to end the run's tree; a zygote that does
    not answer in time is replaced (its wrapper ends everything below it)."""

    process: Forked

    def finish(self) -> None:
        forked = self.process
        if forked.poll() is None:
            forked.terminate()
            try:
                forked.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                forked.abandon()
        super().finish()


class PythonWarmStart:
    """Warm starts of one Python program: a zygote per worker thread, and what they learned to
    preload. `start` gives a run forked from this thread's zygote, or None (start it cold)."""

    def __init__(
        self,
        program: PythonProgram,
        env: dict[str, str],
        case_keys: Sequence[str],
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.program = program
        self.env = env
        self.case_keys = list(case_keys)
        self.say = say
        self.key = program.cache_key()
        self.lock = threading.Lock()
        self.local = threading.local()
        self.zygotes: list[_Zygote] = []
        self.modules: list[str] = []
        self.models: list[str] = []  # pydantic models, `module:qualname`, whose first use a run paid
        self.unsafe: dict[str, str] = {}
        self.off: str | None = None  # why this program now starts cold
        self.failures = 0  # zygotes lost for not answering, one after another
        self._known: set[str] = set()
        self._changed = False
        self._load()

    def start(self, env: Mapping[str, str], out: Captured, err: Captured, deadline: float) -> PipedRun | None:
        """One run forked with `env` (as a cold start would see it), its output read into `out`
        and `err`; None when this program starts cold (see `off`). Waits no later than `deadline`."""
        zygote = self.slot(deadline)
        if zygote is None:
            return None
        try:
            forked = zygote.fork(env, self, deadline)
        except (ZygoteError, OSError, ValueError) as exc:
            self.lost(zygote, failed=True, why=str(exc))
            return None
        return _ForkedRun(forked, out, err, wrapped=True)

    def _path(self) -> str | None:
        return None if self.key is None else str(cache.home() / "warm" / f"{self.key}.json")

    def _load(self) -> None:
        path = self._path()
        if path is None:
            return
        try:
            with open(path, encoding="utf-8") as stored:
                data = json.load(stored)
            modules, models, unsafe = data["modules"], data["models"], data["unsafe"]
        except (OSError, ValueError, KeyError, TypeError):
            return
        if isinstance(unsafe, dict):
            self.unsafe = {str(k): str(v) for k, v in unsafe.items()}
        if isinstance(modules, list) and isinstance(models, list):
            self.learn([str(name) for name in modules], [str(name) for name in models])
        self._changed = False

    def save(self) -> None:
        path = self._path()
        if path is None or not self._changed:
            return
        with contextlib.suppress(OSError):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            temporary = f"{path}.{os.getpid()}.{threading.get_ident()}"
            with open(temporary, "w", encoding="utf-8") as out:
                json.dump({"modules": self.modules, "models": self.models, "unsafe": self.unsafe}, out)
            os.replace(temporary, path)

    def learn(self, modules: Sequence[str], models: Sequence[str] = ()) -> None:
        """Add what a run imported, and the models it built, to what the zygotes preload (the
        unsafe ones left out)."""
        with self.lock:
            self.failures = 0  # a run came back: its zygote answers
            for name in modules:
                if name not in self._known and name.partition(".")[0] not in self.unsafe:
                    self._known.add(name)
                    self.modules.append(name)
                    self._changed = True
            for name in models if ":models" not in self.unsafe else ():
                if name not in self._known and name.partition(".")[0] not in self.unsafe:
                    self._known.add(name)
                    self.models.append(name)
                    self._changed = True

    def lost(self, zygote: _Zygote, *, failed: bool = False, why: str = "") -> None:
        """A zygote that ended or broke: the next run on its worker starts a new one. `failed`: it
        stopped answering; after `_RESTARTS` of those one after another, the program runs cold."""
        if getattr(self.local, "zygote", None) is zygote:
            self.local.zygote = None
        with self.lock:
            if zygote in self.zygotes:
                self.zygotes.remove(zygote)
            if failed:
                self.failures += 1
                if self.failures >= _RESTARTS:
                    self._turn_off(why or "its zygote stopped answering (the program stops or kills it)")
        zygote.close()

    def refuse(self, why: str) -> None:
        """The program does something a warm start cannot honour (`why`): it runs cold from now on."""
        with self.lock:
            self._turn_off(why)

    def _turn_off(self, why: str) -> None:
        if self.off is None:
            self.off = why
            if self.say is not None:
                self.say(f"{' '.join(self.program.command_line)}: runs cold from now on: {why}")

    def slot(self, deadline: float) -> _Zygote | None:
        """This worker's zygote, with everything learned so far preloaded; None: run cold."""
        for _ in range(_RESTARTS):
            if self.off is not None:
                return None
            zygote: _Zygote | None = getattr(self.local, "zygote", None)
            try:
                if zygote is None:
                    zygote = _Zygote(self.program, self.env, self.case_keys, deadline)
                    self.local.zygote = zygote
                    with self.lock:
                        self.zygotes.append(zygote)
                with self.lock:
                    wanted, built = list(self.modules), list(self.models)
                unsafe = zygote.preload(wanted, built, deadline)
            except (ZygoteError, OSError, ValueError) as exc:
                if zygote is not None:
                    self.lost(zygote, failed=True, why=str(exc))
                elif time.monotonic() < deadline:  # it could not start at all
                    with self.lock:
                        self._turn_off(str(exc))
                return None
            if not unsafe:
                return zygote
            with self.lock:
                self.unsafe.update(unsafe)
                self.modules = [name for name in self.modules if name.partition(".")[0] not in self.unsafe]
                self.models = [
                    name
                    for name in self.models
                    if ":models" not in self.unsafe and name.partition(".")[0] not in self.unsafe
                ]
                self._changed = True
            self.lost(zygote)  # it imported an unsafe module: a new one, without it
        with self.lock:
            self._turn_off("too many modules unsafe to preload")
        return None

    def close(self) -> None:
        with self.lock:
            zygotes, self.zygotes = self.zygotes, []
        for zygote in zygotes:
            zygote.close()
        self.save()
