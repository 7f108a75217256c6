"""Reading checked files and writing fixed ones without ever losing work."""

from __future__ import annotations

import errno
import os
import secrets
import signal
import stat
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Sequence, Union


class WriteError(Exception):
    pass


# Larger files are not parsed: libcst needs 150-800 bytes of memory for each byte of code
# (a 50 MB file took tens of GB; 4 MB of dense code, about 3 GB).
MAX_PARSE_BYTES = 4 << 20

# The project of the current run (`confined`); None: the current directory.
_root: Optional[str] = None


@contextmanager
def confined(root: Union[str, os.PathLike[str]]) -> Iterator[None]:
    """Keep every read and fix of this run, and of the pool workers it forks, inside
    `root`: a symlink that leads out of it is not followed. The confinement before it
    comes back after: a process that runs again for another project (the language
    server, a test) reads that project's configuration against the right folder."""
    global _root
    previous, _root = _root, os.path.realpath(root)
    try:
        yield
    finally:
        _root = previous


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def leaves_project(path: str, real: str, root: Optional[str] = None) -> bool:
    """Does reaching `path` (which resolves to `real`) follow a symlink out of the project?
    Inside the project a link may lead anywhere else inside it. A file outside it, named
    on the command line, is read only if it is not itself a link: a walk never goes
    through a linked directory, so that is the only link a run can meet there."""
    root = root or _root or os.path.realpath(os.getcwd())
    if _inside(real, root):
        return False
    return _inside(os.path.abspath(path), root) or os.path.islink(path)


def read_source(path: str) -> bytes:
    """The bytes of a regular file. A FIFO, device or socket (`x.py -> /dev/zero`) raises
    OSError instead of blocking or reading forever, and so does a symlink out of the project
    (`env.py -> /proc/self/environ`, a file with secrets): both are checked on the opened
    file, so a file swapped between discovery and reading cannot slip through."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as f:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if leaves_project(path, _opened_path(fd, path, opened)):
            raise OSError(errno.EACCES, "symlink leaves the project")
        return f.read()


def _opened_path(fd: int, path: str, opened: os.stat_result) -> str:
    """Where the file open as `fd` really is."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")  # Linux: exact, and one system call
    except OSError:
        real = os.path.realpath(path)
        if not os.path.samestat(os.stat(real), opened):  # `path` changed since it was opened
            raise OSError(errno.EAGAIN, "file changed while being read") from None
        return real


def write_atomic(path: str, data: bytes, expected: Optional[bytes] = None) -> None:
    """Replace the file `path` names by `data`: through a symlink, its target (inside the
    project). Temp file in the same directory, same owner and permission bits, then an
    atomic rename, so an interrupted run leaves the old or the new file. `expected`: the
    contents the fix was made from; if the file no longer holds them (saved in an editor
    meanwhile), nothing is written."""
    try:
        real = os.path.realpath(path)
        if leaves_project(path, real):
            raise WriteError("cannot write fix: symlink leaves the project (left unchanged)")
        st = os.stat(real)
    except OSError as e:
        raise WriteError(f"cannot write fix: {e.strerror}") from None
    mode = stat.S_IMODE(st.st_mode)
    # Permission bits count even for root: a read-only file is the user saying "hands off".
    if not os.access(real, os.W_OK) or not mode & 0o222:
        raise WriteError("cannot write fix: file is read-only (left unchanged)")
    if st.st_nlink > 1:
        # A rename would leave the other names with the old contents; writing in place
        # would not be atomic.
        raise WriteError(f"cannot write fix: file has {st.st_nlink} hard links (left unchanged; "
                         "see the fix with --diff)")
    with interrupts_deferred():  # Ctrl-C lands after the rename, never leaves a temp file
        _replace(real, data, st, expected)


def write_output(path: str, data: bytes, roots: Sequence[str] = (), make_folders: bool = False) -> None:
    """Create or replace a file the user named for output (a report, a baseline, SARIF),
    never through a symlink: the checked tree may hold one where the file goes. A link at
    `path` is refused (whatever it points at), and so is a folder on the way that the
    path reaches inside one of `roots` (default: the current directory and the project)
    and that really lies outside it. Missing folders are made if `make_folders`. The data
    goes to a temp file in the same folder, renamed over the old file, so no reader sees
    half of it. A new file gets the mode any new file gets (the umask), a replaced one
    keeps its mode."""
    absolute = os.path.abspath(path)
    folder, name = os.path.split(absolute)
    real_folder = os.path.realpath(folder)
    for root in roots or (os.getcwd(), *((_root,) if _root else ())):
        inside = {os.path.abspath(root), os.path.realpath(root)}
        if any(_inside(folder, r) for r in inside) and not _inside(real_folder, os.path.realpath(root)):
            raise WriteError("a folder on the way is a symlink that leads out of the project")
    target = os.path.join(real_folder, name)
    try:
        st: Optional[os.stat_result] = os.lstat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise WriteError(e.strerror or str(e)) from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise WriteError("is a symbolic link (not written through)")
    if st is not None and stat.S_ISCHR(st.st_mode):
        # /dev/null, a terminal: the user's own (no tree a check reads can hold a device),
        # and a rename would replace the device itself.
        try:
            fd = os.open(target, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except OSError as e:
            raise WriteError(e.strerror or str(e)) from None
        return
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise WriteError("not a regular file")
    try:
        if make_folders:
            os.makedirs(real_folder, exist_ok=True)
        with interrupts_deferred():
            fd, tmp = _temp_beside(target, 0o666)  # the umask applies, as to any new file
            _rename_over(fd, tmp, target, data, lambda _fd, tmp: _keep_mode(tmp, st))
    except OSError as e:
        raise WriteError(e.strerror or str(e)) from None


def _temp_beside(target: str, mode: int) -> tuple[int, str]:
    """A new file open for writing in `target`'s folder (never an existing one, never
    through a link), created with `mode` less the umask."""
    folder = os.path.dirname(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    while True:
        tmp = os.path.join(folder, f".retainlint-{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, mode), tmp
        except FileExistsError:
            continue


def _keep_mode(tmp: str, replaced: Optional[os.stat_result]) -> None:
    if replaced is not None:
        os.chmod(tmp, stat.S_IMODE(replaced.st_mode))


def _rename_over(fd: int, tmp: str, target: str, data: bytes,
                 finish: Callable[[int, str], None]) -> None:
    """Write `data` to the temp file `tmp`, open as `fd`, sync it, let `finish(fd, tmp)`
    set owner and mode and make last checks, then rename it over `target`. The temp file
    never stays behind, whatever happens."""
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            finish(f.fileno(), tmp)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _replace(path: str, data: bytes, original: os.stat_result,
             expected: Optional[bytes]) -> None:
    def finish(fd: int, tmp: str) -> None:
        _keep_owner(fd, original)
        os.chmod(tmp, stat.S_IMODE(original.st_mode))  # after chown, which clears set-id bits
        # Last moment before the rename: an edit saved after this is still lost, but only
        # one landing in this instant, not during the whole fix.
        if expected is not None and read_source(path) != expected:
            raise WriteError("cannot write fix: file changed while being fixed (left unchanged)")
    try:
        fd, tmp = _temp_beside(path, 0o600)
        _rename_over(fd, tmp, path, data, finish)
    except OSError as e:
        raise WriteError(f"cannot write fix: {e.strerror}") from None


def _keep_owner(fd: int, original: os.stat_result) -> None:
    # The temp file belongs to whoever runs --fix (root in a container, a CI user): give
    # it the original's owner, or leave the file alone rather than hand it to someone else.
    if not hasattr(os, "fchown"):
        return
    now = os.fstat(fd)
    if (now.st_uid, now.st_gid) == (original.st_uid, original.st_gid):
        return
    try:
        os.fchown(fd, original.st_uid, original.st_gid)
    except OSError:
        raise WriteError("cannot write fix: cannot keep the file's owner "
                         "(left unchanged)") from None
