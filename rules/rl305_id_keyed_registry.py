"""RL305 id-keyed-registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.walk import visit
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.analysis.heavy import find_param
from retainlint.analysis.release import FINALIZER, fix_release_method
from retainlint.rules.prefilters.rl305 import IdKeyedRegistryPrefilter
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.cstutil import is_self
from retainlint.analysis.holding import (
    Scopes,
    ctx_code,
    first_slice,
    holds_heavy,
    reaches,
)

_DICT_CTORS = frozenset(
    {"dict", "builtins.dict", "collections.defaultdict", "collections.OrderedDict",
     "typing.Dict", "typing.DefaultDict", "typing.OrderedDict"}
)
# methods that take entries out of a dict
_REMOVERS = frozenset({"pop", "popitem", "clear", "__delitem__"})
# builtins that only read a container passed to them (anything else may prune it)
_READERS = frozenset(
    {
        "len", "list", "tuple", "sorted", "iter", "bool", "any", "all", "repr", "str", "print",
        "id", "isinstance", "dict", "set", "frozenset", "enumerate", "reversed", "min", "max",
        "sum", "hash", "type", "next", "zip", "map", "filter",
    }
)
_ID = frozenset({"id", "builtins.id"})
_IMMORTAL_ATTRS = frozenset({"f_globals", "__globals__", "__class__", "__module__", "__builtins__"})
_IMMORTAL_CALLS = frozenset(
    {"globals", "builtins.globals", "type", "builtins.type", "importlib.import_module",
     "inspect.getmodule", "sys._getframe"}
)


@dataclass
class _Registry:
    ref: tuple
    name: str
    target: cst.Name
    statement: Optional[cst.CSTNode]


@dataclass
class _Event:
    ref: tuple
    kind: str  # "write" | "remove" | "escape"
    key: Optional[cst.BaseExpression] = None
    value: Optional[cst.BaseExpression] = None
    node: Optional[cst.CSTNode] = None
    statement: Optional[cst.CSTNode] = None
    function: Optional[cst.FunctionDef] = None
    cls: Optional[cst.ClassDef] = None


class IdKeyedRegistry(Rule):
    prefilter = IdKeyedRegistryPrefilter
    name = "id-keyed-registry"
    summary = "A module- or class-level registry keyed by id(obj) (or another per-object key) whose value is obj keeps every obj alive"
    severity = Severity.WARNING  # an error when the object is (or holds) a model or a tensor
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports a write to a module-level (or class-level) `dict`, `defaultdict` or
`OrderedDict` keyed by `id(obj)` whose value is `obj` or holds it -
`registry[id(obj)] = obj`, most often `_instances[id(self)] = self`, also
`registry[id(obj)] = (obj, meta)`, `registry[id(self)] = self.callback` (a bound
method), `registry[(id(obj), name)] = Wrapper(obj)`, `.setdefault(id(obj), obj)` - when
nothing in the file ever removes entries (`del registry[...]`, `.pop`, `.popitem`,
`.clear`, rebinding it) or hands the registry to other code that might.

The same holds for any key made fresh for each object: `registry[self.uid] = self` where
the class sets `self.uid` from `uuid.uuid4()`, `next(counter)` or `id(self)` (in a method
or as a dataclass field's `default_factory`), and `registry[token] = obj` where the local
`token` is such a value. A key many objects share (`registry[self.name] = self`) replaces
entries instead of piling them up and is not reported.

A removal that only runs from `__del__` (in `__del__` itself, or in a method `__del__`
calls, such as `cleanup()`) does not count: `__del__` cannot run while the registry holds
the object. A method a context manager's `__exit__` also calls does count.

Instance attributes (`self._by_id = {}` in `__init__`) and local dicts die with their
owner and are not reported; neither are `weakref.WeakValueDictionary` registries,
values that do not hold the object (`registry[id(obj)] = name`,
`registry[id(obj)] = weakref.ref(obj)`), nor objects that live as long as the process
anyway (module namespaces such as `frame.f_globals` or `globals()`, classes).

Reported as an error when the object is heavy (a model, a tensor, an instance of a class
holding one), as a warning otherwise.

## Why it leaks
The `id()` key looks harmless - it is just an int - but the value is the object itself,
and a module global or a class attribute is a GC root: every object ever registered
stays alive until the interpreter exits. Worse, once an object did die (if the entry
held something else), its id can be reused by a new object, which then finds a stale
entry.

## Example
```python
import uuid

_images = {}

class Image:
    def __init__(self, path):
        self.uid = uuid.uuid4().hex
        _images[self.uid] = self  # RL305: every image ever made stays

_live_engines = {}

class Engine:
    def __init__(self, model):
        self.model = model
        _live_engines[id(self)] = self  # RL305: the engine and its model never die
```

## Fix (suggestion only)
Use a `weakref.WeakValueDictionary` (the entry disappears with the object), or remove
the entry in the object's release method (`_live_engines.pop(id(self), None)` in
`shutdown()`/`close()`).
"""

    valid = [
        # removed on release
        """
_live = {}

class Engine:
    def __init__(self):
        _live[id(self)] = self

    def shutdown(self):
        _live.pop(id(self), None)
""",
        # a weak-valued registry, and values that are not the object
        """
import weakref

_live = weakref.WeakValueDictionary()
_names = {}

class Engine:
    def __init__(self, name):
        _live[id(self)] = self
        _names[id(self)] = name
        _names[id(self)] = weakref.ref(self)
""",
        # a key shared by many objects; a removal a context manager's exit runs
        """
_PLUGINS = {}
_OPEN = {}

class Plugin:
    def __init__(self, name):
        self.name = name
        _PLUGINS[self.name] = self

class Connection:
    def __init__(self):
        _OPEN[id(self)] = self

    def close(self):
        _OPEN.pop(id(self), None)

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
""",
        # instance attribute and local dicts
        """
class Logger:
    def __init__(self):
        self._callbacks = {}

    def add(self, cb):
        self._callbacks[id(cb)] = cb

def dedupe(samplers):
    seen = {}
    for s in samplers:
        seen[id(s)] = s
    return list(seen.values())
""",
    ]
    invalid = [
        Example(
            """
import torch.nn as nn

_live_engines = {}

class Engine:
    def __init__(self, model: nn.Module):
        self.model = model
        _live_engines[id(self)] = self
""",
            lines=[9],
        ),
        # class-level registry, a tuple value, a bound method value, setdefault
        Example(
            """
import collections

class Session:
    _by_id: dict = {}
    _callbacks = collections.OrderedDict()

    def open(self, conn):
        Session._by_id[id(conn)] = (conn, self)
        self._callbacks.setdefault(id(self), self.on_close)

    def on_close(self):
        pass
""",
            lines=[9, 10],
        ),
        # a uuid key, and a removal that only `__del__` would run
        Example(
            """
import uuid

_IMAGES = {}
_CLIENTS = {}

class Image:
    def __init__(self, path):
        self.uid = uuid.uuid4().hex
        _IMAGES[self.uid] = self

class Client:
    def __init__(self):
        _CLIENTS[id(self)] = self

    def cleanup(self):
        _CLIENTS.pop(id(self), None)

    def __del__(self):
        self.cleanup()
""",
            lines=[10, 14],
        ),
    ]

    def applies(self) -> bool:
        """Only files that define a dict at module level or in a top-level class body."""
        def smalls(block):
            for stmt in block:
                if isinstance(stmt, cst.SimpleStatementLine):
                    yield from stmt.body
                elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
                    yield from smalls(stmt.body.body)

        return any(
            isinstance(s, (cst.Assign, cst.AnnAssign)) and self._is_dict(s.value)
            for s in smalls(self.ctx.module.body)
        )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._scopes = Scopes(ctx)
        self._registries: list[_Registry] = []
        self._bindings: dict[tuple, int] = {}
        self._events: list[_Event] = []

    # -- collection ----------------------------------------------------------------
    def _definition_scope(self) -> Optional[tuple]:
        scope = self.ctx.scope
        if scope.functions:
            return None
        return ("a", scope.classes[-1].name.value) if scope.classes else ("g",)

    def _is_dict(self, value: Optional[cst.BaseExpression]) -> bool:
        if isinstance(value, cst.Dict):
            return True
        if isinstance(value, cst.DictComp):
            return True
        if isinstance(value, cst.Call):
            func = value.func.value if isinstance(value.func, cst.Subscript) else value.func
            return self.ctx.qualname(func) in _DICT_CTORS
        return False

    def _define(self, target: cst.BaseExpression, value, node) -> bool:
        where = self._definition_scope()
        if where is None or not isinstance(target, cst.Name):
            return False
        ref = (*where, target.value)
        self._bindings[ref] = self._bindings.get(ref, 0) + 1
        if self._is_dict(value):
            self._registries.append(_Registry(ref, target.value, target, self.ctx.scope.statement))
        return True

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if self._define(t.target, node.value, node):
                continue
            self._target(t.target, node.value)
        self._maybe_escape(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is None:
            return
        if not self._define(node.target, node.value, node):
            self._target(node.target, node.value)
        self._maybe_escape(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        ref = self._scopes.ref(node.target)
        if ref is not None:
            self._event(ref, "remove")  # `reg -= ...`, `reg |= ...`: rebuilt in place

    def _target(self, target: cst.BaseExpression, value) -> None:
        if isinstance(target, cst.Subscript):
            ref = self._scopes.ref(target.value)
            key = first_slice(target)
            if ref is not None and key is not None:
                self._event(ref, "write", key=key, value=value, node=target)
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            for e in target.elements:
                self._target(e.value, None)
            return
        if isinstance(target, cst.StarredElement):
            self._target(target.value, None)
            return
        ref = self._scopes.ref(target)
        if ref is not None:
            self._event(ref, "remove")  # rebound from a function, or shadowed on `self`

    def visit_Del(self, node: cst.Del) -> None:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = t.value if isinstance(t, cst.Element) else t
            base = t.value if isinstance(t, cst.Subscript) else t
            ref = self._scopes.ref(base)
            if ref is not None:
                self._event(ref, "remove")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _REMOVERS:
            ref = self._scopes.ref(node.value)
            if ref is not None:
                self._event(ref, "remove")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            args = [a.value for a in node.args if a.keyword is None and not a.star]
            if method in ("setdefault", "__setitem__") and len(args) >= 2:
                ref = self._scopes.ref(func.value)
                if ref is not None:
                    self._event(ref, "write", key=args[0], value=args[1], node=node)
            elif method == "update" and args and isinstance(args[0], cst.Dict):
                ref = self._scopes.ref(func.value)
                if ref is not None:
                    for e in args[0].elements:
                        if isinstance(e, cst.DictElement):
                            self._event(ref, "write", key=e.key, value=e.value, node=node)
        if self.ctx.qualname(func) not in _READERS:
            for arg in node.args:
                ref = self._scopes.ref(arg.value) if isinstance(arg.value, (cst.Name, cst.Attribute)) else None
                if ref is not None:
                    self._event(ref, "escape")

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._maybe_escape(node.value)

    def visit_Yield(self, node: cst.Yield) -> None:
        if isinstance(node.value, cst.BaseExpression):
            self._maybe_escape(node.value)

    def _maybe_escape(self, value: Optional[cst.BaseExpression]) -> None:
        if value is None:
            return
        values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else [value]
        for v in values:
            v = v.value if isinstance(v, cst.BaseElement) else v
            if isinstance(v, (cst.Name, cst.Attribute)):
                ref = self._scopes.ref(v)
                if ref is not None:
                    self._event(ref, "escape")

    def _event(self, ref, kind, **kw) -> None:
        scope = self.ctx.scope
        cls = scope.method_class or (scope.classes[-1] if scope.classes else None)
        self._events.append(
            _Event(ref, kind, statement=scope.statement, function=scope.function, cls=cls, **kw)
        )

    # -- judgement -----------------------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        if not self._registries:
            return
        by_ref: dict[tuple, list[_Event]] = {}
        for e in self._events:
            by_ref.setdefault(e.ref, []).append(e)
        for reg in self._registries:
            if self._bindings.get(reg.ref, 0) != 1:
                continue  # rebound at module level: too clever to follow
            events = by_ref.get(reg.ref, [])
            finalizer_only = [e for e in events if e.kind == "remove" and self._in_finalizer(e)]
            if any(e.kind != "write" and e not in finalizer_only for e in events):
                continue
            for e in events:
                if e.kind != "write":
                    continue
                obj = _id_argument(self.ctx, e.key)
                key_text = f"`id({ctx_code(self.ctx, obj)})`" if obj is not None else None
                if obj is None:
                    obj = self._unique_key_owner(e)
                    key_text = f"`{ctx_code(self.ctx, e.key)}` (a fresh key for every entry)"
                if obj is None or self._immortal(obj, e.function):
                    continue
                if reaches(self.ctx, e.value, obj, e.function, e.cls) is None:
                    continue
                self._report(reg, e, obj, key_text, finalizer_only[0] if finalizer_only else None)

    # -- removals that can never run ---------------------------------------------------
    def _in_finalizer(self, e: _Event) -> bool:
        """Is this removal in `__del__`, or in a method `__del__` calls (`self.cleanup()`)?
        While the registry holds the object, its `__del__` never runs."""
        if e.function is None or e.cls is None:
            return False
        name = e.function.name.value
        called = self.ctx.release.called_on_self
        if name != FINALIZER and name not in called(e.cls, FINALIZER):
            return False
        # a context manager's exit runs it for sure
        return name not in called(e.cls, "__exit__") | called(e.cls, "__aexit__")

    # -- keys unique to each object --------------------------------------------------
    def _unique_key_owner(self, e: _Event) -> Optional[cst.BaseExpression]:
        """For a key made fresh for each object - `obj.uid` where the class assigns it a
        uuid, an `id(self)` or a counter's next value, or a local holding one - the object
        the value would keep (`obj`, or the value itself for a local key)."""
        key = e.key
        if isinstance(key, cst.Attribute) and isinstance(key.value, cst.Name):
            owner = key.value
            if owner.value == "self" and e.cls is not None and self._unique_attribute(e.cls, key.attr.value):
                return owner
            return None
        if isinstance(key, cst.Name) and e.function is not None and isinstance(e.value, cst.Name):
            assigned = [v for v, _ in self.ctx.heavy.local_assignments(e.function).get(key.value, ())]
            if assigned and all(v is not None and _unique_value(self.ctx, v) for v in assigned):
                return e.value
        return None

    def _unique_attribute(self, cls: cst.ClassDef, attr: str) -> bool:
        """Does `cls` give `self.<attr>` a value unique to each instance, in a method or
        as a dataclass field's `default_factory`?"""
        values = []
        for method in self.ctx.methods(cls).values():
            values += [v for v, _ in self.ctx.heavy.local_assignments(method).get(f"self.{attr}", ())]
        for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if (isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)
                            and small.target.value == attr and isinstance(small.value, cst.Call)):
                        values += [a.value for a in small.value.args
                                   if a.keyword is not None and a.keyword.value == "default_factory"]
        return bool(values) and all(v is not None and _unique_value(self.ctx, v, owner_id=True)
                                    for v in values)

    def _immortal(self, obj: cst.BaseExpression, function) -> bool:
        """Objects that live as long as the process anyway: module namespaces
        (`globals()`, `frame.f_globals`, `fn.__globals__`, `sys.modules[...]`), classes
        (`type(x)`, `x.__class__`, `cls` of a classmethod, a class of the file)."""
        if isinstance(obj, cst.Attribute) and obj.attr.value in _IMMORTAL_ATTRS:
            return True
        if isinstance(obj, cst.Call):
            return self.ctx.qualname(obj.func) in _IMMORTAL_CALLS
        if isinstance(obj, cst.Subscript):
            return self.ctx.qualname(obj.value) == "sys.modules"
        if isinstance(obj, cst.Name):
            if obj.value == "cls" and function is not None and find_param(function, "cls") is not None:
                return True
            return obj.value in self.ctx.classes
        return False

    def _report(self, reg: _Registry, e: _Event, obj: cst.BaseExpression, key_text: str,
                finalizer_removal: Optional[_Event]) -> None:
        heavy = holds_heavy(self.ctx, obj, e.function, e.cls) or holds_heavy(
            self.ctx, e.value, e.function, e.cls)
        holder = "module global" if reg.ref[0] == "g" else f"class attribute of `{reg.ref[1]}`"
        obj_code = ctx_code(self.ctx, obj)
        value_code = ctx_code(self.ctx, e.value)
        where = ""
        if e.cls is not None and e.function is not None:
            release = fix_release_method(self.ctx, e.cls)
            if release is not None:
                where = f" (e.g. in `{release.name.value}()`)"
        value_text = f"`{obj_code}` itself" if value_code == obj_code else f"`{value_code}`, which holds `{obj_code}`"
        removal = "nothing ever removes the entry"
        related = [RelatedNode("registry defined here", reg.target)]
        if finalizer_removal is not None and finalizer_removal.function is not None:
            removal = (f"the entry is removed only by `{finalizer_removal.function.name.value}()`, "
                       "which `__del__` runs, and `__del__` never runs while the registry holds it")
            where = ""
            related.append(RelatedNode("removed only on the way to `__del__`", finalizer_removal.function.name))
        self.report(
            e.node,
            f"`{reg.name}` ({holder}) is keyed by {key_text} but stores {value_text}: "
            f"{removal}, so `{obj_code}` lives as long as the process; "
            f"use a `weakref.WeakValueDictionary` or remove the entry on release{where}",
            severity=Severity.ERROR if heavy else Severity.WARNING,
            related=related,
            statement=e.statement,
            consequence=_consequence(reg, e, obj_code, value_code, holder, heavy, key_text.partition(" (")[0]),
        )


def _consequence(reg: _Registry, e: _Event, obj_code: str, value_code: str, holder: str,
                 heavy: bool, key_code: str) -> Consequence:
    """Every object registered stays for the process: one entry per object, as its key
    is its own."""
    subject = f"`{e.cls.name.value}`" if obj_code == "self" and e.cls is not None else f"`{obj_code}`"
    shown = value_code if len(value_code) <= 40 else value_code[:37] + "..."
    value = "" if value_code == obj_code else f", with `{shown}`"
    return Consequence(f"every {subject} registered{value}{' (heavy)' if heavy else ''}",
                       f"`{reg.name}` ({holder})", "the process",
                       f"one entry per distinct {key_code}" if e.function is not None else "")


def _id_argument(ctx, key: Optional[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
    """`obj` for a key `id(obj)`, or a tuple key holding `id(obj)`."""
    if isinstance(key, cst.Call) and ctx.qualname(key.func) in _ID and len(key.args) == 1:
        return key.args[0].value
    if isinstance(key, cst.Tuple):
        for element in key.elements:
            found = _id_argument(ctx, element.value)
            if found is not None:
                return found
    return None




# calls whose result is new for every call: a key made of one names one entry
_FRESH_CALLS = frozenset(
    {"uuid.uuid1", "uuid.uuid4", "next", "builtins.next", "secrets.token_hex",
     "secrets.token_urlsafe", "os.urandom"}
)


def _unique_value(ctx, value: cst.BaseExpression, owner_id: bool = False) -> bool:
    """Is `value` made by a call fresh for every call (`uuid.uuid4().hex`,
    `str(uuid4())`, `next(_counter)`, `lambda: uuid.uuid4().hex`, `uuid.uuid4` itself as a
    factory)? With `owner_id`, `id(self)` counts too (an attribute naming its object)."""
    if isinstance(value, cst.Lambda):
        value = value.body
    if ctx.qualname(value) in _FRESH_CALLS and isinstance(value, (cst.Name, cst.Attribute)):
        return True  # `default_factory=uuid.uuid4`
    calls = _Calls()
    visit(value, calls)
    return any(
        ctx.qualname(c.func) in _FRESH_CALLS or (
            owner_id and ctx.qualname(c.func) in _ID and len(c.args) == 1
            and is_self(c.args[0].value))
        for c in calls.found)


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.found.append(node)
