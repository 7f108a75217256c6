"""What abandons a file's analysis: its time budget (CPU seconds, SIGPROF), and Ctrl-C or
SIGTERM while files are checked and fixed - never while a fix is being written."""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Protocol

# Seconds of CPU one file's analysis may take (`RETAINLINT_FILE_BUDGET`; 0: no limit).
# Past it the file is reported as not checked and the run goes on: no input can hold the
# run for hours. Measured in CPU time, so a busy machine does not cut a file short.
BUDGET_ENV = "RETAINLINT_FILE_BUDGET"
DEFAULT_FILE_BUDGET_S = 60.0


def file_budget() -> float:
    """Seconds of CPU a file may take (`RETAINLINT_FILE_BUDGET`), 0 for no limit."""
    try:
        budget = float(os.environ.get(BUDGET_ENV, DEFAULT_FILE_BUDGET_S))
    except ValueError:
        return DEFAULT_FILE_BUDGET_S
    return budget if budget > 0 and budget == budget else 0.0  # NaN: no limit either


class _OverBudget(BaseException):
    """Raised into a file's analysis when its time budget is spent. Not an Exception, so
    that no `except Exception` on the way takes it for a rule's bug."""


class _Interrupted(BaseException):
    """Raised into a file's analysis by Ctrl-C or SIGTERM: the run stops now, not once
    the file is done (minutes, for a big one)."""


# True while this process analyses a file and a signal may abandon it (not while a fix
# is written); see `_interrupts_between_files`.
_ABANDONABLE = False


@contextmanager
def _analysing(budget: float) -> Iterator[list[bool]]:
    """While the block runs: the budget's timer is armed (CPU time, SIGPROF; where there is
    one, in the main thread) and an interrupt abandons the file. Yields a list that holds
    True once the budget ran out."""
    global _ABANDONABLE
    expired: list[bool] = []
    timed = budget > 0 and hasattr(signal, "setitimer") \
        and threading.current_thread() is threading.main_thread()
    if timed:
        def over(signum: int, frame: Any) -> None:
            signal.setitimer(signal.ITIMER_PROF, 0)
            if _ABANDONABLE:
                expired.append(True)
                raise _OverBudget

        previous = signal.signal(signal.SIGPROF, over)
        signal.setitimer(signal.ITIMER_PROF, budget)
    _ABANDONABLE = True
    try:
        yield expired
    finally:
        _ABANDONABLE = False
        if timed:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, signal.SIG_IGN if previous is None else previous)


def _writing() -> None:
    """From here on the file in hand is finished whatever happens: a fix is being written."""
    global _ABANDONABLE
    _ABANDONABLE = False


class _Flag(Protocol):
    """A threading.Event, or a multiprocessing one that reaches the pool's workers."""

    def is_set(self) -> bool: ...

    def set(self) -> None: ...


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """SIGTERM to the pool's workers: a worker writing a fix blocks it until the rename is
    done (`source.interrupts_deferred`), any other ends at once, mid-analysis."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            os.kill(process.pid, signal.SIGTERM)
        except (OSError, AttributeError, TypeError):
            continue  # gone already


@contextmanager
def _interrupts_between_files(stop: _Flag,
                              end_workers: Callable[[], None] | None = None) -> Iterator[None]:
    """Ctrl-C (or SIGTERM) while files are checked and fixed sets `stop`: the file in hand
    is abandoned - unless its fix is being written, which is finished (whole or not at
    all) - no other is taken, then KeyboardInterrupt is raised. `end_workers`: stops the
    pool's workers the same way. A KeyboardInterrupt raised at an arbitrary point can land
    in libcst's position provider, which turns it into a KeyError: an internal error, and
    the run went on; `_Interrupted` is caught where it cannot be mistaken."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum: int, frame: Any) -> None:
        stop.set()
        if end_workers is not None:
            end_workers()
        if _ABANDONABLE:
            raise _Interrupted

    previous = {signum: signal.signal(signum, interrupted)
                for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if stop.is_set():
        raise KeyboardInterrupt
