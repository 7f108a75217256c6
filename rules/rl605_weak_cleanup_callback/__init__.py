"""RL605 weak-cleanup-callback: a `WeakMethod` (or `weakref.ref`) registered as a cleanup
callback; calling it only dereferences it, so the cleanup never runs. The fix is in
`fix.py`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions, call_args, is_self
from retainlint.analysis.hooks import short
from retainlint.analysis.rule import Example, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl605 import WeakCleanupCallbackPrefilter
from retainlint.rules.rl605_weak_cleanup_callback.fix import _atexit_fix, _finalize_fix

WEAK_CALLABLES = frozenset({"weakref.WeakMethod", "weakref.ref"})


class WeakCleanupCallback(Rule):
    prefilter = WeakCleanupCallbackPrefilter
    name = "weak-cleanup-callback"
    summary = ("A `WeakMethod` or `weakref.ref` registered as a cleanup callback: calling it only "
               "dereferences it, so the cleanup never runs")
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE

    docs = """
## What it does
Reports `weakref.finalize(obj, weakref.WeakMethod(obj.close))` or
`atexit.register(weakref.WeakMethod(self.close))` (a `weakref.ref` the same way; also
through a local or a `self` attribute assigned one). Calling a `WeakMethod` only
dereferences it: it returns the bound method (or `None`) and never calls it, so the
cleanup silently never runs.

Severity: an error - the cleanup never runs.

Split from RL603 (ineffective-release), which still selects and silences it.

## Why it leaks
The resources the cleanup was written to release - a socket, a pool, a subprocess, a
model - are never released by it; they go only when something else lets go of them.

## Example
```python
class Client:
    def __init__(self):
        self._finalizer = weakref.finalize(self, weakref.WeakMethod(self.close))  # RL605
```

## Fix (unsafe)
For `weakref.finalize(self, weakref.WeakMethod(self.m))` where `m` is a method of the
class that only reads attributes of `self`: a staticmethod `_m_finalizer` receiving those
attributes is added after `m`, and the finalizer is registered as
`weakref.finalize(self, Class._m_finalizer, self.a, self.b)`. Unsafe: the attributes are
captured when the finalizer is registered, and the finalizer keeps them alive until it
runs. For `atexit.register(weakref.WeakMethod(x.m))` the callback becomes a lambda that
dereferences the `WeakMethod` and calls the method when it is still alive. Other cases are
reported without a fix: pass a function or staticmethod that receives the resources.
"""

    valid = [
        # a finalizer with a plain function receiving the resources
        """
import weakref

def _close(proc):
    proc.kill()

class Worker:
    def __init__(self, proc):
        self.proc = proc
        self._finalizer = weakref.finalize(self, _close, proc)
""",
    ]

    invalid = [
        Example(
            """
import weakref

class Client:
    def __init__(self, sock, pool):
        self.sock = sock
        self._pool = pool
        self._finalizer = weakref.finalize(self, weakref.WeakMethod(self.close))

    def close(self):
        self.sock.close()
        self._pool.shutdown(wait=False)
""",
            lines=[8],
            fixed="""
import weakref

class Client:
    def __init__(self, sock, pool):
        self.sock = sock
        self._pool = pool
        self._finalizer = weakref.finalize(self, Client._close_finalizer, self.sock, self._pool)

    def close(self):
        self.sock.close()
        self._pool.shutdown(wait=False)

    @staticmethod
    def _close_finalizer(sock, pool):
        sock.close()
        pool.shutdown(wait=False)
""",
        ),
        Example(
            """
import atexit
from weakref import WeakMethod

class Core:
    def __init__(self):
        atexit.register(WeakMethod(self.unload))

    def unload(self):
        pass
""",
            lines=[7],
            fixed="""
import atexit
from weakref import WeakMethod

class Core:
    def __init__(self):
        atexit.register(lambda method=WeakMethod(self.unload): method() and method()())

    def unload(self):
        pass
""",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        q = self.ctx.qualname(node.func)
        if q == "weakref.finalize":
            positional, _ = call_args(node)
            if len(positional) < 2 or any(a.star for a in node.args[:2]):
                return
            owner, callback = positional[0].value, positional[1].value
            registry = "weakref.finalize"
        elif q == "atexit.register":
            if not node.args or node.args[0].star or node.args[0].keyword is not None:
                return
            owner, callback = None, node.args[0].value
            registry = "atexit.register"
        else:
            return
        weak = self._weak_callable(callback)
        if weak is None:
            return
        kind = self.ctx.qualname(weak.func).rsplit(".", 1)[-1]
        target = short(self.ctx.code(weak.args[0].value)) if weak.args else "?"
        message = (f"`{short(self.ctx.code(callback))}` is the callback of `{self.ctx.code(node.func)}`: "
                   f"calling a `{kind}` only returns `{target}` (or `None`) and never calls it, so "
                   "the cleanup never runs")
        if registry == "weakref.finalize":
            message += (f"; and when the finalizer runs `{short(self.ctx.code(owner))}` is already gone: "
                        "pass a function or staticmethod that receives the resources")
        fix = None
        if weak is callback:
            fix = (_finalize_fix(self, node, owner, weak) if registry == "weakref.finalize"
                   else _atexit_fix(self, node, weak))
        # the cleanup never runs: what it was to release goes only when its holders let go
        called = f"`{target}()`" if kind == "WeakMethod" else f"calling `{target}`"
        never = f"the finalizer of `{short(self.ctx.code(owner))}`" if owner is not None else "the exit callback"
        self.report(node, message, severity=Severity.ERROR, fix=fix,
                    consequence=Consequence(f"what {called} was registered to release",
                                            f"whatever references it ({never} never calls it)",
                                            "the process" if owner is None else "as long as those references last"))

    def _weak_callable(self, expr: cst.BaseExpression) -> Optional[cst.Call]:
        """The `WeakMethod(...)` / `weakref.ref(...)` call `expr` is (or a local or `self`
        attribute assigned from one)."""
        if isinstance(expr, cst.Call):
            return expr if self.ctx.qualname(expr.func) in WEAK_CALLABLES else None
        fn = self.ctx.scope.function
        if fn is None:
            return None
        if isinstance(expr, cst.Name):
            for value, _ in self.ctx.heavy.local_assignments(fn).get(expr.value, ()):
                if isinstance(value, cst.Call) and self.ctx.qualname(value.func) in WEAK_CALLABLES:
                    return value
        elif isinstance(expr, cst.Attribute) and is_self(expr.value):
            cls = self.ctx.scope.method_class
            if cls is None:
                return None
            for method in body_functions(cls):
                for value, _ in self.ctx.heavy.local_assignments(method).get(f"self.{expr.attr.value}", ()):
                    if isinstance(value, cst.Call) and self.ctx.qualname(value.func) in WEAK_CALLABLES:
                        return value
        return None
