"""Reading checked files and writing fixed ones without ever losing work."""

from __future__ import annotations

import os
import stat
import tempfile


class WriteError(Exception):
    pass


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
