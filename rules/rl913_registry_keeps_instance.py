"""RL913 registry-keeps-instance: an instance hands itself (or a handler over itself) to a
method of the project that stores what it is handed (`bus.subscribe(event, self.on_event)`,
`socket.register(self)`), on an object it did not make that outlives it, and never takes
it off: the registry keeps every instance."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions, is_self, module_objects
from retainlint.analysis.gobject import method_of
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.hooks import handler_keeps_instance, parameter_names, removes_by_name, short
from retainlint.analysis.once import one_instance_per_process, runs_once_per_instance
from retainlint.analysis.release import FINALIZER, release_methods
from retainlint.analysis.rule import Example, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.consequence import short as holder_name
from retainlint.rules.prefilters.rl913 import RegistryKeepsInstancePrefilter, definers, emptied, registries

# Accessors of an object the process shares: `Bus.get_instance()`, `Settings.get_default()`.
_SHARED_GETTERS = frozenset({"get_instance", "get_default", "instance", "default", "shared", "get_shared"})
_MAX_DEPTH = 4


@dataclass
class _Registration:
    cls: cst.ClassDef
    method: cst.FunctionDef
    call: cst.Call
    statement: Optional[cst.CSTNode]
    receiver: str  # as the code spells it
    handed: str  # the argument that keeps the instance, as the code spells it
    store: tuple[str, str]  # the registering method (`Bus.subscribe`) and its holder (`Bus()._listeners`)
    stores: list[tuple[str, str]]  # every method of that name that registers (the receiver's class is not known)
    lives: str  # "process" (module-level, a shared accessor's) or "handed" (a constructor's argument)
    why: str  # where the receiver comes from, for the message


class RegistryKeepsInstance(Rule):
    prefilter = RegistryKeepsInstancePrefilter
    name = "registry-keeps-instance"
    summary = ("An instance registers itself, or a handler over itself, with an object of the project it did "
               "not make and never takes it off: the registry keeps every instance")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports `registry.method(..., self)` or `registry.method(..., self.on_event)` (a bound
method, a lambda, `partial` or nested function over `self`) in a method of a class when:
- `method` is one the project defines to store what it is handed - its body keeps the
  argument in a list, set or dict of its instance (`self._listeners.append(callback)`), or
  it is named for it (`subscribe`, `register_*`, `add_*`, `attach`) and keeps something;
  a weak container (`WeakSet`, `WeakMethod`) is not a store;
- the registry is not the instance's own and outlives it: a module-level object, one a
  shared accessor returns (`event_manager()`, `Bus.get_instance()`), or an object handed
  to the constructor when the class expects its instances to be freed (it defines
  `__del__`, or a release method such as `close()`);
- nothing in the class takes it off: no call whose name says it removes (`unsubscribe`,
  `remove_*`, `detach`, `unregister`) on that registry or with the same argument, and no
  release of the registry itself (`self._rpc.close()`) when the project empties its store.

The registry is known by its method's name: when some class of the project defines a method
of that name that keeps nothing (a `WeakSet` registry beside a strong one), it is silent.

Silent for a class whose one instance is made at start-up (module level or the entry
point), and for a registry of the class's own kind (a tree of nodes).
Severity: an error when the class has a release method that leaves it registered; a
warning otherwise.

## Why it leaks
The registry holds the instance (a bound method holds its `__self__`) for as long as the
registry lives. A module-level event bus or a shared socket lives for the process, so every
instance registered with it stays, with all it references - and a `__del__` that would
have told the other side to let go never runs.

## Example
```python
from app.events import event_manager


class Timelapse:
    def __init__(self):
        event_manager().subscribe("PrintDone", self.on_print_done)  # RL913

    def on_print_done(self, event, payload):
        ...
```

## Fix
None automatic: take it off when the instance is done (`event_manager().unsubscribe(
"PrintDone", self.on_print_done)` in `close()`), or have the registry keep weak
references (`weakref.WeakSet`, `weakref.WeakMethod`).
"""

    valid = [
        """
_listeners = []

class Bus:
    def __init__(self):
        self._listeners = []

    def subscribe(self, callback):
        self._listeners.append(callback)

    def unsubscribe(self, callback):
        self._listeners.remove(callback)

BUS = Bus()

class Timelapse:
    def __init__(self):
        BUS.subscribe(self.on_done)

    def on_done(self):
        pass

    def close(self):
        BUS.unsubscribe(self.on_done)
""",
    ]
    invalid = [
        Example(
            """
class Bus:
    def __init__(self):
        self._listeners = []

    def subscribe(self, callback):
        self._listeners.append(callback)

BUS = Bus()

class Timelapse:
    def __init__(self):
        BUS.subscribe(self.on_done)

    def on_done(self):
        pass
""",
            lines=[13],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._registrations: list[_Registration] = []

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Attribute) or is_self(node.func.value):
            return
        stores = self._registries.get(node.func.attr.value)
        if not stores or set(self.ctx.index.ask(definers, node.func.attr.value)) - {f for f, _ in stores}:
            return  # no registry, or a class of the project has a method of that name that keeps nothing
        cls, method = method_of(self.ctx)
        if cls is None or method is None or any(f"{cls.name.value}." in function for function, _ in stores):
            return  # not in a method, or a registry of its own kind (a node's children)
        handed = next((a.value for a in node.args if is_self(a.value)
                       or handler_keeps_instance(self.ctx, a.value, cls, method)), None)
        if handed is None:
            return
        if _names_a_class(node.func.value):
            return  # `Base.method(self, ...)`: a base class's method run on the instance
        found = self._outlives(node.func.value, cls, method, 0)
        if found is None:
            return
        lives, why = found
        self._registrations.append(_Registration(
            cls, method, node, self.ctx.scope.statement, self.ctx.code(node.func.value), self.ctx.code(handed),
            stores[0], stores, lives, why))

    @cached_property
    def _registries(self) -> dict[str, list[tuple[str, str]]]:
        return registries(self.ctx.index)

    def _outlives(self, expr: cst.BaseExpression, cls: cst.ClassDef, method: cst.FunctionDef,
                  depth: int) -> Optional[tuple[str, str]]:
        """("process", why) for an object the process shares, ("handed", why) for one
        handed to the constructor, None for the instance's own or an unknown one."""
        if depth > _MAX_DEPTH or is_self(expr):
            return None
        code = self.ctx.code(expr)
        if isinstance(expr, cst.Name):
            if expr.value in parameter_names(method):
                if not runs_once_per_instance(self.ctx, cls, method):
                    return None  # handed to a later call: it may well be the shorter-lived
                return "handed", f"`{code}`, handed to `{cls.name.value}.{method.name.value}()`"
            if expr.value in module_objects(self.ctx):
                return "process", f"the module-level `{code}`"
            if "." in (self.ctx.qualname(expr) or "") and expr.value not in self.ctx.heavy.local_assignments(method):
                return "process", f"the imported `{code}`"
            return None
        if isinstance(expr, cst.Attribute):
            if is_self(expr.value):
                return self._self_attribute(expr.attr.value, cls, depth)
            inner = self._outlives(expr.value, cls, method, depth + 1)
            return (inner[0], f"`{code}`, part of {inner[1]}") if inner else None
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _SHARED_GETTERS:
                return "process", f"the shared `{short(code)}`"
            if isinstance(func, cst.Name) and not expr.args and self._accessor(func.value):
                return "process", f"the shared `{code}`"
        return None

    def _self_attribute(self, attr: str, cls: cst.ClassDef, depth: int) -> Optional[tuple[str, str]]:
        """`self.x`: as every method that sets it sets it, when all agree."""
        found = []
        for fn in body_functions(cls):
            for value, _ in self.ctx.heavy.local_assignments(fn).get(f"self.{attr}", ()):
                inner = self._outlives(value, cls, fn, depth + 1) if value is not None else None
                if inner is None:
                    return None
                found.append(inner)
        if not found or len({lives for lives, _ in found}) > 1:
            return None
        return found[0][0], f"`self.{attr}` ({found[0][1]})"

    def _accessor(self, name: str) -> bool:
        """A module-level function of this file that returns a module global it keeps
        (`def event_manager(): global _instance; ...; return _instance`)."""
        fn = next((s for s in self.ctx.module.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
        if fn is None:
            return False
        kept = {n.value for g in iter_nodes(fn.body) if isinstance(g, cst.Global) for n in (a.name for a in g.names)}
        return any(isinstance(r, cst.Return) and isinstance(r.value, cst.Name) and r.value.value in kept
                   for r in iter_nodes(fn.body))

    def leave_Module(self, original_node: cst.Module) -> None:
        for reg in self._registrations:
            cls = reg.cls
            released = release_methods(self.ctx, cls)
            finalizer = FINALIZER in self.ctx.methods(cls)
            if self._taken_off(reg) or one_instance_per_process(self.ctx, cls):
                continue
            if reg.lives == "handed" and not (released or finalizer):
                continue  # a part handed to its owner: nothing says the instance is meant to go first
            owner = cls.name.value
            teardown = (f"; `{released[0].name.value}()` releases the `{owner}` but leaves it registered"
                        if released else "; its `__del__` never runs while it is registered" if finalizer else "")
            self.report(
                reg.call,
                f"`{short(self.ctx.code(reg.call))}` hands `{short(reg.handed, 40)}`, which keeps the `{owner}` "
                f"instance, to `{reg.store[0]}()` of {reg.why}, which the `{owner}` did not make and which keeps it in "
                f"`{short(holder_name(reg.store[1]), 50)}`, and "
                f"nothing takes it off{teardown}: the registry keeps every `{owner}` as long as it lives; take it "
                f"off when the `{owner}` is done, or have the registry keep weak references",
                severity=Severity.ERROR if released else Severity.WARNING,
                statement=reg.statement,
                consequence=Consequence(f"every `{owner}` instance, with all it holds",
                                        f"`{short(holder_name(reg.store[1]), 50)}`",
                                        "the life of the process" if reg.lives == "process"
                                        else f"as long as `{short(reg.receiver, 40)}`",
                                        f"one per `{owner}` made"),
            )

    def _taken_off(self, reg: _Registration) -> bool:
        """Does the class call a method named for removing on the same registry, or with
        the same argument - or release the registry itself (`self._rpc.close()`) when the
        project empties the registry's store somewhere?"""
        releases = set(self.ctx.settings.release_methods)
        for node in iter_nodes(reg.cls.body):
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
                continue
            verb, on_registry = node.func.attr.value, self.ctx.code(node.func.value) == reg.receiver
            if removes_by_name(verb) and (on_registry or any(self.ctx.code(a.value) == reg.handed for a in node.args)):
                return True
            if on_registry and verb in releases and self.ctx.index is not None \
                    and any(self.ctx.index.ask(emptied, holder) for _, holder in reg.stores):
                return True
        return False


def _names_a_class(expr: cst.BaseExpression) -> bool:
    """`Base`, `nn.Embedding`: a name spelled as a class (CapWords), not a constant (`BUS`)."""
    last = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
    return last[:1].isupper() and any(c.islower() for c in last)
