"""RL202 finalize-owner-immortal."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import call_args, decorator_names, is_self
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.severity import Facts, instances_meant_to_go, level
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl202 import FinalizeOwnerImmortalPrefilter, PARTIAL
from retainlint.analysis.rule import Example, Rule
from retainlint.analysis.walk import visit
from retainlint.project.names import WEAK_REFERENCES

_NOT_BOUND = frozenset(
    {
        "staticmethod", "builtins.staticmethod", "classmethod", "builtins.classmethod",
        "property", "builtins.property", "functools.cached_property",
    }
)


# Expressions that build a new object each time they are evaluated: two of them spelled
# alike are still two objects, so nothing else in the call can refer to such an owner.
_FRESH_OBJECTS = (
    cst.Lambda, cst.List, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp,
    cst.GeneratorExp,
)


def _is_finalize(ctx, call: cst.Call) -> bool:
    return ctx.qualname(call.func) == "weakref.finalize"


def _param_names(params: cst.Parameters) -> set[str]:
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.add(star.name.value)
    return names


def _param_parts(params: cst.Parameters):
    """Defaults and annotations: evaluated where the function is defined."""
    for p in (*params.posonly_params, *params.params, *params.kwonly_params):
        if p.default is not None:
            yield p.default
        if p.annotation is not None:
            yield p.annotation


def mentions(node: cst.CSTNode, name: str) -> bool:
    """Does `node` read the variable `name` (attribute names, keywords and names
    shadowed by a nested lambda's or function's parameters do not count)?"""
    if isinstance(node, cst.Name):
        return node.value == name
    if isinstance(node, cst.Attribute):
        return mentions(node.value, name)
    if isinstance(node, cst.Arg):
        return mentions(node.value, name)
    if isinstance(node, cst.Param):
        return any(mentions(part, name) for part in _param_parts(cst.Parameters(params=[node])))
    if isinstance(node, cst.Lambda):
        if any(mentions(part, name) for part in _param_parts(node.params)):
            return True
        return name not in _param_names(node.params) and mentions(node.body, name)
    if isinstance(node, cst.FunctionDef):
        if any(mentions(part, name) for part in _param_parts(node.params)):
            return True
        if any(mentions(d, name) for d in node.decorators):
            return True
        return name not in _param_names(node.params) and mentions(node.body, name)
    return any(mentions(child, name) for child in node.children)


class FinalizeOwnerImmortal(Rule):
    prefilter = FinalizeOwnerImmortalPrefilter
    name = "finalize-owner-immortal"
    summary = "The `weakref.finalize` callback or its arguments reference the owner, so it is never collected"
    severity = Severity.ERROR
    fix_applicability = Applicability.NONE
    docs = """
## What it does
Reports `weakref.finalize(obj, func, *args, **kwargs)` (however imported) where `func`
or one of the arguments keeps `obj` reachable:

- `func` is a bound method of `obj` (`weakref.finalize(self, self.shutdown)`);
- an argument is `obj` itself or a bound method of it;
- `func` is a lambda whose body (or a default) references `obj`, a
  `functools.partial(...)` holding `obj` or one of its bound methods, or a function
  nested in the current function that closes over `obj` (also through a local variable);
- `func` (or an argument) is made by a call from a bound method of `obj` or a closure
  over it (`weakref.finalize(self, sync_wrapper(self.disconnect))`): the wrapper keeps
  what it wraps. The owner itself handed to a factory (`make_closer(self)`) is not
  reported: the factory may only read from it.

`weakref.finalize(obj, other.method)` is fine when `other` is not `obj`, and so are
staticmethods, classmethods, module functions and instance attributes of `obj` that are
separate objects (`weakref.finalize(self, self._resources)`). An owner written as a
lambda, list, dict, set or comprehension inside the call is a new object that nothing
else refers to, however the callback is spelled (`weakref.finalize(lambda: 0, lambda: 0)`).

## Why it leaks
The registry holds `func` and its arguments strongly, and they hold `obj`: `obj` can never
become unreachable, so it lives (with everything it owns, e.g. a model) until interpreter
exit, and the finalizer only ever runs at exit. The Python documentation for
`weakref.finalize` warns against exactly this.

## Levels
An error when the owner's class is heavy (a model, a class holding tensors) and its
instances are made again and again (in a loop, per request); a warning when either is
unknown (an executor a factory builds once per engine may be one per process); info when the
project makes the one instance at start-up, which lives until exit anyway.

## Example
```python
class Executor:
    def __init__(self):
        self.workers = start_workers()
        self._finalizer = weakref.finalize(self, self.shutdown)  # RL202

    def shutdown(self):
        stop(self.workers)
```

## Suggestion (no automatic fix)
Move the state the cleanup needs into a separate object and finalize with that object's
method (`weakref.finalize(self, self._resources.close)`), or use a staticmethod or module
function that takes those resources
(`weakref.finalize(self, Executor._stop, self.workers)`).
"""

    valid = [
        # another object's method: it cannot reach `self`
        """
import weakref

class Client:
    def __init__(self, core):
        self.engine_core = core
        self._finalizer = weakref.finalize(self, self.engine_core.shutdown)
""",
        # a separate resources object stored on self, called on collection
        """
import weakref

class Resources:
    def __call__(self):
        pass

class Client:
    def __init__(self):
        self.resources = Resources()
        self._finalizer = weakref.finalize(self, self.resources)
""",
        # a staticmethod, a classmethod, a module function with the resources
        """
import weakref

def shutdown(procs):
    pass

class Manager:
    def __init__(self, procs):
        self.processes = procs
        self._f1 = weakref.finalize(self, shutdown, self.processes)
        self._f2 = weakref.finalize(self, self._stop, self.processes)
        self._f3 = weakref.finalize(self, self._log, "bye")
        self._f4 = weakref.finalize(self, Manager._stop, list(self.processes))

    @staticmethod
    def _stop(procs):
        pass

    @classmethod
    def _log(cls, msg):
        pass
""",
        # a factory given the owner itself, or another object's method, wrapped
        """
import weakref

def closer_for(index):
    return index.client.close

def sync_wrapper(fn):
    return fn

class Index:
    def __init__(self, client):
        self.client = client
        weakref.finalize(self, closer_for(self))
        weakref.finalize(self, sync_wrapper(self.client.close))
""",
        # a lambda or nested function that does not use the owner
        """
import weakref

def watch(conn, path):
    name = str(path)
    weakref.finalize(conn, lambda conn=None: print(name))

    def cleanup():
        print(path)

    weakref.finalize(conn, cleanup)
""",
    ]
    invalid = [
        Example(
            """
import weakref

class Executor:
    def __init__(self):
        self.workers = []
        self._finalizer = weakref.finalize(self, self.shutdown)

    def shutdown(self):
        self.workers.clear()
""",
            lines=[7],
        ),
        # inherited bound method, aliased import, the owner as an argument
        Example(
            """
import weakref as wr
from base import Base

class Child(Base):
    def start(self):
        wr.finalize(self, self.shutdown)
        wr.finalize(self, print, self)
""",
            lines=[7, 8],
        ),
        # a wrapper made from a bound method of the owner
        Example(
            """
import asyncio
import weakref

def sync_wrapper(fn):
    def run():
        return asyncio.run(fn())
    return run

class AsyncIndex:
    def __init__(self, client):
        self.client = client
        weakref.finalize(self, sync_wrapper(self.disconnect))

    async def disconnect(self):
        await self.client.aclose()
""",
            lines=[13],
        ),
        # closures: lambda, partial, nested function, a local holding a bound method
        Example(
            """
import functools
from weakref import finalize

def track(conn):
    finalize(conn, lambda: conn.close())
    finalize(conn, functools.partial(print, conn))
    finalize(conn, lambda c=conn: c.close())

    def cleanup():
        conn.close()

    finalize(conn, cleanup)
    cb = conn.close
    finalize(conn, cb)
    finalize(conn, print, conn.close)
""",
            lines=[6, 7, 8, 13, 15, 16],
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not _is_finalize(self.ctx, node) or any(a.star for a in node.args[:2]):
            return
        positional, keywords = call_args(node)
        if len(positional) < 2:
            return
        owner = positional[0].value
        func = positional[1].value
        if isinstance(owner, _FRESH_OBJECTS):
            return
        holder = self.ctx.code(owner)
        severity = self._level(owner)
        why = self._pins(func, owner, callback=True)
        if why:
            self.report(func, self._message(holder, f"the callback `{self._short(func)}` {why}"),
                        severity=severity, consequence=self._consequence(owner, f"the callback `{self._short(func)}`"))
        for arg in (*positional[2:], *keywords.values()):
            why = self._pins(arg.value, owner, callback=False)
            if why:
                self.report(
                    arg.value,
                    self._message(holder, f"the argument `{self._short(arg.value)}` {why}"),
                    severity=severity,
                    consequence=self._consequence(owner, f"the argument `{self._short(arg.value)}`"),
                )

    def _consequence(self, owner: cst.BaseExpression, through: str) -> Consequence:
        """The owner, to exit; one more per instance when the class is known to make
        them again and again (`_level`'s facts)."""
        cls = self.ctx.scope.method_class if is_self(owner) else None
        if cls is None:
            return Consequence(f"`{self._short(owner)}` and all it owns",
                               f"`weakref.finalize`'s registry, through {through}", "the process")
        name = cls.name.value
        heavy = " (heavy)" if self.ctx.heavy.is_heavy_class(cls) else ""
        return Consequence(f"the `{name}` instance{heavy} and all it owns",
                           f"`weakref.finalize`'s registry, through {through}", "the process",
                           f"one per `{name}` made" if instances_meant_to_go(self.ctx, cls) else "")

    def _level(self, owner: cst.BaseExpression) -> Severity:
        """A finalizer says its owner is meant to die; what keeping each one to exit costs
        depends on how many are made (one per request: an error when they are heavy; the one
        made for the process: nothing) and on what they hold."""
        cls = self.ctx.scope.method_class if is_self(owner) else None
        if cls is None:
            return level(Facts(meant_to_go=True))
        meant = instances_meant_to_go(self.ctx, cls)
        heavy = True if self.ctx.heavy.is_heavy_class(cls) else None
        return level(Facts(heavy=heavy, meant_to_go=True if meant is None else meant))

    def _short(self, node: cst.CSTNode) -> str:
        text = " ".join(self.ctx.code(node).split())
        return text if len(text) <= 60 else text[:57] + "..."

    def _message(self, holder: str, what: str) -> str:
        return (
            f"{what}: the finalizer registry holds it strongly, so `{holder}` never becomes "
            f"unreachable - it lives (with all it owns) until interpreter exit, and the "
            f"finalizer only runs then. Move the state the cleanup needs into a separate "
            f"object and finalize with that object's method "
            f"(`weakref.finalize({holder}, {holder}._resources.close)`), or pass those "
            f"resources to a staticmethod or module function"
        )

    # -- what keeps the owner alive ----------------------------------------------------
    def _pins(self, expr: cst.BaseExpression, owner: cst.BaseExpression, *, callback: bool,
              depth: int = 0) -> Optional[str]:
        if depth > 4:
            return None
        if expr.deep_equals(owner):
            return f"is `{self.ctx.code(owner)}` itself"
        if isinstance(expr, cst.Attribute) and expr.value.deep_equals(owner):
            if self._is_bound_method(owner, expr.attr.value, callback):
                return f"is a bound method of `{self.ctx.code(owner)}`"
            return None
        name = owner.value if isinstance(owner, cst.Name) else None
        if isinstance(expr, cst.Lambda):
            if name is not None and mentions(expr, name):
                return f"is a lambda that references `{name}`"
            return None
        if isinstance(expr, cst.Call) and self.ctx.qualname(expr.func) in PARTIAL:
            for arg in expr.args:
                if self._pins(arg.value, owner, callback=not arg.keyword and arg is expr.args[0],
                              depth=depth + 1):
                    return f"is a `functools.partial` holding `{self.ctx.code(owner)}`"
            return None
        if isinstance(expr, cst.Call):
            return self._wrapper_pins(expr, owner, depth)
        if isinstance(expr, cst.Name) and name is not None and expr.value != name:
            return self._local_pins(expr.value, owner, name, callback, depth)
        return None

    def _wrapper_pins(self, call: cst.Call, owner: cst.BaseExpression, depth: int) -> Optional[str]:
        """`sync_wrapper(self.disconnect)`, `wraps(lambda: self.close())`: a callable made
        from a bound method of the owner (or a closure over it) holds it - a wrapper keeps
        what it wraps. The owner itself as an argument (`make_closer(self)`) is not enough:
        a factory may only read from it. A weak reference (`WeakMethod(self.close)`) keeps
        nothing."""
        if self.ctx.qualname(call.func) in WEAK_REFERENCES:
            return None
        for arg in call.args:
            value = arg.value
            if value.deep_equals(owner):
                continue
            if self._pins(value, owner, callback=False, depth=depth + 1):
                return (f"is made by `{self._short(call.func)}(...)` from "
                        f"`{self._short(value)}`, and the wrapper keeps it")
        return None

    def _local_pins(self, local: str, owner, name: str, callback: bool, depth: int) -> Optional[str]:
        fn = self.ctx.scope.function
        if fn is None:
            return None
        for nested in _nested_functions(fn, local):
            if name not in _param_names(nested.params) and mentions(nested.body, name) or any(
                mentions(part, name) for part in _param_parts(nested.params)
            ):
                return f"is a nested function that closes over `{name}`"
        for value, _ann in self.ctx.heavy.local_assignments(fn).get(local, ()):
            if value is not None and self._pins(value, owner, callback=callback, depth=depth + 1):
                return f"(`{local} = {self._short(value)}`) keeps `{name}` alive"
        return None

    def _is_bound_method(self, owner: cst.BaseExpression, attr: str, callback: bool) -> bool:
        """Is `owner.attr` a bound method of the owner (not a separate object stored on
        it, nor a static/class method)? As a callback an unknown attribute counts as a
        method (an inherited `shutdown`); as a plain argument only a known method does."""
        cls = None
        if isinstance(owner, cst.Name) and owner.value == "self":
            cls = self.ctx.scope.method_class
        guess = callback or attr in self.ctx.settings.release_methods
        if cls is None:
            return guess
        method = self._find_method(cls, attr, set())
        if method is not None:
            return not (decorator_names(self.ctx, method) & _NOT_BOUND) and not any(
                _decorator_tail(d) in ("property", "cached_property", "staticmethod",
                                       "classmethod") or self._weak_descriptor(d)
                for d in method.decorators
            )
        if self._assigned_attribute(cls, attr, set()):
            return False
        return guess

    def _weak_descriptor(self, decorator: cst.Decorator) -> bool:
        """A decorator class of this file whose `__get__` keeps the instance only through a
        weak reference (`weakref.ref(instance)`): what `self.method` gives is a wrapper
        that does not keep `self`, not a bound method."""
        cls = self.ctx.classes.get(self.ctx.code(decorator.decorator))
        get = self.ctx.methods(cls).get("__get__") if cls is not None else None
        return get is not None and any(
            isinstance(n, cst.Call) and self.ctx.qualname(n.func) in WEAK_REFERENCES
            for n in iter_nodes(get.body))

    def _find_method(self, cls: cst.ClassDef, attr: str, seen: set) -> Optional[cst.FunctionDef]:
        if cls.name.value in seen:
            return None
        seen.add(cls.name.value)
        method = self.ctx.methods(cls).get(attr)
        if method is not None:
            return method
        for base in cls.bases:
            local = self.ctx.classes.get(self.ctx.code(base.value))
            if local is not None:
                found = self._find_method(local, attr, seen)
                if found is not None:
                    return found
        return None

    def _assigned_attribute(self, cls: cst.ClassDef, attr: str, seen: set) -> bool:
        """Is `self.attr = ...` assigned in the class (or a base class of this file), or
        `attr` a class-level variable?"""
        if cls.name.value in seen:
            return False
        seen.add(cls.name.value)
        for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    targets = []
                    if isinstance(small, cst.Assign):
                        targets = [t.target for t in small.targets]
                    elif isinstance(small, cst.AnnAssign):
                        targets = [small.target]
                    if any(isinstance(t, cst.Name) and t.value == attr for t in targets):
                        return True
        for method in self.ctx.methods(cls).values():
            if f"self.{attr}" in self.ctx.heavy.local_assignments(method):
                return True
        for base in cls.bases:
            local = self.ctx.classes.get(self.ctx.code(base.value))
            if local is not None and self._assigned_attribute(local, attr, seen):
                return True
        return False


def _decorator_tail(d: cst.Decorator) -> str:
    target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
    if isinstance(target, cst.Attribute):
        return target.attr.value
    if isinstance(target, cst.Name):
        return target.value
    return ""


def _nested_functions(fn: cst.FunctionDef, name: str) -> list[cst.FunctionDef]:
    found: list[cst.FunctionDef] = []

    class _Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            if node.name.value == name:
                found.append(node)
            return True

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

    visit(fn.body, _Finder())
    return found
