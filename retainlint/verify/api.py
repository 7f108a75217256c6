"""`expect_released`: assert in your own tests that teardown frees an object.

    from retainlint.verify import expect_released

    with expect_released(engine.model):
        engine.shutdown()

On exit (after `gc.collect()`), the object must be dead and none of its tensors alive; if not,
`RetainedError` (an AssertionError) names the reference chain that holds it and the retainlint
rule that covers that root. Pass the object as an expression (`engine.model`), or `del` your
own variables inside the block: a local of the calling test is a holder too, and the chain
says so. Works without torch (plain objects are tracked by weakref only).
"""

from __future__ import annotations

import gc
import sys
from typing import Any, Optional

from retainlint.verify.probe import MiB, Tracker, collect


def _size(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB // 10 else f"{n / 1024:.1f} KiB"


class RetainedError(AssertionError):
    """An object that should have been released is still alive."""


class expect_released:  # noqa: N801 - used like a function: `with expect_released(x):`
    """Context manager: the objects passed in must be freed by the end of the block.

    It keeps only weak references (a generator-based context manager would keep its
    arguments alive), so the check itself never holds what it watches."""

    def __init__(self, *objs: Any, tolerance: Optional[int] = None):
        if not objs:
            raise TypeError("expect_released() needs at least one object")
        self._trackers = [Tracker.of(o, f"argument {i + 1}") for i, o in enumerate(objs)]
        del objs
        self._tolerance = tolerance

    def __enter__(self) -> "expect_released":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        # pytest leaves frames marked so out of a failure's traceback: it points at the
        # user's `with` line, not at this module's internals
        __tracebackhide__ = True  # noqa: F841
        if exc_type is not None:
            return False  # never hide the block's own error
        del exc, tb
        self.check(sys._getframe(1))
        return False

    def check(self, caller=None) -> None:
        __tracebackhide__ = True  # noqa: F841 - see __exit__
        collect()
        problems = []
        for t in self._trackers:
            retained = t.retained_bytes()
            tol = self._tolerance or 0  # tracked storage bytes are exact: no noise to allow for
            if not t.alive() and retained <= tol:
                continue
            problems.append(self._explain(t, retained, caller))
        if problems:
            raise RetainedError("not released after the block:\n" + "\n".join(problems))

    @staticmethod
    def _explain(t: Tracker, retained: int, caller) -> str:
        from retainlint.verify import holders

        what = f"{t.kind}" + (f" ({_size(retained)} of tensors still alive)" if t.target_bytes else "")
        if not t.alive():
            what = f"{t.kind} died, but {_size(retained)} of its tensors are still alive"
        frames = []
        f = caller
        while f is not None:
            if f.f_globals.get("__name__") not in (__name__, holders.__name__, "contextlib"):
                frames.append(f)
            f = f.f_back
        box = [t.live_object()]
        if box[0] is None:
            return f"  {what}"
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            holder = holders.explain(box, extra_frames=frames, skip=[t])
        finally:
            box.clear()
            frames.clear()
            if was_enabled:
                gc.enable()
        return f"  {what}\n    held by: {holder}"
