"""RL904 context-var-per-instance."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor, is_self
from retainlint.analysis.rule import Example, Rule
from retainlint.analysis.walk import visit
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl904 import ContextVarPerInstancePrefilter

_CONTEXT_VAR = "contextvars.ContextVar"
# Module-level values that make a name a container (a memo or a pool of variables).
_CONTAINER_CALLS = frozenset({"dict", "list", "set", "collections.defaultdict",
                              "collections.OrderedDict", "collections.deque"})


class ContextVarPerInstance(Rule):
    prefilter = ContextVarPerInstancePrefilter
    name = "context-var-per-instance"
    summary = "A ContextVar created per instance or per call stays in every Context that set it"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports `contextvars.ContextVar(...)` created inside a function - kept on `self` (one per
instance, also inside a container such as `self._vars = {name: ContextVar(...) ...}`, or
stored into one, `self._vars[name] = ContextVar(name)`) or in
a local a closure keeps (one per call, e.g. per decorated function) - when the variable
is `set()` and never `reset()`.

A method other than `__init__` that binds a new variable to the attribute again (`def
clear(self): self._current = ContextVar("current")`) makes one per call of it, also on a
class made once for the process.

Not reported: variables made once (at module or class level; in the `__init__` of a class
this file only instantiates at module level; by a factory decorated with a cache; kept in or
taken from a module-level container, a memo or a pool); variables that are only read;
variables whose every `set()` is undone with `reset(token)` (a reset to the state before
the first `set()` removes the variable from the Context again).

## Why it leaks
A `Context` maps every variable ever set in it to its value, and holds both for as long as
the Context lives - a thread's Context for the life of the thread, the main thread's for
the life of the process. A variable created per instance is never freed once set, nor
is the last value it held: one more variable (and value) per instance, without bound
when instances are made per request or per wrapped function.

## Example
```python
from contextvars import ContextVar

class WrappingContext:
    def __init__(self, f):
        self._storage = ContextVar("storage", default=None)  # RL904

    def __enter__(self):
        self._storage.set({"frame": ...})
```

## Fix (suggestion only)
Create the variable once, at module level, and keep per-instance state in its value (a
dict keyed by an owner token), or `reset()` it with the token of each `set()`; where one
variable per instance is needed, recycle them through a module-level pool.
"""

    valid = [
        # made once, or reset with the token of every set()
        """
from contextvars import ContextVar

current = ContextVar("current", default=None)

class Scope:
    def __init__(self, name):
        self._var = ContextVar(name, default=None)

    def __enter__(self):
        self._token = self._var.set(self)

    def __exit__(self, *exc):
        self._var.reset(self._token)
""",
    ]
    invalid = [
        Example(
            """
from contextvars import ContextVar

class WrappingContext:
    def __init__(self, f):
        self._storage = ContextVar("storage", default=None)

    def __enter__(self):
        self._storage.set({"prev": self._storage.get()})
""",
            lines=[6],
        ),
        # made per instance into a dict the instance keeps (pydantic-resolve)
        Example(
            """
import contextvars

class Resolver:
    def __init__(self):
        self.parent_vars = {}

    def prepare_parent(self, node):
        if "parent" not in self.parent_vars:
            self.parent_vars["parent"] = contextvars.ContextVar("parent")
        self.parent_vars["parent"].set(node)
""",
            lines=[10],
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) != _CONTEXT_VAR:
            return
        fn = self.ctx.scope.function
        if fn is None or self._made_once(fn):
            return
        holder = self._holder(node)
        if holder is None:
            return
        kind, name = holder
        cls = self.ctx.scope.classes[-1] if self.ctx.scope.classes else None
        if kind in ("self", "slot"):
            # bound again to the attribute by a method other than `__init__`: one per call
            # of it, however many instances there are (a singleton's `clear()` run per
            # request); a slot of a container may be a memo's, filled once per name
            again = kind == "self" and fn.name.value != "__init__"
            if cls is None or not again and self._singleton(cls):
                return
            uses = _VarUses("self", name)
            visit(cls, uses)
            where = (f"`self.{name}`, one per call of `{fn.name.value}()`" if again
                     else f"`self.{name}`, one per instance of `{cls.name.value}`")
            kept = f"`self.{name}`'s ContextVar"
            growth = f"one per `{fn.name.value}()` call" if again else f"one per `{cls.name.value}` made"
        else:
            uses = _VarUses(None, name)
            visit(fn.body, uses)
            where = f"`{name}`, one per call of `{fn.name.value}()`"
            kept = f"the ContextVar `{name}`"
            growth = f"one per `{fn.name.value}()` call"
        if not uses.set or uses.reset:
            return
        self.report(
            node,
            f"a ContextVar is created per instance or call ({where}) and set without a "
            f"reset: every Context it was set in keeps the variable and its last value for "
            f"the Context's life (a thread's, the main thread's for the process); create it "
            f"once at module level, or `reset()` it with each `set()`'s token",
            consequence=Consequence(f"{kept} and its last value", "each Context that set it",
                                    "each Context's life (the main thread's: the process)", growth),
        )

    def _holder(self, node: cst.Call) -> Optional[tuple[str, str]]:
        """Where the new variable goes: ("self", attr) for `self.attr = ...`, ("slot", attr)
        for a slot of a container there (`self._vars[name] = ...`), ("local", name) for a
        local of the function, None for a module global, a module container, a class
        attribute or a return."""
        statement = self.ctx.scope.statement
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        for small in statement.body:
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                targets = [small.target]
            else:
                continue
            for target in targets:
                base = target
                while isinstance(base, cst.Subscript):  # `self._vars[name] = ContextVar(name)`
                    base = base.value
                if isinstance(base, cst.Attribute) and is_self(base.value):
                    return ("self" if base is target else "slot", base.attr.value)
                if isinstance(target, cst.Name) and not self._declared_global(target.value):
                    return ("local", target.value)
        return None

    def _declared_global(self, name: str) -> bool:
        found = _Declared()
        visit(self.ctx.scope.function.body, found)
        return name in found.names

    def _made_once(self, fn: cst.FunctionDef) -> bool:
        """A cached factory, or a function that memoises or pools its variables in a
        module-level container."""
        for decorator in fn.decorators:
            target = decorator.decorator
            if isinstance(target, cst.Call):
                target = target.func
            qualified = self.ctx.qualname(target) or ""
            index = self.ctx.index
            if qualified in ("functools.cache", "functools.lru_cache") or (
                    index is not None and index.is_cache_decorator(qualified)):
                return True
        containers = _module_containers(self.ctx)
        reads = _Reads(containers)
        visit(fn.body, reads)
        return reads.found

    def _singleton(self, cls: cst.ClassDef) -> bool:
        """Does this file instantiate the class only at module level (once)?"""
        made = _Instantiations(cls.name.value)
        visit(self.ctx.module, made)
        return bool(made.module_level) and not made.in_functions


def _module_containers(ctx) -> set[str]:
    """Module-level names bound to a container (`_VARS = {}`, `_pools: dict = {}`)."""
    found = set()
    for stmt in ctx.module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                targets, value = [t.target for t in small.targets], small.value
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                targets, value = [small.target], small.value
            else:
                continue
            container = isinstance(value, (cst.Dict, cst.List, cst.Set, cst.DictComp)) or (
                isinstance(value, cst.Call) and (ctx.qualname(value.func) or "").replace("builtins.", "")
                in _CONTAINER_CALLS)
            if container:
                found.update(t.value for t in targets if isinstance(t, cst.Name))
    return found


class _Reads(OwnScopeVisitor):
    def __init__(self, names: set) -> None:
        self.names = names
        self.found = False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.found = True


class _Declared(OwnScopeVisitor):
    """Names a function declares `global` or `nonlocal`."""

    def __init__(self) -> None:
        self.names: set = set()

    def visit_Global(self, node: cst.Global) -> None:
        self.names.update(n.name.value for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.names.update(n.name.value for n in node.names)


class _VarUses(cst.CSTVisitor):
    """`.set(...)` and `.reset(...)` called on the variable: `self.attr.set(v)`,
    `self.attr[k].set(v)` (owner "self"), or `name.set(v)` (owner None), nested functions
    included (a closure sets it per call)."""

    def __init__(self, owner: Optional[str], name: str) -> None:
        self.owner = owner
        self.name = name
        self.set = False
        self.reset = False

    def _is_var(self, node) -> bool:
        while isinstance(node, cst.Subscript):
            node = node.value
        if self.owner is None:
            return isinstance(node, cst.Name) and node.value == self.name
        return (isinstance(node, cst.Attribute) and node.attr.value == self.name
                and isinstance(node.value, cst.Name) and node.value.value == self.owner)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and self._is_var(func.value):
            if func.attr.value == "set":
                self.set = True
            elif func.attr.value == "reset":
                self.reset = True


class _Instantiations(cst.CSTVisitor):
    """Calls `Name(...)` at module level and inside functions."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.module_level = 0
        self.in_functions = 0
        self._depth = 0

    def visit_FunctionDef(self, node) -> None:
        self._depth += 1

    def leave_FunctionDef(self, node) -> None:
        self._depth -= 1

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == self.name:
            if self._depth:
                self.in_functions += 1
            else:
                self.module_level += 1
