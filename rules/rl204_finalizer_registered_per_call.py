"""RL204 finalizer-registered-per-call."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import call_args, name_bindings, body_statements
from retainlint.analysis.heavy import find_param
from retainlint.analysis.once import guarding_flag
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.rule import Example, Rule
from retainlint.analysis.walk import visit
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl204 import (
    EAGER_DEFAULTS,
    PER_INSTANCE,
    REGISTRATIONS,
    FinalizerRegisteredPerCallPrefilter,
)


class FinalizerRegisteredPerCall(Rule):
    prefilter = FinalizerRegisteredPerCallPrefilter
    name = "finalizer-registered-per-call"
    summary = (
        "`weakref.finalize(...)` / `atexit.register(...)` written as the default of "
        "`setdefault`/`get`/`pop` registers again on every call; the same exit or at-fork "
        "callback registered again by every `__init__`"
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports `weakref.finalize(...)` and `atexit.register(...)` (however imported) evaluated as
the default argument of `d.setdefault(key, ...)`, `d.get(key, ...)` or `d.pop(key, ...)`
- anywhere in that argument, except inside a lambda or a nested function (which would
only run when called).

Also reports (a warning) `atexit.register(...)` and `os.register_at_fork(...)` in a
class's `__init__` when what is registered is the same every time - a class attribute
(`atexit.register(Pool._close_all)`), a module function, constants - with nothing from
the instance (`self`, parameters, locals; registering those is RL203's or RL201's
business), and no once-guard around it (an `if` on a flag its body sets:
`if not Pool._registered: atexit.register(...); Pool._registered = True`). A class that
makes a single instance (`__new__`, a class-level `_instance`) is not reported.

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

Each construction adds one more entry to a list that only interpreter exit (or, for
at-fork hooks, nothing) empties: small entries, but one per instance ever made, and the
callback runs once per entry.

## Example
```python
import weakref

_props = {}

class Bindable:
    def __set__(self, owner, value):
        key = (id(owner), self.name)
        _props.setdefault(key, weakref.finalize(owner, _props.pop, key, None))  # RL204
```

```python
import atexit

class Client:
    _live = []

    def __init__(self):
        Client._live.append(weakref.ref(self))
        atexit.register(Client._close_all)  # RL204: once per client
```

## Suggestion (no automatic fix)
Register once: at module level, or behind a class-level flag set in the same branch.
For the default of `setdefault`, register only when the key is new (`if key not in d: d[key] = weakref.finalize(...)`), or
let a weak container do the bookkeeping (`weakref.WeakValueDictionary`,
`weakref.WeakKeyDictionary`).
"""

    valid = [
        # registered once, behind a class-level flag; or with the instance's own resource
        """
import atexit


class Client:
    _registered = False

    def __init__(self, handle):
        self.handle = handle
        if not Client._registered:
            atexit.register(Client._close_all)
            Client._registered = True
        atexit.register(close_handle, self.handle)

    @classmethod
    def _close_all(cls):
        pass
""",
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
        Example(
            """
import atexit
import os


def _reinit_all():
    pass


class Client:
    def __init__(self, config):
        self.config = config
        atexit.register(Client._close_all)
        os.register_at_fork(after_in_child=_reinit_all)

    @classmethod
    def _close_all(cls):
        pass
""",
            lines=[13, 14],
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        self._per_instance(node)
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
                consequence=self._eager_consequence(registration, qualified, func.attr.value),
            )

    def _eager_consequence(self, registration: cst.Call, qualified: Optional[str], method: str) -> Consequence:
        """Another registered callback, with what it holds, per evaluation of the default."""
        positional, _ = call_args(registration)
        fn, cls = self.ctx.scope.function, self.ctx.scope.method_class
        where = f"{cls.name.value}.{fn.name.value}" if fn is not None and cls is not None else fn.name.value if fn else ""
        growth = f"one per call of `{where}()`" if where else f"one per `.{method}(...)` run"
        at = 0 if qualified == "atexit.register" else 1  # `finalize(owner, callback, ...)`
        callback = f"`{_short(self.ctx.code(positional[at].value))}`" if len(positional) > at else "given"
        kept = f"the callback {callback}, its arguments and what they hold"
        if qualified == "atexit.register":
            return Consequence(kept, "`atexit`'s callback list", "the process", growth)
        owner = f"`{_short(self.ctx.code(positional[0].value))}`" if positional else "its owner"
        return Consequence(kept, "the finalizer registry of `weakref.finalize`", f"as long as {owner} lives", growth)

    def _per_instance(self, node: cst.Call) -> None:
        """`atexit.register(Cls._close_all)` in `__init__`: the same callback once more per
        instance."""
        qualified = self.ctx.qualname(node.func)
        if qualified not in PER_INSTANCE:
            return
        scope = self.ctx.scope
        cls, fn = scope.method_class, scope.function
        if cls is None or fn is None or fn.name.value != "__init__" or self._single_instance(cls):
            return
        if any(isinstance(n, (cst.Call, cst.Lambda)) for arg in node.args for n in iter_nodes(arg.value)):
            return  # built per call: what it holds is left to the rules on what registries pin
        locals_ = set(self.ctx.heavy.local_assignments(fn)) | {
            n.name.value for n in iter_nodes(fn.body) if isinstance(n, (cst.FunctionDef, cst.ClassDef))}
        for arg in node.args:
            for name in _names(arg.value):
                if name == "self" or find_param(fn, name) is not None or name in locals_:
                    return  # it holds the instance's own things: RL203 / RL201
        if guarding_flag(self.ctx, node, inside=fn) is not None:
            return  # `if not X._registered:` ... `X._registered = True`
        self.report(
            node,
            f"`{self.ctx.code(node)}` runs in `{cls.name.value}.__init__`: every new instance "
            f"registers the same callback again in a process-wide list that "
            f"{'only interpreter exit empties' if qualified == 'atexit.register' else 'is never emptied'}"
            f" - one more entry per instance ever made, each run at "
            f"{'exit' if qualified == 'atexit.register' else 'every fork'}. Register it once (at module "
            f"level, or behind a class-level flag set in the same branch)",
            severity=Severity.WARNING,
            consequence=Consequence(
                "a duplicate entry for " + (", ".join(f"`{_short(self.ctx.code(a.value))}`" for a in node.args)
                                            or "the same callback"),
                "`atexit`'s callback list" if qualified == "atexit.register" else "`os.register_at_fork`'s hooks",
                "the process", f"one per `{cls.name.value}` made"),
        )

    def _single_instance(self, cls: cst.ClassDef) -> bool:
        """A class that makes one instance (`__new__`, a class-level `_instance`)."""
        if "__new__" in self.ctx.methods(cls):
            return True
        return any(t.value == "_instance" for t, _ in name_bindings(body_statements(cls)))

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


def _names(expr: cst.BaseExpression) -> set[str]:
    """The variables `expr` reads (not attribute names: `Cls._close` reads `Cls`)."""
    found: set[str] = set()

    class _Finder(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
            visit(node.value, self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    visit(expr, _Finder())
    return found


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 50 else text[:47] + "..."


def _kept_until(qualified: str) -> str:
    if qualified == "atexit.register":
        return "`atexit` keeps each one until the interpreter exits"
    return "the finalizer registry keeps each one until the owner dies"
