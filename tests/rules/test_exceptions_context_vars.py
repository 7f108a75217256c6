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
