"""Reading checked files and writing fixed ones without ever losing work."""

from __future__ import annotations

import errno
import os
import signal
import stat
import tempfile
import threading
from contextlib import contextmanager


class WriteError(Exception):
    pass


def read_source(path: str) -> bytes:
    """The bytes of a regular file. A FIFO, device or socket (`x.py -> /dev/zero`) raises
    OSError instead of blocking or reading forever; it is checked on the opened file, so
    a file swapped between discovery and reading cannot slip through."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return f.read()


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` by `data`: temp file in the same directory, same permission bits,
    then an atomic rename, so an interrupted run leaves the old or the new file."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError as e:
        raise WriteError(f"cannot write fix: {e.strerror}") from None
    # Permission bits count even for root: a read-only file is the user saying "hands off".
    if not os.access(path, os.W_OK) or not mode & 0o222:
        raise WriteError("cannot write fix: file is read-only (left unchanged)")
    directory = os.path.dirname(os.path.abspath(path))
    with interrupts_deferred():  # Ctrl-C lands after the rename, never leaves a temp file
        _replace(path, data, mode, directory)


@contextmanager
def interrupts_deferred():
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _replace(path: str, data: bytes, mode: int, directory: str) -> None:
    try:
        fd, tmp = tempfile.mkstemp(prefix=".retainlint-", suffix=".tmp", dir=directory)
    except OSError as e:
        raise WriteError(f"cannot write fix: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise WriteError(f"cannot write fix: {e.strerror}") from None
        raise
