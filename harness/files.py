"""Every file the harness writes goes through `write`; a read-merge-write holds `locked`.

`write` is atomic: the bytes go to a temp file beside the target, are fsynced, and the temp file
is renamed over the target, so a reader sees the old file or the new one, never half. The temp
file's name is unpredictable and it is created with `O_EXCL | O_NOFOLLOW`, so nothing planted
beside the target is followed or reused. A target that is not a regular file is refused with one
`UsageError` naming it: a rename would replace a device node, a FIFO or a symlink with a file (as
root, `-o /dev/full` replaced the device for the whole machine), and writing through one blocks
for ever (a FIFO no one reads) or lands outside the folder named (a symlink). `-` is stdout.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from harness.errors import UsageError

__all__ = ["STDOUT", "locked", "write"]

STDOUT: Final = "-"  # the one path that is not a file: written to standard output
_TEMP_SUFFIX: Final = ".tmp"
_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def write(path: str | os.PathLike[str], data: bytes | Sequence[bytes]) -> Path:
    """Write `data` (bytes, or parts written in order: no copy joins them) to `path` atomically
    (`-`: to stdout) and return the path.

    The target keeps its mode (a new file gets the umask's); temp files left by killed writes of
    the same target are removed first; missing folders are made. Any failure (a full disk, a
    read-only folder, a target that is a folder, a device, a FIFO, a socket or a symlink) is one
    `UsageError` naming the path.
    """
    if os.fspath(path) == STDOUT:
        sys.stdout.flush()
        sys.stdout.buffer.writelines([data] if isinstance(data, bytes) else data)
        sys.stdout.buffer.flush()
        return Path(STDOUT)
    path = Path(path)
    if not path.name:
        raise UsageError(f"{str(path)!r}: not a file path")
    try:
        target = os.lstat(path)
    except FileNotFoundError:
        target = None
    except OSError as exc:  # a parent that is a file, a symlink loop on the way
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    if target is not None and not stat.S_ISREG(target.st_mode):
        raise UsageError(f"{path}: {_not_a_file(target.st_mode)}")
    try:
        _replace(path, data, None if target is None else stat.S_IMODE(target.st_mode))
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path


def _not_a_file(mode: int) -> str:
    """Why a target of this mode is not written: what it is, and what to give instead."""
    if stat.S_ISDIR(mode):
        return "is a folder; give a file path"
    if stat.S_ISLNK(mode):
        what = "a symbolic link (toolstream writes no file through a link: give the file it points to)"
    elif stat.S_ISFIFO(mode):
        what = "a FIFO (named pipe)"
    elif stat.S_ISSOCK(mode):
        what = "a socket"
    else:
        what = "a device"
    return f"is {what}, not a regular file; give a file path, or {STDOUT} for standard output"


def _replace(path: Path, data: bytes | Sequence[bytes], mode: int | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(8)}{_TEMP_SUFFIX}")
    fd = os.open(temporary, _CREATE, 0o666)  # 0o666 through the umask, as any new file
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.writelines([data] if isinstance(data, bytes) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)  # a rename never follows a link the target may have become
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _remove_stale_temps(path: Path) -> None:
    """Delete `.<name>.<pid>.<hex>.tmp` files beside `path` whose process is gone (a killed write)."""
    prefix = f".{path.name}."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(_TEMP_SUFFIX)):
            continue
        pid, _, token = name[len(prefix) : -len(_TEMP_SUFFIX)].partition(".")
        if pid.isdigit() and len(token) >= 8 and _hex(token) and not _alive(int(pid)):
            with contextlib.suppress(OSError):  # another writer may have removed it first
                (path.parent / name).unlink()


def _hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


@contextlib.contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock on the file at `path` (across processes) for a read-merge-write.

    The lock is `flock` on a sidecar `.<name>.lock`, removed on release; a waiter that wakes on a
    removed lock file takes the new one, so two holders never overlap.
    """
    path = Path(path)
    lock_path = path.with_name(f".{path.name}.lock")
    opening = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(lock_path, opening, 0o666))
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    while True:
        fd = os.open(lock_path, opening, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(lock_path)
            except FileNotFoundError:
                current = None
            if current is not None and current.st_ino == os.fstat(fd).st_ino:
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the holder before us removed this file: lock the new one
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            lock_path.unlink()
        os.close(fd)
