"""RL204 finalizer-registered-per-call."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import call_args
from retainlint.analysis.rule import Example, Rule
from retainlint.analysis.walk import visit
from retainlint.core.finding import Applicability, Severity
from retainlint.rules.prefilters.rl204 import (
    EAGER_DEFAULTS,
    REGISTRATIONS,
    FinalizerRegisteredPerCallPrefilter,
)


class FinalizerRegisteredPerCall(Rule):
    prefilter = FinalizerRegisteredPerCallPrefilter
    name = "finalizer-registered-per-call"
    summary = (
        "`weakref.finalize(...)` / `atexit.register(...)` written as the default of "
        "`setdefault`/`get`/`pop` registers again on every call"
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports `weakref.finalize(...)` and `atexit.register(...)` (however imported) evaluated as
the default argument of `d.setdefault(key, ...)`, `d.get(key, ...)` or `d.pop(key, ...)`
- anywhere in that argument, except inside a lambda or a nested function (which would
only run when called).

## Why it leaks
Python evaluates every argument before the call: the default is built on every call,
whether or not the key is already there. `weakref.finalize` and `atexit.register` put
what they are given (the callback, its closure, its arguments) into a process-wide
registry, so a "register once per key" written this way registers once per *call*: on a
hot path (a property setter, a per-request handler) the finalizer registry grows for as
long as the owner lives, and `atexit`'s list until exit.

## Incident
A UI framework's bindable property ran
`registry.setdefault(key, weakref.finalize(owner, lambda: registry.pop(key, None)))` in
its `__set__`: every write of a property of a live element added another finalizer
(nicegui 2.14; the fix keeps the owners in a `WeakValueDictionary`).

## Example
```python
import weakref

_props = {}

class Bindable:
    def __set__(self, owner, value):
        key = (id(owner), self.name)
        _props.setdefault(key, weakref.finalize(owner, _props.pop, key, None))  # RL204
```

## Suggestion (no automatic fix)
Register only when the key is new (`if key not in d: d[key] = weakref.finalize(...)`), or
let a weak container do the bookkeeping (`weakref.WeakValueDictionary`,
`weakref.WeakKeyDictionary`).
"""

    valid = [
        # registered once per key: a membership test first
        """
import weakref

_props = {}

def track(owner, key):
    if key not in _props:
        _props[key] = weakref.finalize(owner, _props.pop, key, None)
""",
        # inside a lambda the registration only runs when called; a plain default
        """
import weakref

_props = {}

def track(owner, key, factory):
    make = _props.get(key, lambda: weakref.finalize(owner, print))
    _props.setdefault(key, None)
    return make
""",
    ]
    invalid = [
        Example(
            """
import weakref

_props = {}

class Bindable:
    def __set__(self, owner, value):
        key = (id(owner), self.name)
        _props.setdefault(key, weakref.finalize(owner, lambda: _props.pop(key, None)))
""",
            lines=[9],
        ),
        Example(
            """
import atexit
from weakref import finalize

_seen = {}

def on_request(conn, key):
    _seen.get(key, atexit.register(conn.close))
    return _seen.pop(key, (finalize(conn, print),))
""",
            lines=[8, 9],
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in EAGER_DEFAULTS):
            return
        positional, keywords = call_args(node)
        default = positional[1].value if len(positional) > 1 else (
            keywords["default"].value if "default" in keywords else None)
        if default is None:
            return
        for registration in self._registrations(default):
            qualified = self.ctx.qualname(registration.func)
            self.report(
                registration,
                f"`{qualified}(...)` is the default of `.{func.attr.value}(...)`: Python evaluates "
                f"it on every call, even when the key is already there, so each call registers "
                f"another callback (with what it holds) in a process-wide registry - "
                f"{_kept_until(qualified)}. Register only when the key is new, or keep the "
                f"objects in a `weakref.WeakValueDictionary`",
            )

    def _registrations(self, expr: cst.BaseExpression) -> list[cst.Call]:
        """The registration calls evaluated with `expr` (not those inside a lambda or a
        nested function: they run only when called)."""
        found: list[cst.Call] = []
        ctx = self.ctx

        class _Finder(cst.CSTVisitor):
            def visit_Lambda(self, node: cst.Lambda) -> Optional[bool]:
                return False

            def visit_Call(self, node: cst.Call) -> Optional[bool]:
                if ctx.qualname(node.func) in REGISTRATIONS:
                    found.append(node)
                return True

        visit(expr, _Finder())
        return found


def _kept_until(qualified: str) -> str:
    if qualified == "atexit.register":
        return "`atexit` keeps each one until the interpreter exits"
    return "the finalizer registry keeps each one until the owner dies"
