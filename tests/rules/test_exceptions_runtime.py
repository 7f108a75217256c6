"""The claims about exceptions kept in locals, checked by running the code: what RL703
reports (a cycle through the frame) and RL702 reports (a serving loop's local) keeps the
failed call's locals alive, and the shapes they accept free them."""

from __future__ import annotations

import gc
import queue
import textwrap
import threading
import weakref

import pytest

from retainlint.core.config import Settings
from retainlint.engine.lint import lint_bytes
from retainlint.engine.registry import all_rules

RULES = {r.code: r for r in all_rules()}


class Marker:
    """Stands for something heavy in the failed call's frame."""


def _reported(source: str, code: str = "RL702") -> list[int]:
    result = lint_bytes("case.py", source.encode(), [RULES[code]], Settings())
    assert not result.has_errors
    return sorted(f.start.line for f in result.findings)


def _load(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "case.py", "exec"), namespace)
    return namespace


EXC_INFO_KEPT = textwrap.dedent("""\
    import sys

    def fail(marker):
        raise ValueError("boom")

    def handle(marker):
        try:
            fail(marker)
        except ValueError:
            etype, value, tb = sys.exc_info()
            return str(value)
    """)

EXC_INFO_CLEARED = textwrap.dedent("""\
    import sys

    def fail(marker):
        raise ValueError("boom")

    def handle(marker):
        try:
            fail(marker)
        except ValueError:
            etype, value, tb = sys.exc_info()
            try:
                return str(value)
            finally:
                del value, tb
    """)


@pytest.mark.parametrize(("source", "lines", "kept"), [
    (EXC_INFO_KEPT, [10], True),
    (EXC_INFO_CLEARED, [], False),
], ids=["kept", "cleared-in-finally"])
def test_exc_info_local_is_a_cycle_until_collected(source, lines, kept):
    assert _reported(source, "RL703") == lines
    handle = _load(source)["handle"]
    gc.disable()
    try:
        marker = Marker()
        ref = weakref.ref(marker)
        assert handle(marker) == "boom"
        del marker
        # reported: the traceback -> frame -> local cycle keeps the call's locals
        assert (ref() is not None) is kept
        gc.collect()
        assert ref() is None
    finally:
        gc.enable()


SERVING_LOOP = textwrap.dedent("""\
    def worker(inbox, outbox):
        while True:
            job = inbox.get()
            if job is None:
                return
            try:
                outbox.put(job())
            except Exception as e:
                failure = e
                outbox.put(repr(failure))
    """)

SERVING_LOOP_DELETES = SERVING_LOOP + "            del failure\n"


def _failing_job(marker):
    def job():
        local = marker  # noqa: F841 - held by this frame, which the traceback keeps
        raise RuntimeError("job failed")
    return job


@pytest.mark.parametrize(("source", "lines", "kept"), [
    (SERVING_LOOP, [9], True),
    (SERVING_LOOP_DELETES, [], False),
], ids=["local-kept", "local-deleted"])
def test_serving_loop_local_keeps_last_failure(source, lines, kept):
    assert _reported(source) == lines
    worker = _load(source)["worker"]
    inbox: queue.Queue = queue.Queue()
    outbox: queue.Queue = queue.Queue()
    thread = threading.Thread(target=worker, args=(inbox, outbox), daemon=True)
    thread.start()
    marker = Marker()
    ref = weakref.ref(marker)
    inbox.put(_failing_job(marker))
    del marker
    assert "job failed" in outbox.get(timeout=10)
    # the loop now waits for the next job: only its local can still hold the failure
    inbox.put(lambda: "ok")
    assert outbox.get(timeout=10) == "ok"
    gc.collect()
    assert (ref() is not None) is kept
    inbox.put(None)
    thread.join(timeout=10)
