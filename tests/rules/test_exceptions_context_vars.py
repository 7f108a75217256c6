"""RL904's claim, checked by running the code: a ContextVar made per instance and set
without a reset stays in the Context (with its last value) after the instance is gone;
the shapes the rule accepts (reset with the token) leave nothing behind."""

from __future__ import annotations

import contextvars
import gc
import textwrap
import weakref

import pytest

from retainlint.core.config import Settings
from retainlint.engine.lint import lint_bytes
from retainlint.engine.registry import all_rules

RL904 = [r for r in all_rules() if r.code == "RL904"]


class Value:
    """What the instance last set in its variable."""


PER_INSTANCE = textwrap.dedent("""\
    from contextvars import ContextVar

    class Wrapping:
        def __init__(self):
            self._storage = ContextVar("storage", default=None)

        def enter(self, value):
            self._storage.set(value)
    """)

RESET = textwrap.dedent("""\
    from contextvars import ContextVar

    class Wrapping:
        def __init__(self):
            self._storage = ContextVar("storage", default=None)

        def enter(self, value):
            token = self._storage.set(value)
            self._storage.reset(token)
    """)


@pytest.mark.parametrize(("source", "lines", "kept"), [
    (PER_INSTANCE, [5], True),
    (RESET, [], False),
], ids=["set-without-reset", "reset-with-token"])
def test_context_keeps_per_instance_variable(source, lines, kept):
    result = lint_bytes("case.py", source.encode(), RL904, Settings())
    assert sorted(f.start.line for f in result.findings) == lines
    namespace: dict = {}
    exec(compile(source, "case.py", "exec"), namespace)

    def use_and_drop() -> tuple[weakref.ref, weakref.ref]:
        instance = namespace["Wrapping"]()
        value = Value()
        instance.enter(value)
        return weakref.ref(instance), weakref.ref(value)

    # a fresh Context stands for a thread's: it lives on after the instance is dropped
    context = contextvars.copy_context()
    before = len(context)
    instance_ref, value_ref = context.run(use_and_drop)
    gc.collect()
    assert instance_ref() is None
    assert (value_ref() is not None) is kept
    assert len(context) - before == (1 if kept else 0)


PER_CALL_ON_A_SINGLETON = textwrap.dedent("""\
    from contextvars import ContextVar

    class Tracker:
        def __init__(self):
            self._current = ContextVar("current")

        def clear(self):
            self._current = ContextVar("current")

        def track(self, value):
            self._current.set(value)

    TRACKER = Tracker()
    """)


def test_a_variable_made_again_by_a_method_of_a_singleton_is_one_per_call():
    """scout-apm 2.22.0's request tracker: one tracker for the process, whose per-request
    `clear()` made a new ContextVar each time."""
    result = lint_bytes("case.py", PER_CALL_ON_A_SINGLETON.encode(), RL904, Settings())
    assert [(f.start.line, f.code) for f in result.findings] == [(8, "RL904")]
    assert "one per call of `clear()`" in result.findings[0].message
    namespace: dict = {}
    exec(compile(PER_CALL_ON_A_SINGLETON, "case.py", "exec"), namespace)
    tracker = namespace["TRACKER"]
    context = contextvars.copy_context()
    before = len(context)

    def request() -> None:
        tracker.clear()
        tracker.track(Value())

    for _ in range(5):
        context.run(request)
    assert len(context) - before == 5  # every request's variable and value stay in the Context
    # made once, in `__init__`, on the one tracker: nothing to report
    once = PER_CALL_ON_A_SINGLETON.replace('self._current = ContextVar("current")\n\n    def track', "pass\n\n    def track")
    assert "def clear(self):\n        pass" in once
    assert lint_bytes("case.py", once.encode(), RL904, Settings()).findings == []
