"""RL901's claim, checked by running the code: what a method stashed on a private
attribute outlives the call (the last emitted value stays alive with the signal); a
reset in a `finally` frees it."""

from __future__ import annotations

import gc
import textwrap
import weakref

import pytest

from retainlint.core.config import Settings
from retainlint.engine.lint import lint_bytes
from retainlint.engine.registry import all_rules

RL901 = [r for r in all_rules() if r.code == "RL901"]

STASHED = textwrap.dedent("""\
    class Signal:
        def __init__(self):
            self._queue = []
            self._args = ()

        def emit(self, *args):
            self._queue.append(args)
            self._run()

        def _run(self):
            self._args = args = self._queue.pop(0)
            return args
    """)

RESET = textwrap.dedent("""\
    class Signal:
        def __init__(self):
            self._queue = []
            self._args = ()

        def emit(self, *args):
            self._queue.append(args)
            try:
                self._run()
            finally:
                self._args = ()

        def _run(self):
            self._args = args = self._queue.pop(0)
            return args
    """)


class Emitted:
    """What one `emit()` was handed."""


@pytest.mark.parametrize(("source", "lines", "kept"), [
    (STASHED, [11], True),
    (RESET, [], False),
], ids=["stashed", "reset-in-finally"])
def test_last_emitted_value_outlives_the_call(source, lines, kept):
    result = lint_bytes("case.py", source.encode(), RL901, Settings())
    assert sorted(f.start.line for f in result.findings) == lines
    namespace: dict = {}
    exec(compile(source, "case.py", "exec"), namespace)
    signal = namespace["Signal"]()
    value = Emitted()
    ref = weakref.ref(value)
    signal.emit(value)
    del value
    gc.collect()
    assert (ref() is not None) is kept
