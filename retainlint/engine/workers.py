"""The pool's worker processes: when they are forked, how one starts (leaving interrupts
to the main process, ending with it), how it gets the project index, the batches work is
sent in, and the project index's task of summarizing files."""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Optional, TypeVar

from retainlint.core.gcpause import gc_paused
from retainlint.engine.interrupts import _Flag
from retainlint.engine.notebook import read_python
from retainlint.engine.registry import all_prefilters, all_rules
from retainlint.project.index import FileSummary, ProjectIndex, summarize

_R = TypeVar("_R")

# Below this many files to summarize or parse, a pool costs more than it saves.
POOL_THRESHOLD = 8


class Workers:
    """The worker processes of one run: forked once, by the first phase with more than
    POOL_THRESHOLD files to summarize or check, and kept for the later phases. Forked
    before the project index is built, they do not carry the index as the main process
    builds it (the largest part of its memory on a big tree, and copied into every
    worker by a fork): each is sent the index as one pickle (`publish`), half that size
    once loaded."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.stop: _Flag = threading.Event()  # a SharedFlag once there is a pool
        self._pool: Optional[ProcessPoolExecutor] = None
        self._apart: Optional[ProcessPoolExecutor] = None  # see `apart`
        self._barrier: Any = None  # a multiprocessing Barrier of the workers
        self._published: Optional[tuple[ProjectIndex, int, bytes]] = None  # with its number, pickled
        self._generation = 0

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pooled(self, files: int) -> bool:
        return self.jobs > 1 and files > POOL_THRESHOLD

    def pool(self) -> ProcessPoolExecutor:
        """The pool, its processes started now (by fork: nothing of the checked tree is
        imported, and the rules and libcst are imported once, here, and inherited)."""
        if self._pool is None:
            all_prefilters()
            all_rules()
            self.stop = SharedFlag()
            self._barrier = multiprocessing.Barrier(self.jobs)
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, initializer=_init_worker,
                                             initargs=(self.stop, self._barrier))
            self._pool.submit(int).result()  # a fork starts every worker at the first task
            self._published = None
            if self._apart is None:
                self._apart = ProcessPoolExecutor(max_workers=1, initializer=_become_worker)
                self._apart.submit(int).result()
        return self._pool

    def apart(self, fn: Callable[..., _R], *args: Any) -> _R:
        """`fn(*args)` in a process of its own, forked with the pool (small, before the
        index), then ended: for a task whose memory would stay in this process and add to
        its peak - reading installed packages with astroid (about 120 MB over vLLM's
        imports, not returned to the system when freed). Here when there is no pool."""
        if self._apart is None:
            return fn(*args)
        try:
            return self._apart.submit(fn, *args).result()
        except BrokenProcessPool:
            return fn(*args)
        finally:
            self._apart.shutdown(wait=True, cancel_futures=True)
            self._apart = None

    def discard(self) -> None:
        """After a worker crashed: the pool is broken, a later phase forks a new one."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def close(self) -> None:
        self.discard()
        if self._apart is not None:
            self._apart.shutdown(wait=True, cancel_futures=True)
            self._apart = None
        self._published = None

    def publish(self, index: ProjectIndex) -> int:
        """Sends `index` to every worker of the pool (once per index); returns the number
        the tasks name it by."""
        if self._published is not None and self._published[0] is index:
            return self._published[1]
        self._generation += 1
        data = pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL)
        self._published = (index, self._generation, data)
        # One task per worker: each waits for the others before it returns, so none takes two.
        for _ in self.pool().map(_receive_and_meet, [(self._generation, data)] * self.jobs):
            pass
        return self._generation

    def published(self) -> tuple[int, bytes]:
        """What a process of its own needs to receive the index last published."""
        assert self._published is not None
        return self._published[1], self._published[2]


class SharedFlag:
    """A flag the main process sets and its workers read, in memory they share. Not a
    multiprocessing Event: that takes a lock to read, and a worker ended by SIGTERM while
    holding it (the whole process group gets the signal when a CI job is cancelled) would
    leave the main process waiting for it forever. One byte needs no lock."""

    def __init__(self) -> None:
        self._value = multiprocessing.RawValue("b", 0)

    def is_set(self) -> bool:
        return bool(self._value.value)

    def set(self) -> None:
        self._value.value = 1


_STOP: Optional[_Flag] = None  # set by the main process when interrupted
_BARRIER: Any = None  # every worker of the pool meets here when an index is published
_INDEX: Optional[tuple[int, ProjectIndex]] = None  # the index received last, and its number


def _init_worker(stop: Optional[_Flag] = None, barrier: Any = None,
                 index: Optional[tuple[int, bytes]] = None) -> None:
    global _STOP, _BARRIER
    _become_worker()
    # A fork inherits the collector's state: a worker collects as usual, and a task
    # that piles up objects (`_summarize_many`, `_receive_index`) pauses it itself.
    gc.enable()
    _STOP, _BARRIER = stop, barrier
    if index is not None:
        _receive_index(index)


def _receive_index(published: tuple[int, bytes]) -> None:
    global _INDEX
    generation, data = published
    _INDEX = None  # the last one goes first
    with gc_paused():
        _INDEX = (generation, pickle.loads(data))


def _receive_and_meet(published: tuple[int, bytes]) -> None:
    _receive_index(published)
    _BARRIER.wait(timeout=600)


def stopped() -> bool:
    """Has the main process been interrupted?"""
    return _STOP is not None and _STOP.is_set()


def index_of(generation: int) -> ProjectIndex:
    """The project index published under that number."""
    if _INDEX is None or _INDEX[0] != generation:
        raise RuntimeError(f"index {generation} was not received")  # a crash, reported per file
    return _INDEX[1]


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
