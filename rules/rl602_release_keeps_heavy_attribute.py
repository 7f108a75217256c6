"""RL602 release-keeps-heavy-attribute."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import (
    OwnScopeVisitor,
    append_to_function,
    body_functions,
    body_statements,
    decorator_names,
    is_instance_method,
    is_self,
    releases_whole_object,
    self_attribute,
)
from retainlint.core.finding import Applicability, Severity
from retainlint.analysis.heavy import find_param
from retainlint.project.index import qualified_in
from retainlint.project.names import HEAVY_TYPES
from retainlint.analysis.weight import sources, substantial_value, weigher
from retainlint.rules.prefilters.rl602 import ReleaseKeepsHeavyAttributePrefilter, ACCESSORS
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.walk import visit

# Words that, as a part of a method or function name (split on `_`), release what
# they are called on or handed: `self.runner.shutdown()`, `free_cache(self.kv)`.
_RELEASE_WORDS = frozenset(
    {
        "shutdown", "close", "cleanup", "release", "teardown", "free", "stop", "destroy",
        "terminate", "dispose", "unload", "offload", "clear", "reset", "delete", "del",
        "dealloc", "deallocate", "kill", "exit", "drop", "remove", "finalize", "unregister",
    }
)
# Methods that move a model or tensor off the accelerator (`self.model.to("cpu")`).
_OFFLOADS = frozenset({"cpu", "to"})
# Calls that only read what they are handed (`logger.info("closing %s", self)`).
_READERS = frozenset(
    {
        "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "print",
        "info_once", "warning_once", "debug_once", "repr", "str", "id", "type", "isinstance",
        "hasattr", "getattr", "format", "unregister",
    }
)
# Release methods that cannot be called from a fix (they need arguments or run anyway).
_DUNDER_RELEASE = frozenset({"__del__", "__exit__", "__aexit__"})
_MAX_DEPTH = 8


def _words(name: str) -> set[str]:
    return {w for w in name.lower().split("_") if w}


def _releases(name: str) -> bool:
    return bool(_words(name) & _RELEASE_WORDS)


# -- facts about one method body -------------------------------------------------------


@dataclass
class _Facts:
    drops: set = field(default_factory=set)  # attributes this body drops
    dynamic: bool = False  # drops attributes we cannot name, or hands `self` over
    self_calls: set = field(default_factory=set)  # self.m(...)
    super_calls: set = field(default_factory=set)  # super().m(...)
    base_calls: list = field(default_factory=list)  # (Base expression, m) for Base.m(self)


class _Collector(OwnScopeVisitor):
    """What a release path does to `self`'s attributes (nested functions left out)."""

    def __init__(self) -> None:
        self.facts = _Facts()
        self.aliases: dict[str, set[str]] = {}  # local name -> attributes it holds

    # -- which attribute does an expression name? ---------------------------------
    @staticmethod
    def _attribute(expr) -> Optional[str]:
        """`x` for `self.x` and `getattr(self, "x"[, default])`."""
        attr = self_attribute(expr)
        if attr is not None:
            return attr
        if (
            isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name)
            and expr.func.value == "getattr" and len(expr.args) >= 2
            and is_self(expr.args[0].value) and isinstance(expr.args[1].value, cst.SimpleString)
        ):
            value = expr.args[1].value.evaluated_value
            return value if isinstance(value, str) else None
        return None

    def _held(self, expr) -> set[str]:
        attr = self._attribute(expr)
        if attr is not None:
            return {attr}
        if isinstance(expr, cst.Name):
            return set(self.aliases.get(expr.value, ()))
        return set()

    def _bind(self, target, value) -> None:
        if isinstance(target, cst.Name):
            held = self._held(value)
            if isinstance(value, (cst.Tuple, cst.List)):
                held = set().union(*(self._held(e.value) for e in value.elements)) if value.elements else set()
            if held:
                self.aliases.setdefault(target.value, set()).update(held)

    # -- statements -----------------------------------------------------------------
    def visit_Del(self, node: cst.Del) -> None:
        targets = [node.target]
        while targets:
            t = targets.pop()
            if isinstance(t, (cst.Tuple, cst.List)):
                targets.extend(e.value for e in t.elements)
                continue
            attr = self_attribute(t)
            if attr is not None:
                self.facts.drops.add(attr)
            elif isinstance(t, cst.Subscript) and _is_self_dict(t.value):
                self.facts.dynamic = True
            elif isinstance(t, cst.Subscript) and self_attribute(t.value) is not None:
                self.facts.drops.add(self_attribute(t.value))  # `del self.caches[:]`

    def _assigned(self, target, value) -> None:
        attr = self_attribute(target)
        if attr is not None:
            self.facts.drops.add(attr)  # `= None`, or any new value: the old one goes
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._assigned(element.value, None)
            return
        if isinstance(target, cst.Subscript) and _is_self_dict(target.value):
            self.facts.dynamic = True
            return
        if value is not None:
            self._bind(target, value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._assigned(t.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assigned(node.target, node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, node.iter)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name):
            if func.value in ("delattr", "setattr") and node.args and is_self(node.args[0].value):
                name = node.args[1].value if len(node.args) > 1 else None
                if isinstance(name, cst.SimpleString) and isinstance(name.evaluated_value, str):
                    self.facts.drops.add(name.evaluated_value)
                else:
                    self.facts.dynamic = True
                return
            if func.value == "vars" and any(is_self(a.value) for a in node.args):
                self.facts.dynamic = True
                return
        method = func.attr.value if isinstance(func, cst.Attribute) else (
            func.value if isinstance(func, cst.Name) else None)
        if isinstance(func, cst.Attribute):
            receiver = func.value
            if is_self(receiver):
                self.facts.self_calls.add(method)
            elif (
                isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name)
                and receiver.func.value == "super"
            ):
                self.facts.super_calls.add(method)
            elif _is_self_dict(receiver):
                if method in ("clear", "pop", "popitem", "update", "__delitem__", "__setitem__"):
                    self.facts.dynamic = True
            elif _releases(method) or method in _OFFLOADS:
                self.facts.drops |= self._held(receiver)
        for i, arg in enumerate(node.args):
            if is_self(arg.value):
                if method in _READERS:
                    continue
                if i == 0 and isinstance(func, cst.Attribute) and not is_self(func.value):
                    self.facts.base_calls.append((func.value, method))  # Base.close(self)
                else:
                    self.facts.dynamic = True  # `_teardown(self)`: may drop anything
            elif method is not None and _releases(method):
                self.facts.drops |= self._held(arg.value)


def _is_self_dict(expr) -> bool:
    if isinstance(expr, cst.Attribute) and is_self(expr.value) and expr.attr.value == "__dict__":
        return True
    return (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "vars"
        and len(expr.args) == 1 and is_self(expr.args[0].value)
    )


def _facts(fn: cst.FunctionDef) -> _Facts:
    collector = _Collector()
    visit(fn.body, collector)
    return collector.facts


@dataclass
class _Heavy:
    attr: str
    value: cst.BaseExpression  # what was assigned
    origin: cst.Call  # the call that built it
    annotation: Optional[cst.BaseExpression]
    fn: cst.FunctionDef  # the method that assigns it


class ReleaseKeepsHeavyAttribute(Rule):
    prefilter = ReleaseKeepsHeavyAttributePrefilter
    name = "release-keeps-heavy-attribute"
    summary = "A release method never drops an attribute that holds a model, tensors or an object owning them"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    docs = """
## What it does
Reports a class whose release methods (`shutdown`, `close`, `cleanup`, `release`,
`teardown`, `free`, `stop`, `__exit__`, `__aexit__`; configurable) never drop an
attribute that the class itself assigns a heavy object anywhere: a model or tensor it
builds (`self.model = nn.Linear(...)`, `self.kv = torch.empty(...)`, the result of a
function annotated to return one), or an instance of a project class that holds such
attributes (`self.model_runner = GPUModelRunner(...)`).

Dropping means, in a release method or any method it calls on `self` (also methods
inherited from project base classes and reached through `super()`): `del self.x`,
`self.x = None` (or any new value), `self.x.clear()`, `delattr(self, "x")`, calling a
release method of the attribute (`self.x.shutdown()`, also through a local such as
`if r := getattr(self, "x", None): r.shutdown()`), moving it off the accelerator
(`self.x.to("cpu")`, `self.x.cpu()`), `del self.x[:]`, or handing it to a releasing
function (`free_cache(self.x)`).

Not reported, because nothing worth freeing is kept or the class does not own it:
attributes handed in by the caller (`self.model = model`) or fetched from elsewhere
(`next(...)`, `getattr(...)`, `.get(...)`); aliases of other attributes
(`self.b = self.a`: RL601's business); tensors of a few literal elements
(`torch.zeros(3)`, `torch.tensor([0, n])`, a pointer table built from a Python list);
modules without weights (`nn.ReLU()`, `nn.Dropout(p)`, an op such as `Sampler()`), and
project objects holding only such things; classes that are themselves `nn.Module`s
(their submodules and buffers are their state); Ray actors (`@ray.remote`,
`ray.remote(Cls)` in the same file: the actor's process goes away with it). Nor are these
release methods, which do not release the whole object while it lives on: `__del__`
(attributes die with the object); methods that free one item per call - taking
arguments (`free(self, blocks)`), or an optional one that is the item
(`free(self, index: Tensor | None = None)`, or one without which the method returns at
once: `if slot is None: return`); process-exit cleanup - a method called only from
`__del__` or only registered with `atexit` / `weakref.finalize`, never called on a live
instance by the class, a subclass in its file, or code known to hold an instance
(`self.comm = Comm(...)` ... `self.comm.close()`, `store = Store()` ... `store.close()`);
abstract ones; and classes whose release path drops attributes by name (`vars(self)`,
`self.__dict__`), hands `self` to other code or calls a callable attribute (a
finalizer). One release method dropping an attribute is enough.

## Why it leaks
A release method is where an owner gives back what it holds. What it leaves on `self`
stays allocated as long as the owner object is reachable - and after a "shutdown" in
the same process, an engine, its executor and its workers usually still are. A worker
that keeps its model runner keeps the weights and the KV cache: tens of GiB of GPU
memory.

## Incident
A GPU worker's `shutdown()` stopped the profiler and the weight-transfer engine but left
`self.model_runner` alive, and with it the model weights and KV caches. The fix gave the
runner a `shutdown()` that frees them and called it from the worker's `shutdown()`.

## Example
```python
class Worker:
    def init_device(self):
        self.model_runner = GPUModelRunner(self.config)  # holds the model

    def shutdown(self):  # RL602: `self.model_runner` is never dropped
        if self.profiler is not None:
            self.profiler.shutdown()
```

## Fix (safe)
At the end of the first release method the class defines (before a final `return`, and
before a final run of `gc.collect()` / `empty_cache()` calls, so that they see the memory
freed), for each attribute: a call of its own release method when its class (found through the
project index) defines one taking no arguments - guarded by
`if getattr(self, "x", None) is not None:` unless `__init__` always sets it - else
`self.x = None`. No fix for an attribute that is also a property or a `__slots__` name.
"""

    valid = [
        # dropped in a helper the release method calls
        """
import torch.nn as nn

class Runner:
    def __init__(self):
        self.model = nn.Linear(4, 4)

    def shutdown(self):
        self._free()

    def _free(self):
        del self.model
""",
        # the model belongs to the caller
        """
import torch.nn as nn

class Trainer:
    def __init__(self, model: nn.Module):
        self.model = model

    def close(self):
        pass
""",
        # process-exit cleanup: close() runs only from __del__; and a weightless layer
        """
import torch
import torch.nn as nn

class Communicator:
    def __init__(self, size):
        self.buffer = torch.empty(size, dtype=torch.uint8, device="cuda")
        self.act = nn.ReLU()

    def close(self):
        self._handle = None

    def __del__(self):
        self.close()
""",
        # the attribute's own release method, through a walrus
        """
import torch

class Worker:
    def load(self):
        self.cache = torch.empty(1 << 20)

    def shutdown(self):
        if cache := getattr(self, "cache", None):
            cache.release()
""",
    ]
    invalid = [
        Example(
            """
import torch
import torch.nn as nn

class Engine:
    def __init__(self):
        self.model = nn.Linear(8, 8)
        self.kv_cache = torch.empty(4096, 4096)

    def close(self):
        self.closed = True
""",
            lines=[10],
            fixed="""
import torch
import torch.nn as nn

class Engine:
    def __init__(self):
        self.model = nn.Linear(8, 8)
        self.kv_cache = torch.empty(4096, 4096)

    def close(self):
        self.closed = True
        self.model = None
        self.kv_cache = None
""",
        ),
        # the attribute's class has a release method of its own: call it
        Example(
            """
import torch.nn as nn

class Runner(nn.Module):
    def shutdown(self):
        pass

class Worker:
    def init_device(self):
        self.model_runner = Runner()

    def shutdown(self):
        return
""",
            lines=[12],
            fixed="""
import torch.nn as nn

class Runner(nn.Module):
    def shutdown(self):
        pass

class Worker:
    def init_device(self):
        self.model_runner = Runner()

    def shutdown(self):
        if getattr(self, "model_runner", None) is not None:
            self.model_runner.shutdown()
        return
""",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._facts: dict[int, _Facts] = {}
        self._class: Optional[cst.ClassDef] = None
        self._actor_names: Optional[set[str]] = None

    def _is_actor(self, cls: cst.ClassDef) -> bool:
        """A Ray actor (`@ray.remote`, `ray.remote(Cls)` in this file) runs in a process
        of its own, which goes away with it."""
        if self._actor_names is None:
            names: set[str] = set()
            ctx = self.ctx

            class _Actors(cst.CSTVisitor):
                def visit_ClassDef(self, node: cst.ClassDef) -> None:
                    for d in node.decorators:
                        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
                        if ctx.qualname(target) == "ray.remote":
                            names.add(node.name.value)

                def visit_Call(self, node: cst.Call) -> None:
                    func = node.func.func if isinstance(node.func, cst.Call) else node.func
                    if ctx.qualname(func) == "ray.remote" and node.args and isinstance(
                            node.args[0].value, cst.Name):
                        names.add(node.args[0].value.value)

            if "ray" in ctx.imports.names.values() or any(
                    v.startswith("ray.") for v in ctx.imports.names.values()):
                visit(ctx.module, _Actors())
            self._actor_names = names
        return cls.name.value in self._actor_names

    # -- detection -----------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        methods = self.ctx.methods(node)
        releases = [
            methods[name] for name in self.ctx.settings.release_methods
            if name in methods and name != "__del__" and self._is_release(methods[name])
        ]
        if not releases:
            return
        heavy = self._heavy_attributes(node, methods)
        if not heavy:
            return
        if self._is_module_class(node):
            return
        dropped = self._dropped(node, releases)
        if dropped is None:
            return
        self._class = node
        kept = [h for a, h in heavy.items() if a not in dropped and self._substantial(h)]
        if not kept or self._is_actor(node):
            return
        live = [r for r in releases if not self._only_at_exit(node, r)]
        if live:
            self._report(node, live[0], kept, methods)

    def _is_release(self, fn: cst.FunctionDef) -> bool:
        if not is_instance_method(self.ctx, fn):
            return False
        names = decorator_names(self.ctx, fn)
        if any(n.rsplit(".", 1)[-1] in ("abstractmethod", "overload", "property") for n in names):
            return False
        statements = body_statements(fn)
        if statements and all(_is_stub(s) for s in statements) and any(_raises(s) for s in statements):
            return False  # `raise NotImplementedError`: subclasses release
        return releases_whole_object(self.ctx, fn)  # not `free(self, blocks)`: one item

    # -- does anything outlive the release? -----------------------------------------
    def _only_at_exit(self, cls: cst.ClassDef, fn: cst.FunctionDef) -> bool:
        """Is the release method process-exit or finalizer cleanup: called from `__del__`,
        or registered with `atexit` / `weakref.finalize`, and never called (nor handed
        on) while an instance lives on - by the class, a subclass of this file, or code
        that can be told holds an instance (`self.comm = Comm(...)` then
        `self.comm.close()`; `store = Store(path)` then `store.close()`)? Then no owner
        keeps the object after its release, and what it leaves on `self` goes with it."""
        name = fn.name.value
        if name in _DUNDER_RELEASE:
            return False
        uses = _ReleaseUses(self.ctx, name)
        for klass in (cls, *self._local_subclasses(cls)):
            uses.scan(klass)
        if uses.live or not (uses.at_exit or self._registered_for_exit(cls, name)):
            return False
        qualified = f"{self.ctx.module_name}.{cls.name.value}"
        return not self.ctx.index.ask(called_on_instance, (qualified, name))

    def _local_subclasses(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        return [c for c in self.ctx.classes.values()
                if c is not cls and any(self.ctx.qualname(b.value) == cls.name.value for b in c.bases)]

    def _registered_for_exit(self, cls: cst.ClassDef, name: str) -> bool:
        """Does a function of this file register `v.<name>` with `atexit` or
        `weakref.finalize` (`atexit.register(store.close)`), `v` a local or parameter that
        may be an instance of `cls` (bound to `cls(...)`, or handed in: not bound to
        another call such as `handler = logging.FileHandler(...)`)?"""
        ctx = self.ctx

        def may_be_instance(variable: str, fn: cst.FunctionDef) -> bool:
            for value, _ in ctx.heavy.local_assignments(fn).get(variable, ()):
                if value is not None and not (
                        isinstance(value, cst.Call) and ctx.qualname(value.func) == cls.name.value):
                    return False
            return True

        class _Registrations(cst.CSTVisitor):
            found = False

            def __init__(self) -> None:
                self.functions: list[cst.FunctionDef] = []

            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                self.functions.append(node)

            def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
                self.functions.pop()

            def visit_Call(self, node: cst.Call) -> None:
                if not self.functions or ctx.qualname(node.func) not in _EXIT_REGISTRIES:
                    return
                for arg in node.args:
                    bound = arg.value
                    if isinstance(bound, cst.Attribute) and bound.attr.value == name \
                            and isinstance(bound.value, cst.Name) and bound.value.value != "self" \
                            and may_be_instance(bound.value.value, self.functions[-1]):
                        self.found = True

        finder = _Registrations()
        visit(ctx.module, finder)
        return finder.found

    # -- what the class owns -------------------------------------------------------
    def _heavy_attributes(self, cls: cst.ClassDef, methods) -> dict[str, _Heavy]:
        found: dict[str, _Heavy] = {}
        oracle = self.ctx.heavy
        for fn in body_functions(cls):
            for key, entries in oracle.local_assignments(fn).items():
                if not key.startswith("self."):
                    continue
                attr = key[5:]
                if attr in found or attr in methods:
                    continue
                for value, ann in entries:
                    origin = self._origin(value, ann, fn, cls)
                    if origin is not None:
                        found[attr] = _Heavy(attr, value, origin, ann.annotation if ann else None, fn)
                        break
        return found

    def _origin(self, value, ann, fn, cls, depth: int = 0) -> Optional[cst.Call]:
        """The call that builds the heavy object `value` evaluates to, when this class
        builds it (not when it was handed in or fetched from elsewhere)."""
        if value is None or depth > _MAX_DEPTH:
            return None
        if isinstance(value, cst.Call):
            if _callee_word(value) in ACCESSORS:
                return None  # `next(c.residency for c in caches)`: an existing object
            if self.ctx.heavy.is_heavy_value(value, fn, cls):
                return value
            if ann is not None and self.ctx.heavy.is_heavy_annotation(ann):
                return value
            return None
        if isinstance(value, cst.IfExp):
            return self._origin(value.body, ann, fn, cls, depth + 1) or \
                self._origin(value.orelse, ann, fn, cls, depth + 1)
        if isinstance(value, cst.BooleanOperation):
            return self._origin(value.right, ann, fn, cls, depth + 1)
        if isinstance(value, cst.Name):
            if value.value in ("self", "None") or find_param(fn, value.value) is not None:
                return None
            for v, a in self.ctx.heavy.local_assignments(fn).get(value.value, ()):
                found = self._origin(v, a, fn, cls, depth + 1)
                if found is not None:
                    return found
        return None

    def _substantial(self, h: "_Heavy") -> bool:
        """Does the attribute pin real memory (not a few literal elements, not a module
        without weights, not a project object holding only such things)?"""
        if not substantial_value(self.ctx, h.origin, h.fn):
            return False
        if h.annotation is not None and not self.ctx.heavy.is_heavy_value(h.origin, h.fn, self._class):
            # heavy only by its annotation: judge the annotated class
            index = self.ctx.index
            for expr in _annotation_names(h.annotation):
                q = index.resolve(self.ctx.absolute(self.ctx.qualname(expr)))
                if q and index.classes.get(q) is not None and index.is_heavy_class(q):
                    return weigher(self.ctx).class_substantial(q)
        return True

    def _is_module_class(self, cls: cst.ClassDef) -> bool:
        """Does `cls` derive from `nn.Module` (or a tensor, a `PreTrainedModel`)?"""
        seen: set[str] = set()

        def heavy_type(q: Optional[str]) -> bool:
            if not q:
                return False
            if q in HEAVY_TYPES:
                return True
            return q.startswith("torch.nn.") and q.count(".") == 2 and q.rsplit(".", 1)[1][:1].isupper()

        def summary_derives(q: Optional[str], depth: int) -> bool:
            index = self.ctx.index
            resolved = index.resolve(q)
            if heavy_type(q) or heavy_type(resolved):
                return True
            if depth > _MAX_DEPTH or not resolved or resolved in seen:
                return False
            seen.add(resolved)
            summary = index.classes.get(resolved)
            return summary is not None and any(summary_derives(b, depth + 1) for b in summary.bases)

        def cst_derives(c: cst.ClassDef, depth: int) -> bool:
            if depth > _MAX_DEPTH:
                return False
            for base in c.bases:
                q = self.ctx.qualname(base.value)
                if heavy_type(q):
                    return True
                local = self.ctx.classes.get(q) if q else None
                if local is not None and local is not c:
                    if cst_derives(local, depth + 1):
                        return True
                elif summary_derives(self.ctx.absolute(q), depth + 1):
                    return True
            return False

        return cst_derives(cls, 0)

    # -- what the release path drops -----------------------------------------------
    def _method_facts(self, fn: cst.FunctionDef) -> _Facts:
        key = id(fn)
        if key not in self._facts:
            self._facts[key] = _facts(fn)
        return self._facts[key]

    def _bases(self, owner) -> list:
        """Base classes of `owner` the project has: ClassDefs of this file, summaries of
        other files."""
        index = self.ctx.index
        found = []
        if isinstance(owner, cst.ClassDef):
            for base in owner.bases:
                q = self.ctx.qualname(base.value)
                local = self.ctx.classes.get(q) if q else None
                if local is not None and local is not owner:
                    found.append(local)
                    continue
                summary = index.classes.get(index.resolve(self.ctx.absolute(q)) or "")
                if summary is not None:
                    found.append(summary)
        else:
            for base in owner.bases:
                summary = index.classes.get(index.resolve(base) or "")
                if summary is not None and summary is not owner:
                    found.append(summary)
        return found

    def _method(self, owner, name: str) -> Optional[cst.FunctionDef]:
        if isinstance(owner, cst.ClassDef):
            return self.ctx.methods(owner).get(name)
        summary = owner.methods.get(name)
        if summary is None:
            return None
        return sources(self.ctx.index).function(summary.path, summary.line)

    def _has_method(self, owner, name: str) -> bool:
        if isinstance(owner, cst.ClassDef):
            return name in self.ctx.methods(owner)
        return name in owner.methods

    def _lookup(self, owner, name: str, depth: int = 0):
        """(defining class, method) for `name` looked up from `owner` (MRO-like)."""
        if depth > _MAX_DEPTH:
            return None
        if self._has_method(owner, name):
            return owner, self._method(owner, name)
        for base in self._bases(owner):
            found = self._lookup(base, name, depth + 1)
            if found is not None:
                return found
        return None

    def _dropped(self, cls: cst.ClassDef, releases: list) -> Optional[set[str]]:
        """Attributes the release methods drop, with what they call; None when they drop
        attributes we cannot name."""
        assigned = set()
        for fn in body_functions(cls):
            assigned.update(k[5:] for k in self.ctx.heavy.local_assignments(fn) if k.startswith("self."))
        dropped: set[str] = set()
        seen: set[int] = set()
        todo = [(cls, fn) for fn in releases]
        while todo:
            owner, fn = todo.pop()
            if fn is None:
                if owner is not cls:
                    return None  # a project method we could not read
                continue
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            facts = self._method_facts(fn)
            if facts.dynamic:
                return None
            dropped |= facts.drops
            for name in facts.self_calls:
                found = self._lookup(cls, name)
                if found is not None:
                    todo.append(found)
                elif name in assigned:
                    return None  # a callable attribute (a finalizer): may drop anything
            for name in facts.super_calls:
                for base in self._bases(owner):
                    found = self._lookup(base, name)
                    if found is not None:
                        todo.append(found)
                        break
            for base_expr, name in facts.base_calls:
                target = None
                if isinstance(owner, cst.ClassDef):
                    q = self.ctx.qualname(base_expr)
                    for base in self._bases(owner):
                        label = base.name.value if isinstance(base, cst.ClassDef) else base.qualname
                        if q and (label == q or label.endswith("." + q.rsplit(".", 1)[-1])):
                            target = base
                            break
                if target is None:
                    return None  # `helper.close(self)`: hands `self` over
                found = self._lookup(target, name)
                if found is not None:
                    todo.append(found)
        return dropped

    # -- reporting -----------------------------------------------------------------
    def _report(self, cls: cst.ClassDef, release: cst.FunctionDef, kept: list[_Heavy], methods) -> None:
        def describe(h: _Heavy) -> str:
            what = f"`{_short(self.ctx.code(h.origin.func))}(...)`"
            return f"`self.{h.attr}` ({what} in `{h.fn.name.value}()`)"

        listed = [describe(h) for h in kept[:5]]
        if len(kept) > 5:
            listed.append(f"{len(kept) - 5} more")
        names = ", ".join(listed[:-1]) + (" nor " if len(listed) > 1 else "") + listed[-1]
        where = f"{cls.name.value}.{release.name.value}()"
        message = (
            f"`{where}` never drops {names}: no release method deletes "
            f"{'it' if len(kept) == 1 else 'them'}, sets {'it' if len(kept) == 1 else 'them'} "
            f"to `None`, clears or releases {'it' if len(kept) == 1 else 'them'}, so the memory "
            f"held stays allocated as long as the `{cls.name.value}` lives on after release"
        )
        related = [RelatedNode(f"`self.{h.attr}` is assigned a heavy object here", h.value) for h in kept]
        self.report(release.name, message, fix=self._fix(cls, release, kept, methods),
                    related=related, statement=release)

    # -- fix -----------------------------------------------------------------------
    def _fix(self, cls, release: cst.FunctionDef, kept: list[_Heavy], methods):
        if self._has_slots(cls):
            return None
        statements, spelled = [], []
        for h in kept:
            if h.attr in methods:
                continue
            method = self._release_method_of(h)
            if method is None:
                statements.append(cst.parse_statement(f"self.{h.attr} = None\n"))
                spelled.append(f"`self.{h.attr} = None`")
                continue
            call = f"self.{h.attr}.{method}()"
            always, maybe_none = self._set_in_init(cls, h.attr)
            if always and not maybe_none:
                code = f"{call}\n"
            elif always:
                code = f"if self.{h.attr} is not None:\n    {call}\n"
            else:
                code = f'if getattr(self, "{h.attr}", None) is not None:\n    {call}\n'
            statements.append(cst.parse_statement(code))
            spelled.append(f"`{call}`")
        if not statements:
            return None
        new = _append(release, statements)
        if new is None:
            return None
        return self.fix(f"Add {', '.join(spelled)} at the end of `{release.name.value}()`",
                        {release: new})

    def _has_slots(self, cls: cst.ClassDef) -> bool:
        for stmt in body_statements(cls):
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    targets = []
                    if isinstance(small, cst.Assign):
                        targets = [t.target for t in small.targets]
                    elif isinstance(small, cst.AnnAssign):
                        targets = [small.target]
                    if any(isinstance(t, cst.Name) and t.value == "__slots__" for t in targets):
                        return True
        return False

    def _release_method_of(self, h: _Heavy) -> Optional[str]:
        """A release method of the attribute's class callable without arguments."""
        qualified = self._constructor_of(h)
        if qualified is None:
            return None
        index = self.ctx.index
        summary = index.classes.get(qualified)
        if summary is None:
            return None
        local = self.ctx.classes.get(summary.qualname.rsplit(".", 1)[1]) \
            if summary.qualname == f"{self.ctx.module_name}.{summary.qualname.rsplit('.', 1)[1]}" else None
        owner = local if local is not None else summary
        for name in self.ctx.settings.release_methods:
            if name in _DUNDER_RELEASE:
                continue
            found = self._lookup(owner, name)
            if found is None:
                continue
            fn = found[1]
            if fn is None or fn.asynchronous is not None:
                return None
            if _decorator_words(fn) & {"staticmethod", "classmethod", "property", "abstractmethod"}:
                return None
            params = fn.params
            positional = [*params.posonly_params, *params.params][1:]
            if any(p.default is None for p in (*positional, *params.kwonly_params)):
                return None
            return name
        return None

    def _constructor_of(self, h: _Heavy) -> Optional[str]:
        """The project class the attribute's value is built from (qualified)."""
        candidates = [h.origin.func]
        if h.annotation is not None:
            candidates += _annotation_names(h.annotation)
        index = self.ctx.index
        for expr in candidates:
            q = index.resolve(self.ctx.absolute(self.ctx.qualname(expr)))
            if q and index.classes.get(q) is not None:
                return q
        return None

    def _set_in_init(self, cls: cst.ClassDef, attr: str) -> tuple[bool, bool]:
        """(always set by `__init__`, may be None)."""
        init = self.ctx.methods(cls).get("__init__")
        always = False
        if init is not None:
            for stmt in body_statements(init):
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        targets = []
                        if isinstance(small, cst.Assign):
                            targets = [t.target for t in small.targets]
                        elif isinstance(small, cst.AnnAssign) and small.value is not None:
                            targets = [small.target]
                        if any(self_attribute(t) == attr for t in targets):
                            always = True
        maybe_none = False
        for fn in body_functions(cls):
            for value, ann in self.ctx.heavy.local_assignments(fn).get(f"self.{attr}", ()):
                if value is None or not isinstance(value, cst.Call):
                    maybe_none = True
        return always, maybe_none


# Registries whose callbacks run when the process exits or the object is collected.
_EXIT_REGISTRIES = frozenset({"atexit.register", "weakref.finalize"})


class _ReleaseUses(cst.CSTVisitor):
    """How a class's methods use its release method `name` through `self` (or
    `super()`): called from `__del__` or registered for exit (`at_exit`), or called or
    handed on anywhere else (`live`: it may run while the object lives on)."""

    def __init__(self, ctx, name: str) -> None:
        self.ctx = ctx
        self.name = name
        self.at_exit = False
        self.live = False
        self._method = ""
        self._judged: set[int] = set()

    def scan(self, cls: cst.ClassDef) -> None:
        for method in body_functions(cls):
            self._method = method.name.value
            visit(method.body, self)

    def _names_release(self, expr) -> bool:
        return isinstance(expr, cst.Attribute) and expr.attr.value == self.name and (
            is_self(expr.value) or (isinstance(expr.value, cst.Call) and isinstance(expr.value.func, cst.Name)
                                    and expr.value.func.value == "super"))

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) in _EXIT_REGISTRIES:
            for arg in node.args:
                if self._names_release(arg.value):
                    self._judged.add(id(arg.value))
                    self.at_exit = True
        elif self._names_release(node.func):
            self._judged.add(id(node.func))
            if self._method == "__del__":
                self.at_exit = True
            else:
                self.live = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if id(node) not in self._judged and self._names_release(node):
            self.live = True  # handed on (`signal.signal(SIGTERM, self.close)`)


def called_on_instance(index, key: tuple[str, str]) -> bool:
    """Does code anywhere in the project call method `name` of the class `qualified` on
    what it can be told is an instance: `<...>.x.name()` where a class assigns
    `self.x = Cls(...)` (or a function annotated to return one), `v.name()` where the
    function binds `v = Cls(...)` or annotates `v: Cls`? Other receivers are unknown and
    not counted; `self.name()` is the class's own business. A question for
    `ProjectIndex.ask`."""
    qualified, name = key
    suffix = "." + name
    holders = {attr for summary in index.classes.values() for attr, makers in summary.attributes.items()
               if any(_builds(index, q, qualified) for q in makers)}
    for function in index.functions.values():
        for call in function.calls:
            if not call.endswith(suffix):
                continue
            receiver = call[:-len(suffix)]
            head, _, last = receiver.rpartition(".")
            if head and last in holders:
                return True
            if not head and receiver not in ("self", "cls") and _binds_instance(index, function, receiver, qualified):
                return True
    return False


def _builds(index, maker: str, qualified: str) -> bool:
    """Does calling `maker` give an instance of `qualified` (the class, or a function
    annotated to return it)?"""
    resolved = index.resolve(maker) or maker
    if resolved == qualified:
        return True
    function = index.functions.get(resolved) if "." in resolved else None
    return function is not None and any(index.resolve(r) == qualified for r in function.returns)


def _binds_instance(index, function, variable: str, qualified: str) -> bool:
    """Does `function` bind the local `variable` to an instance of `qualified`
    (`v = Cls(...)`, `v: Cls`, a parameter annotated `Cls`)? Read with `ast`."""
    parsed = sources(index).tree(function.path)
    file = index.files.get(os.path.abspath(function.path))
    if parsed is None or file is None:
        return False
    node = next((n for n in ast.walk(parsed[0]) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.lineno == function.line), None)
    if node is None:
        return False

    def names_class(expr) -> bool:
        return expr is not None and any(
            isinstance(n, (ast.Name, ast.Attribute)) and index.resolve(qualified_in(file, n)) == qualified
            for n in ast.walk(expr))

    arguments = node.args
    for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        if arg.arg == variable and names_class(arg.annotation):
            return True
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and any(
                isinstance(t, ast.Name) and t.id == variable for t in n.targets):
            maker = qualified_in(file, n.value.func)
            if maker and _builds(index, maker, qualified):
                return True
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == variable \
                and names_class(n.annotation):
            return True
    return False


def _callee_word(call: cst.Call) -> Optional[str]:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None


def _annotation_names(ann: cst.BaseExpression) -> list:
    """`X`, `X | None`, `Optional[X]` -> [X]."""
    if isinstance(ann, cst.BinaryOperation):
        return _annotation_names(ann.left) + _annotation_names(ann.right)
    if isinstance(ann, cst.Subscript):
        return [e.slice.value for e in ann.slice if isinstance(e.slice, cst.Index)
                and isinstance(e.slice.value, (cst.Name, cst.Attribute))]
    if isinstance(ann, (cst.Name, cst.Attribute)):
        return [ann]
    return []


def _decorator_words(fn: cst.FunctionDef) -> set[str]:
    words = set()
    for d in fn.decorators:
        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        if isinstance(target, cst.Attribute):
            words.add(target.attr.value)
        elif isinstance(target, cst.Name):
            words.add(target.value)
    return words


def _short(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 40 else code[:37] + "..."


def _is_stub(stmt) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(
            isinstance(s, (cst.Pass, cst.Raise))
            or (isinstance(s, cst.Expr) and isinstance(s.value, (cst.SimpleString, cst.Ellipsis,
                                                                  cst.ConcatenatedString)))
            for s in stmt.body
        )
    return False


def _raises(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Raise) for s in stmt.body)


# Calls that only tidy up after releasing (`gc.collect()`, `torch.cuda.empty_cache()`,
# logging): a fix goes before a final run of them, so that they see the memory freed.
_FLUSH_WORDS = frozenset(
    {"collect", "empty_cache", "synchronize", "debug", "info", "warning", "log", "print",
     "info_once", "debug_once"}
)


def _is_flush(stmt) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(
            isinstance(s, cst.Expr) and isinstance(s.value, cst.Call)
            and _callee_word(s.value) in _FLUSH_WORDS
            for s in stmt.body
        )
    if isinstance(stmt, cst.If):
        blocks = [stmt.body]
        orelse = stmt.orelse
        while orelse is not None:
            if isinstance(orelse, cst.If):
                blocks.append(orelse.body)
                orelse = orelse.orelse
            else:
                blocks.append(orelse.body)
                orelse = None
        return all(
            isinstance(b, cst.IndentedBlock) and b.body and all(_is_flush(s) for s in b.body)
            for b in blocks
        )
    return False


def _frees(stmt) -> bool:
    """Does a flush statement collect garbage or empty a cache?"""
    found = False

    class _Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            if _callee_word(node) in ("collect", "empty_cache"):
                found = True

    visit(stmt, _Finder())
    return found


def _append(fn: cst.FunctionDef, statements: list) -> Optional[cst.FunctionDef]:
    """Statements at the end of `fn`: before a final `return` (a bare one, or one whose
    value does not involve `self`) and before a final run of `gc.collect()` /
    `empty_cache()` / logging calls; None when the end is not reachable that way."""
    body = fn.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return append_to_function(fn, statements)
    stmts = list(body.body)
    k = len(stmts)
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Raise):
        return None
    if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return):
        value = last.body[-1].value
        if len(last.body) > 1 or (value is not None and _mentions_self(value)):
            return None
        k -= 1
    end = k
    while k > 0 and _is_flush(stmts[k - 1]):
        k -= 1
    if not any(_frees(stmt) for stmt in stmts[k:end]):
        k = end  # only logging or synchronising: the end stays the end
    if k == len(stmts):
        return append_to_function(fn, statements)
    return fn.with_changes(body=body.with_changes(body=[*stmts[:k], *statements, *stmts[k:]]))


def _mentions_self(expr) -> bool:
    class _Finder(cst.CSTVisitor):
        found = False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == "self":
                self.found = True

    finder = _Finder()
    visit(expr, finder)
    return finder.found
