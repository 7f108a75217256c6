"""The pool's worker processes: how one starts (leaving interrupts to the main process,
ending with it), the batches work is sent in, and the project index's task of
summarizing files."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import TypeVar

from retainlint.core.gcpause import gc_paused
from retainlint.engine.notebook import read_python
from retainlint.engine.registry import all_prefilters
from retainlint.project.index import FileSummary, summarize


def _become_worker() -> None:
    # Ctrl-C reaches the whole process group: the main process alone decides what stops,
    # so a worker never dies mid-file or prints a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SIGTERM ends a worker (outside a write): the main process's handler, inherited by a
    # fork, would only set `stop` and leave it waiting for work that never comes.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()


def _die_with_parent() -> None:
    """A worker must not outlive the main process (killed, or gone on a signal): it would go
    on fixing files after the command has exited, then wait forever for more work. It gets
    SIGTERM, not SIGKILL: a fix being written blocks it until the rename is done
    (`source.interrupts_deferred`), so no half-written or temp file is left behind."""
    parent = os.getppid()
    if _parent_death_signal(signal.SIGTERM):
        if os.getppid() != parent:  # the parent went before the kernel was asked
            os.kill(os.getpid(), signal.SIGTERM)
    else:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _parent_death_signal(signum: int) -> bool:
    """Linux: have the kernel send `signum` to this process when its parent dies."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        PR_SET_PDEATHSIG = 1
        done: int = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        return done == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    # Elsewhere an orphan gets a new parent: poll for that. The signal must reach the main
    # thread, the one that defers it while writing.
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    while os.getppid() == parent:
        time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGTERM)


def _summarize_many(items: list[tuple[str, bytes | None]]) -> list[tuple[str, FileSummary | None]]:
    """`items`: paths with the content this run read (None: read it now). A summary is
    kept under the digest of the content it was made from, so it is made from exactly
    that content, never from a newer copy on disk."""
    found: list[tuple[str, FileSummary | None]] = []
    with gc_paused():  # one collection per batch, not one per file
        for path, data in items:
            try:
                source = read_python(path) if data is None else data
                found.append((path, summarize(path, source, all_prefilters())))
            except Exception:  # noqa: BLE001 - unreadable, or too odd to summarize: no summary
                continue
    return found


_T = TypeVar("_T")


def _batches(items: list[_T], jobs: int) -> list[list[_T]]:
    # Small enough to spread uneven files over the workers (a hundred files to check are
    # sent one by one) and to move a progress bar.
    size = max(1, min(32, len(items) // (jobs * 32)))
    return [items[i:i + size] for i in range(0, len(items), size)]
