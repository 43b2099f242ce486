"""A warm Python interpreter that forks one client program run per request (Linux).

    INTERPRETER zygote.py FD

Run by the client program's own interpreter (started the way the program would be), it talks to
the harness over the Unix socket FD in JSON lines (`harness.processes.python_warm` is the other side):

- `setup` {script | module, case_keys}: it sets `sys.path` as `python SCRIPT` (or `-m MODULE`)
  would, and answers with the environment it started with (what the shell and the interpreter
  added to the one it was given: the harness gives each run the same).
- `preload` {modules}: it imports them, in order, skipping any not found in the standard library
  or site-packages (never the program's own folder). It stops at, and names as unsafe, a module
  whose import read one of `case_keys` from `os.environ` (a value it would keep is one case's) or
  left a thread running (forking a process with threads is unsafe). Answers what it loaded.
- `run` {env, argv, cwd} with the run's stdout and stderr attached (SCM_RIGHTS): it forks. The
  child replaces `os.environ` wholesale, sets argv, cwd, stdin (/dev/null) and its own session,
  and runs the program as `__main__`, as the interpreter would; it exits as the interpreter does.
  Answers the child's pid, then, once it has exited and everything it started has been ended
  (the zygote is a child subreaper), its exit code and the modules it imported that could be
  preloaded next time.
- `stop`: ends the running child's whole tree at once (the answer is the run's `exit`, 137).

It imports only the standard library (and `subreaper.py` beside it, by path, under a private
name): whatever it imports, the program sees in `sys.modules`.
"""

from __future__ import annotations

import sys

# What a cold start of the program has imported before its first line (the interpreter's own
# start-up, the same for this script): a module beyond these that the program's own folder
# shadows, a warm start cannot honour (the program would find ours, imported already).
_STARTUP = frozenset(sys.modules)

import builtins  # noqa: E402
import contextlib  # noqa: E402
import gc  # noqa: E402
import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import sysconfig  # noqa: E402
import types  # noqa: E402
from typing import Any  # noqa: E402

_STOPPED = 128 + signal.SIGKILL  # what the `subreaper` wrapper reports for a tree it ended
_FDS = 2  # a run's stdout and stderr


def _load_subreaper() -> Any:
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "subreaper.py")
    spec = importlib.util.spec_from_file_location("_toolstream_subreaper", here)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Target:
    """What the program runs: a script or a module, and the folders its imports may be preloaded from."""

    def __init__(self, script: str | None, module: str | None) -> None:
        self.script = script
        self.module = module
        if script is not None:
            # `python SCRIPT` puts the script's folder (symlinks resolved) first on sys.path.
            self.first = os.path.dirname(os.path.realpath(script))
        else:
            self.first = os.getcwd()  # `python -m MODULE`: the current folder
        paths = sysconfig.get_paths()
        roots = {paths.get(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
        try:
            import site

            roots.update(site.getsitepackages())
            if site.ENABLE_USER_SITE:
                roots.add(site.getusersitepackages())
        except (AttributeError, ImportError):
            pass
        roots.add(os.path.join(paths.get("platstdlib", ""), "lib-dynload"))
        self.roots = {os.path.realpath(root) for root in roots if root}
        self.roots.discard(os.path.realpath(self.first))

    def set_path(self) -> None:
        own = os.path.dirname(os.path.abspath(__file__))
        if sys.path and os.path.realpath(sys.path[0]) == os.path.realpath(own):
            del sys.path[0]
        if not getattr(sys.flags, "safe_path", False):
            sys.path.insert(0, self.first)

    def shadowed(self) -> list[str]:
        """The modules imported here (not by the interpreter's start-up) that the program's own
        folder holds one of the same name of: a cold start would import the program's."""
        try:
            entries = os.listdir(self.first)
        except OSError:
            return []
        suffixes = (".py", *importlib.machinery.EXTENSION_SUFFIXES)
        own = {entry[: -len(s)] for entry in entries for s in suffixes if entry.endswith(s)}
        own.update(
            entry for entry in entries if os.path.isfile(os.path.join(self.first, entry, "__init__.py"))
        )
        imported = {name.partition(".")[0] for name in sys.modules if name not in _STARTUP}
        return sorted((own & imported) - {"__main__"})

    def allowed(self, name: str) -> bool:
        """Whether module `name` comes from the standard library or site-packages (found where
        the program would find it: its own folder first)."""
        if name in sys.builtin_module_names:
            return True
        if self.module is not None and name in (self.module, f"{self.module}.__main__"):
            return False  # `-m` runs it as __main__: found imported already, runpy would warn
        top = name.partition(".")[0]
        if top != name and not self.allowed(top):
            return False
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError, AttributeError):
            return False
        if spec is None:
            return False
        if spec.origin == "frozen":
            return True
        origin = spec.origin or ""
        if not os.path.isabs(origin):
            return False
        folder = os.path.dirname(os.path.realpath(origin))
        if spec.submodule_search_locations is not None and top == name:
            folder = os.path.dirname(folder)  # a package: the folder that holds it
        if top == name:
            return folder in self.roots
        return any(folder.startswith(root + os.sep) or folder == root for root in self.roots)


class _Reads:
    """Which of the watched keys `os.environ` or `os.environb` was asked for (iterating it reads
    them all). Other ways to the environment (`os.environ._data`, `posix.environ`, `getenv` in C,
    `/proc/self/environ`) go unseen here: a run that used a value read so is found out by the
    harness (it asks the replay server for the zygote's placeholder case) and runs again cold."""

    def __init__(self, keys: set[str]) -> None:
        self.keys = keys
        self.seen: set[str] = set()
        self.on = False

    def note(self, key: object) -> None:
        if isinstance(key, bytes):
            key = key.decode("utf-8", "surrogateescape")
        if self.on and key in self.keys:
            self.seen.add(str(key))

    def note_all(self) -> None:
        if self.on:
            self.seen.update(self.keys)


def _watched_environ(reads: _Reads, environ: Any) -> Any:
    """`environ` (`os.environ` or `os.environb`) over the same data, noting reads (a module may
    keep it: it stays correct)."""
    base = type(environ)

    class Watched(base):  # type: ignore[misc, valid-type]
        def __getitem__(self, key: Any) -> Any:
            reads.note(key)
            return super().__getitem__(key)

        def __iter__(self) -> Any:
            reads.note_all()
            return super().__iter__()

    return Watched(
        environ._data, environ.encodekey, environ.decodekey, environ.encodevalue, environ.decodevalue
    )


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def preload(
    target: Target,
    names: list[str],
    built: list[str],
    reads: _Reads,
    reaper: Any,
    writes: dict[str, str | None],
) -> dict[str, Any]:
    """Import `names` (those allowed), stopping at the first one that is unsafe to fork after;
    then build the models named in `built`. What the imports wrote to `os.environ` is added to
    `writes` (None: deleted), for each run to write again over its own environment, as the same
    imports in a cold start would."""
    import importlib

    loaded: list[str] = []
    failed: list[str] = []
    unsafe: dict[str, str] = {}
    real, real_b = os.environ, getattr(os, "environb", None)
    before = dict(real)
    os.environ = _watched_environ(reads, real)  # noqa: B003 (a view of the same environment, only watched)
    if real_b is not None:
        os.environb = _watched_environ(reads, real_b)
    try:
        for name in names:
            if name in sys.modules or name == "__main__":
                continue
            reads.seen.clear()
            reads.on = True
            try:
                if not target.allowed(name):
                    continue
                importlib.import_module(name)
            except BaseException:  # an import may raise anything, SystemExit included
                failed.append(name)
                continue
            finally:
                reads.on = False
            top = name.partition(".")[0]
            if reads.seen:
                unsafe[top] = "reads " + ", ".join(sorted(reads.seen)) + " from the environment at import"
            elif _threads() > 1:
                unsafe[top] = "starts a thread at import"
            elif reaper.descendants(os.getpid()):
                # Each run's end ends every process below the zygote: the next run would find it gone.
                unsafe[top] = "starts a process at import"
                reaper._end_descendants()
            if unsafe:
                break
            loaded.append(name)
        if not unsafe and built:
            reads.seen.clear()
            reads.on = True
            try:
                complete_models(target, built)
            finally:
                reads.on = False
            if reads.seen:
                unsafe[":models"] = "reads " + ", ".join(sorted(reads.seen)) + " while building its models"
    finally:
        os.environ = real  # noqa: B003
        if real_b is not None:
            os.environb = real_b
    after = dict(real)
    writes.update({key: value for key, value in after.items() if before.get(key) != value})
    writes.update({key: None for key in before if key not in after})
    return {"loaded": loaded, "failed": failed, "unsafe": unsafe, "threads": _threads()}


def models() -> list[type]:
    """Every pydantic model class (none when pydantic is not imported)."""
    base = getattr(sys.modules.get("pydantic.main"), "BaseModel", None)
    found: list[type] = []
    stack: list[type] = [base] if isinstance(base, type) else []
    seen: set[int] = set()
    while stack:
        subclasses: list[type] = type.__subclasses__(stack.pop())
        for sub in subclasses:
            if id(sub) not in seen:
                seen.add(id(sub))
                found.append(sub)
                stack.append(sub)
    return found


def incomplete_models() -> list[type]:
    """The pydantic models whose validators are not built yet (pydantic builds them at first use)."""
    return [model for model in models() if getattr(model, "__pydantic_complete__", True) is False]


def complete_models(target: Target, names: list[str]) -> list[str]:
    """Build the validators of the models named `module:qualname` (what a run built at first use),
    as their first use would; the names done."""
    done = []
    for name in names:
        module, _, qualname = name.partition(":")
        if module not in sys.modules or not target.allowed(module):
            continue
        found: Any = sys.modules[module]
        for part in qualname.split("."):
            found = getattr(found, part, None)
        rebuild = getattr(found, "model_rebuild", None)
        if (
            isinstance(found, type)
            and callable(rebuild)
            and found.__dict__.get("__pydantic_complete__") is False
        ):
            with contextlib.suppress(Exception):
                rebuild(raise_errors=False)
                done.append(name)
    return done


def learned(target: Target, before: set[str], incomplete: list[type]) -> dict[str, list[str]]:
    """The modules this process imported since `before` that could be preloaded, and the models
    of `incomplete` it built."""
    built = []
    for model in incomplete:
        if getattr(model, "__pydantic_complete__", False) is True:
            built.append(f"{model.__module__}:{model.__qualname__}")
    return {"modules": _imported(target, before), "models": built}


def _imported(target: Target, before: set[str]) -> list[str]:
    names = []
    for name, module in list(sys.modules.items()):
        if name in before or module is None or name == "__main__" or name.startswith("_toolstream"):
            continue
        try:
            if target.allowed(name):
                names.append(name)
        except Exception:
            continue
    return names


# ---------------------------------------------------------------------------------------------
# The child: the program's run


def _exit_code(exc: SystemExit) -> int:
    """The status `python` exits with for an uncaught SystemExit (a non-int code is printed)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(Exception):
        sys.stderr.write(f"{code}\n")
    return 1


def _run_program(
    target: Target, argv: list[str], report: int, before: set[str], incomplete: list[type]
) -> None:
    """Run the program as `__main__`, then exit as the interpreter does. Never returns."""
    import atexit

    def tell() -> None:  # registered first, so it runs after the program's own atexit hooks
        with contextlib.suppress(Exception):
            os.write(report, json.dumps(learned(target, before, incomplete)).encode())
        os.close(report)

    atexit.register(tell)
    code = 0
    interrupted = False
    try:
        if target.module is not None:
            import runpy

            sys.argv = ["-m", *argv[1:]]
            _fresh_main()  # runpy runs the module in `__main__`'s namespace: the program's, not ours
            runpy._run_module_as_main(target.module, alter_argv=True)  # type: ignore[attr-defined]
        else:
            _run_script(argv)
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:
        tb = exc.__traceback__
        # Our own frames above the program's are no part of its traceback.
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        with contextlib.suppress(Exception):
            sys.excepthook(type(exc), exc, exc.with_traceback(tb).__traceback__)
        interrupted = isinstance(exc, KeyboardInterrupt)
        code = 1
    _finish(code, interrupted)


def _fresh_main() -> types.ModuleType:
    """A new `__main__` module, as the interpreter makes it at start-up."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__annotations__={}, __builtins__=builtins)
    sys.modules["__main__"] = main
    return main


def _run_script(argv: list[str]) -> None:
    path = argv[0] if os.path.isabs(argv[0]) else os.path.join(os.getcwd(), argv[0])
    from importlib.machinery import SourceFileLoader

    main = _fresh_main()
    main.__dict__.update(__file__=path, __cached__=None, __loader__=SourceFileLoader("__main__", path))
    with open(path, "rb") as source:
        code = compile(source.read(), path, "exec", dont_inherit=True)
    exec(code, main.__dict__)


def _finish(code: int, interrupted: bool) -> None:
    """What the interpreter does on its way out: wait for the program's threads, run its atexit
    hooks, flush its output; then exit (a KeyboardInterrupt by SIGINT, as `python` does)."""
    threading = sys.modules.get("threading")
    if threading is not None:
        with contextlib.suppress(BaseException):
            threading._shutdown()
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            code = 120  # what `python` exits with when it cannot flush its output
    _flush_files()
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def _flush_files() -> None:
    """Flush every file the program left open, as the interpreter's finalization does when it
    closes them (`os._exit` would drop what is still in their buffers). Text files first: theirs
    goes to the binary buffer below them. The zygote's own objects are frozen, not walked."""
    opened = [
        found
        for generation in range(3)
        for found in gc.get_objects(generation)
        if isinstance(found, (io.TextIOBase, io.BufferedIOBase))
    ]
    for found in sorted(opened, key=lambda item: not isinstance(item, io.TextIOBase)):
        with contextlib.suppress(Exception):
            if not found.closed and found.writable():
                found.flush()


def _child(
    target: Target,
    request: dict[str, Any],
    fds: list[int],
    closing: list[int],
    report: int,
    incomplete: list[type],
) -> None:
    """In the forked child: become the program's process, then run it. Never returns."""
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in {null, *fds, *closing}:
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for key, value in request.get("writes", {}).items():  # what the preloaded imports wrote
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        argv = list(request["argv"])
        sys.argv = list(argv)
        if hasattr(sys, "orig_argv"):
            sys.orig_argv = list(request.get("orig_argv", argv))
        before = set(request.get("known", ()))
    except BaseException as exc:
        try:
            os.write(2, f"toolstream: the warm start failed: {exc}\n".encode())
        finally:
            os._exit(127)
    _run_program(target, argv, report, before, incomplete)


# ---------------------------------------------------------------------------------------------
# The zygote's loop


class Zygote:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.buffer = b""
        self.fds: list[int] = []
        self.target: Target | None = None
        self.reads = _Reads(set())
        self.child: int | None = None
        self.report: int | None = None
        self.reported = b""  # what the run's child has written of its report so far
        self.report_ended = False
        self.reaper = _load_subreaper()
        self.reaper.become_subreaper()
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(wake_w, False)
        self.wake_w = wake_w
        signal.signal(signal.SIGCHLD, lambda number, frame: None)
        signal.set_wakeup_fd(wake_w)
        self.start_environ = dict(os.environ)
        self.writes: dict[str, str | None] = {}  # what preloaded imports wrote to os.environ

    def send(self, message: dict[str, Any]) -> None:
        self.control.sendall(json.dumps(message).encode() + b"\n")

    def messages(self) -> list[dict[str, Any]] | None:
        """The complete messages the harness sent (None: it closed the socket)."""
        data, ancillary, _, _ = self.control.recvmsg(1 << 16, socket.CMSG_SPACE(8 * 4))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                self.fds.extend(
                    int.from_bytes(payload[i : i + 4], sys.byteorder) for i in range(0, usable, 4)
                )
        if not data:
            return None
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]

    def serve(self) -> int:
        while True:
            watched = [self.control.fileno(), self.wake_r]
            if self.report is not None and not self.report_ended:  # a report larger than a pipe holds
                watched.append(self.report)
            ready, _, _ = select.select(watched, [], [], 0.5)
            if self.report is not None and self.report in ready:
                self.read_report()
            if self.wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(self.wake_r, 512)  # SIGCHLDs since the last look: one reap takes them all
                self.reap()
            if self.control.fileno() in ready:
                got = self.messages()
                if got is None:
                    self.end_tree()
                    return 0
                for message in got:
                    self.handle(message)
            elif self.child is not None:
                self.reap()

    def handle(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "setup":
            self.target = Target(message.get("script"), message.get("module"))
            self.target.set_path()
            self.reads = _Reads(set(message.get("case_keys", ())))
            # What a module sees of the program at import, as in a cold start.
            argv = [str(word) for word in message.get("argv", ())]
            if argv:
                sys.argv = argv
                if hasattr(sys, "orig_argv"):
                    sys.orig_argv = [str(word) for word in message.get("orig_argv", argv)]
            hello: dict[str, Any] = {"environ": self.start_environ, "threads": _threads(), "pid": os.getpid()}
            shadowed = self.target.shadowed()
            if shadowed:
                names = ", ".join(shadowed)
                hello["cold"] = f"its own folder holds modules named like ones the zygote imported ({names})"
            self.send(hello)
        elif op == "preload":
            assert self.target is not None
            modules, built = list(message.get("modules", ())), list(message.get("models", ()))
            self.send(preload(self.target, modules, built, self.reads, self.reaper, self.writes))
        elif op == "run":
            self.run(message)
        elif op == "stop" and self.child is not None:
            self.end_tree()
            self.finish(None)

    def run(self, request: dict[str, Any]) -> None:
        assert self.target is not None
        fds, self.fds = self.fds[:_FDS], self.fds[_FDS:]
        if len(fds) != _FDS or self.child is not None:
            for fd in fds:
                os.close(fd)
            self.send({"error": "a run needs no other run going and its stdout and stderr"})
            return
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        report_r, report_w = os.pipe()
        request["known"] = list(sys.modules)
        request["writes"] = self.writes
        incomplete = incomplete_models()
        # What the zygote made is never garbage to the child: a collection that walked it would
        # touch (and so copy) every page the fork shares.
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            os.close(report_r)
            closing = [self.control.fileno(), self.wake_r, self.wake_w]
            _child(self.target, request, fds, closing, report_w, incomplete)
        os.close(report_w)
        for fd in fds:
            os.close(fd)
        os.set_blocking(report_r, False)
        self.child, self.report, self.reported, self.report_ended = pid, report_r, b"", False
        self.send({"pid": pid})

    def reap(self) -> None:
        """Collect what has exited; when it is the run's child, end the rest of its tree."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if not pid:
                return
            if pid == self.child:
                self.child = None  # reaped: the tree's end below cannot wait for it again
                self.end_tree()
                self.finish(os.waitstatus_to_exitcode(status))
                return

    def read_report(self) -> None:
        """Whatever the run's child has written to its report pipe since the last read."""
        assert self.report is not None
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.report, 1 << 16):
                self.reported += chunk
            self.report_ended = True

    def end_tree(self) -> None:
        self.reaper._end_descendants()

    def finish(self, code: int | None) -> None:
        if self.child is not None:  # stopped: it was killed with the rest of the tree
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.child, 0)
            self.child = None
            code = None
        report: Any = {}
        if self.report is not None:
            self.read_report()
            os.close(self.report)
            self.report = None
            with contextlib.suppress(ValueError):
                report = json.loads(self.reported) if self.reported else {}
        status = _STOPPED if code is None else code if code >= 0 else 128 - code
        learned = report if isinstance(report, dict) else {}
        self.send(
            {"exit": status, "modules": learned.get("modules", []), "models": learned.get("models", [])}
        )


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: zygote.py FD", file=sys.stderr)
        return 2
    control = socket.socket(fileno=int(argv[0]))
    return Zygote(control).serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
