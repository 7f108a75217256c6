"""Module-level (and class-level) containers and what the code does to them: shared by
RL301 (strong-module-keyed-cache) and RL302 (strong-module-valued-cache).

`ContainerTracker` is a rule mixin: during the one traversal of a file it collects the
dicts/sets defined at module level or in a top-level class body (candidates) and every
write, removal and escape of them (events); at the end of the module it hands each
candidate that is bound exactly once, with its events, to the rule's `_judge`. It also
says what kind of heavy object (module, tensor, other) an annotation or a value is, and
whether another file of the project removes entries from a module global."""

from __future__ import annotations

import ast
import os
import re
import weakref
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from retainlint.heavy import HEAVY_TYPES, TENSOR_FACTORIES, UNION_WRAPPERS, find_param
from retainlint import prefilter
from retainlint.imports import absolute_import
from retainlint.walk import visit
from retainlint.nodes import dotted as ast_dotted


# -- container types ---------------------------------------------------------------
_DICT_CTORS = frozenset({"dict", "builtins.dict"})
_SET_CTORS = frozenset({"set", "builtins.set"})
_DEFAULTDICT_CTORS = frozenset({"collections.defaultdict"})
_ORDERED_CTORS = frozenset({"collections.OrderedDict"})

# annotations whose outer type we replace by the weak container
_DICT_ANNS = frozenset({"dict", "builtins.dict", "typing.Dict", "typing_extensions.Dict"})
_SET_ANNS = frozenset({"set", "builtins.set", "typing.Set", "typing_extensions.Set"})
# annotations a weak container already satisfies: kept as they are
_ABSTRACT_ANNS = frozenset(
    {
        "typing.MutableMapping", "collections.abc.MutableMapping", "typing.Mapping",
        "collections.abc.Mapping", "typing.MutableSet", "collections.abc.MutableSet",
        "typing.AbstractSet", "collections.abc.Set",
    }
)
_MAPPING_ANNS = frozenset(
    {
        "typing.MutableMapping", "collections.abc.MutableMapping", "typing.Mapping",
        "collections.abc.Mapping",
    }
)
# annotations that only tell us the key type (no fix: no weak equivalent)
_OTHER_KEYED_ANNS = frozenset(
    {
        "collections.defaultdict", "typing.DefaultDict", "collections.OrderedDict",
        "typing.OrderedDict",
    }
)
_WRAPPER_ANNS = frozenset(
    {
        "typing.ClassVar", "typing.Final", "typing_extensions.Final", "typing.Annotated",
        "typing_extensions.Annotated", "ClassVar", "Final",
    }
)

_TENSOR_TYPES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"})

# methods that take entries out of a dict or a set
_REMOVERS = frozenset(
    {
        "pop", "popitem", "clear", "discard", "remove", "difference_update",
        "intersection_update", "symmetric_difference_update", "__delitem__",
    }
)
# builtins that only read a container passed to them (anything else may prune it)
_READERS = frozenset(
    {
        "len", "list", "tuple", "sorted", "iter", "bool", "any", "all", "repr", "str",
        "print", "id", "isinstance", "dict", "set", "frozenset", "enumerate", "reversed",
        "min", "max", "sum", "hash", "type", "next", "zip", "map", "filter",
        "builtins.len", "builtins.list", "builtins.tuple", "builtins.sorted",
        "builtins.isinstance", "builtins.print", "logging.debug", "logging.info",
    }
)

_MAX_DEPTH = 6


@dataclass
class Candidate:
    name: str
    scope: tuple  # ("module",) or ("class", class name)
    target: cst.Name
    small: cst.BaseSmallStatement  # the Assign / AnnAssign
    statement: Optional[cst.CSTNode]
    container: str  # "dict" | "set" | "defaultdict" | "ordered"
    empty: bool
    value: cst.BaseExpression
    annotation: Optional[cst.BaseExpression]
    key_annotation: Optional[cst.BaseExpression]
    single_target: bool
    ctor_type: Optional[cst.Subscript] = None  # `dict[K, V]` of `dict[K, V]()`


@dataclass
class Event:
    ref: tuple
    kind: str  # "write" | "remove" | "escape"
    key: Optional[cst.BaseExpression] = None
    value: Optional[cst.BaseExpression] = None
    node: Optional[cst.CSTNode] = None
    function: Optional[cst.FunctionDef] = None
    cls: Optional[cst.ClassDef] = None


@dataclass
class FunctionNames:
    bound: set = field(default_factory=set)
    globals: set = field(default_factory=set)
    nonlocals: set = field(default_factory=set)


class _NameCollector(cst.CSTVisitor):
    """Names a function binds and declares global, not entering nested scopes."""

    def __init__(self) -> None:
        self.found = FunctionNames()

    def _bind(self, target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self.found.bound.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value)

    def visit_FunctionDef(self, node) -> bool:
        self.found.bound.add(node.name.value)
        return False

    def visit_ClassDef(self, node) -> bool:
        self.found.bound.add(node.name.value)
        return False

    def visit_Lambda(self, node) -> bool:
        return False

    def visit_Global(self, node: cst.Global) -> None:
        self.found.globals.update(n.name.value for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.found.nonlocals.update(n.name.value for n in node.names)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._bind(t.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind(node.name.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        name = node.asname.name if node.asname is not None else node.name
        while isinstance(name, cst.Attribute):
            name = name.value
        self._bind(name)


def function_bindings(fn: cst.FunctionDef) -> FunctionNames:
    """The names `fn` binds and declares global/nonlocal (nested scopes not entered)."""
    collector = _NameCollector()
    visit(fn.body, collector)
    return collector.found


def first_slice(sub: cst.Subscript) -> Optional[cst.BaseExpression]:
    if sub.slice and isinstance(sub.slice[0].slice, cst.Index):
        return sub.slice[0].slice.value
    return None


# `NAME[: ann] = {` / dict / set / defaultdict / ... at column 0 or one indentation level.
_DEFINITION = re.compile(
    rb"^(?:    |  |\t)?([A-Za-z_]\w*)[ \t]*(:[^=\n]+)?=[ \t]*"
    rb"(?:\{|dict\b|set\b|defaultdict\b|OrderedDict\b|collections\.|typing\.|Dict\b|Set\b)",
    re.MULTILINE,
)
# How a container defined as NAME gets entries, as the bytes right after NAME.
_WRITES = (b"[", b".setdefault(", b".update(", b".add(", b" |=", b"|=", b".__setitem__(")


def might_define_container(data: bytes) -> bool:
    """A dict/set/... defined at module level or in a top-level class body, annotated
    (the annotation may name its key or value types) or written to somewhere in the file
    (raw bytes: a superset of what the rules look at)."""
    names = set()
    for m in _DEFINITION.finditer(data):
        if m.group(2):
            return True
        names.add(m.group(1))
    return any(name + w in data for name in names for w in _WRITES)


def names_heavy_type(data: bytes, words: tuple[str, ...], settings, index) -> bool:
    """One of `words` (torch, transformers), a configured heavy type's last component, or
    the simple name of a heavy project class appears in the raw bytes."""
    heavy = (*words, *(t.rsplit(".", 1)[-1] for t in settings.heavy_types))
    if any(t.encode() in data for t in heavy):
        return True
    # a project class deriving from nn.Module, defined in another file
    return not index.heavy_names.isdisjoint(prefilter.words(data))


# -- removals in other files -----------------------------------------------------------
_REMOVED_BY_INDEX: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def removed_in_project(index, qualified: str) -> bool:
    """Does a function or method anywhere in the project call a removing method on the
    module global `qualified` (`from pkg.mod import _CACHE` then `_CACHE.clear()`,
    `mod._CACHE.pop(k)`, through re-exports)? Read from the index's per-function call
    lists, so module-level code and `del X[k]` in other files are not seen."""
    return index.ask(_removed_anywhere, qualified)


def _removed_anywhere(index, qualified: str) -> bool:
    removed = _REMOVED_BY_INDEX.get(index)
    if removed is None:
        removed = set()
        for function in index.functions.values():
            for call in function.calls:
                owner, _, method = call.rpartition(".")
                if method in _REMOVERS and "." in owner:
                    removed.add(index.resolve(owner) or owner)
        _REMOVED_BY_INDEX[index] = removed
    return (index.resolve(qualified) or qualified) in removed


class ContainerTracker:
    """Rule mixin (list it before `Rule`): collects candidates and events; the rule
    implements `_judge(candidate, events)`. `_scopes`: the definition scopes that make
    candidates ("module", "class")."""

    _scopes: tuple[str, ...] = ("module", "class")

    def has_candidates(self) -> bool:
        """Any container defined in a scope this rule looks at (for `applies`)."""
        def statements(block, in_class):
            for stmt in block:
                if isinstance(stmt, cst.SimpleStatementLine):
                    if ("class" if in_class else "module") in self._scopes:
                        yield from stmt.body
                elif (
                    isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock)
                    and "class" in self._scopes
                ):
                    yield from statements(stmt.body.body, True)

        return any(
            isinstance(s, (cst.Assign, cst.AnnAssign)) and s.value is not None
            and self._container(s.value) is not None
            for s in statements(self.ctx.module.body, False)
        )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._candidates: list[Candidate] = []
        self._bindings: dict[tuple, int] = {}  # (scope, name) -> bindings at that scope
        self._bare_annotations: dict[tuple, cst.BaseExpression] = {}
        self._events: list[Event] = []
        self._names: dict[int, FunctionNames] = {}

    # -- collection ----------------------------------------------------------------
    def _definition_scope(self) -> Optional[tuple]:
        scope = self.ctx.scope
        if scope.functions:
            return None
        if scope.classes:
            return ("class", scope.classes[-1].name.value)
        return ("module",)

    def visit_Assign(self, node: cst.Assign) -> None:
        where = self._definition_scope()
        if where is not None:
            names = [t.target for t in node.targets if isinstance(t.target, cst.Name)]
            for n in names:
                self._bindings[(where, n.value)] = self._bindings.get((where, n.value), 0) + 1
            if names:
                self._candidate(where, names[0], node, node.value, None, len(node.targets) == 1)
        for t in node.targets:
            self._target(t.target, node.value, defining=where is not None)
        self._maybe_escape(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        where = self._definition_scope()
        if where is not None and isinstance(node.target, cst.Name):
            key = (where, node.target.value)
            if node.value is None:
                self._bare_annotations.setdefault(key, node.annotation.annotation)
                return
            self._bindings[key] = self._bindings.get(key, 0) + 1
            self._candidate(where, node.target, node, node.value, node.annotation.annotation, True)
        if node.value is not None:
            self._target(node.target, node.value, defining=where is not None)
            self._maybe_escape(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        target = node.target
        if isinstance(target, cst.Subscript):
            ref = self._ref(target.value)
            if ref is not None:
                self._write(ref, first_slice(target), None, target)
            return
        ref = self._ref(target)
        if ref is None:
            return
        if isinstance(node.operator, (cst.SubtractAssign, cst.BitAndAssign, cst.BitXorAssign)):
            self._event(ref, "remove")
        elif isinstance(node.operator, cst.BitOrAssign):
            if isinstance(node.value, cst.Set):
                for element in node.value.elements:
                    self._write(ref, element.value, None, node.value)
            elif isinstance(node.value, cst.Dict):
                for element in node.value.elements:
                    if isinstance(element, cst.DictElement):
                        self._write(ref, element.key, element.value, node.value)

    def visit_Del(self, node: cst.Del) -> None:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = getattr(t, "value", t) if isinstance(t, cst.Element) else t
            base = t.value if isinstance(t, cst.Subscript) else t
            ref = self._ref(base)
            if ref is not None:
                self._event(ref, "remove")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _REMOVERS:
            ref = self._ref(node.value)
            if ref is not None:
                self._event(ref, "remove")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in ("setdefault", "add", "update", "__setitem__"):
                ref = self._ref(func.value)
                if ref is not None:
                    args = [a.value for a in node.args if a.keyword is None and not a.star]
                    if method in ("setdefault", "__setitem__") and args:
                        self._write(ref, args[0], args[1] if len(args) > 1 else None, node)
                    elif method == "add" and args:
                        self._write(ref, args[0], None, node)
                    elif method == "update" and args and isinstance(args[0], cst.Dict):
                        for element in args[0].elements:
                            if isinstance(element, cst.DictElement):
                                self._write(ref, element.key, element.value, node)
        qualified = self.ctx.qualname(func)
        if qualified not in _READERS:
            for arg in node.args:
                ref = self._ref(arg.value)
                if ref is not None:
                    self._event(ref, "escape")

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._maybe_escape(node.value)

    def visit_Yield(self, node: cst.Yield) -> None:
        if isinstance(node.value, cst.BaseExpression):
            self._maybe_escape(node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._maybe_escape(node.value)

    def _maybe_escape(self, value: cst.BaseExpression) -> None:
        values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else [value]
        for v in values:
            v = v.value if isinstance(v, cst.BaseElement) else v
            ref = self._ref(v)
            if ref is not None:
                self._event(ref, "escape")

    def _target(self, target: cst.BaseExpression, value, defining: bool) -> None:
        if isinstance(target, cst.Subscript):
            ref = self._ref(target.value)
            if ref is not None:
                self._write(ref, first_slice(target), value, target)
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value, None, defining)
            return
        if isinstance(target, cst.StarredElement):
            self._target(target.value, None, defining)
            return
        if defining and isinstance(target, cst.Name):
            return  # counted as a binding of its scope
        ref = self._ref(target)
        if ref is not None:
            self._event(ref, "remove")  # rebinding from a function, or `cls.x = ...`

    def _write(self, ref, key, value, node) -> None:
        if key is None:
            return
        self._event(ref, "write", key=key, value=value, node=node)

    def _event(self, ref, kind, **kw) -> None:
        scope = self.ctx.scope
        self._events.append(
            Event(ref, kind, function=scope.function, cls=scope.method_class, **kw)
        )

    def _ref(self, expr: cst.BaseExpression) -> Optional[tuple]:
        """What container-like name `expr` may denote: ("g", name) for a module global,
        ("c", class name, attr) for a class attribute, ("b", class, name) for a bare name
        in a class body."""
        scope = self.ctx.scope
        if isinstance(expr, cst.Name):
            name = expr.value
            if not scope.functions:
                if scope.classes:
                    return ("b", scope.classes[-1].name.value, name)
                return ("g", name)
            for fn in reversed(scope.functions):
                names = self._function_names(fn)
                if name in names.globals:
                    return ("g", name)
                if name in names.nonlocals:
                    continue
                if name in names.bound or find_param(fn, name) is not None or _star_param(fn, name):
                    return None
            return ("g", name)
        if isinstance(expr, cst.Attribute):
            owner = expr.value
            attr = expr.attr.value
            if isinstance(owner, cst.Name):
                if owner.value in ("self", "cls") and scope.functions and scope.classes:
                    return ("c", scope.classes[-1].name.value, attr)
                if owner.value in self.ctx.classes:
                    return ("c", owner.value, attr)
            elif (
                isinstance(owner, cst.Call)
                and self.ctx.qualname(owner.func) in ("type", "builtins.type")
                and len(owner.args) == 1
                and isinstance(owner.args[0].value, cst.Name)
                and owner.args[0].value.value == "self"
                and scope.classes
            ):
                return ("c", scope.classes[-1].name.value, attr)
        return None

    def _function_names(self, fn: cst.FunctionDef) -> FunctionNames:
        key = id(fn)
        if key not in self._names:
            self._names[key] = function_bindings(fn)
        return self._names[key]

    def _candidate(self, where, target: cst.Name, small, value, annotation, single: bool) -> None:
        if where[0] not in self._scopes:
            return
        shape = self._container(value)
        if shape is None:
            return
        container, empty, ctor_key, ctor_type = shape
        self._candidates.append(
            Candidate(
                name=target.value,
                scope=where,
                target=target,
                small=small,
                statement=self.ctx.scope.statement,
                container=container,
                empty=empty,
                value=value,
                annotation=annotation,
                key_annotation=ctor_key,
                single_target=single,
                ctor_type=ctor_type,
            )
        )

    def _container(self, value: cst.BaseExpression):
        """(kind, empty, key annotation from `dict[K, V]()`, the `dict[K, V]` itself) for a
        new dict/set, else None."""
        if isinstance(value, cst.Dict):
            return "dict", not value.elements, None, None
        if isinstance(value, cst.DictComp):
            return "dict", False, None, None
        if isinstance(value, (cst.Set, cst.SetComp)):
            return "set", False, None, None
        if not isinstance(value, cst.Call):
            return None
        func, key, typed = value.func, None, None
        if isinstance(func, cst.Subscript):
            typed = func
            key = first_slice(func)
            func = func.value
        qualified = self.ctx.qualname(func)
        empty = not value.args
        if qualified in _DICT_CTORS:
            return "dict", empty, key, typed
        if qualified in _SET_CTORS:
            return "set", empty, key, typed
        if qualified in _DEFAULTDICT_CTORS:
            return "defaultdict", empty, key, typed
        if qualified in _ORDERED_CTORS:
            return "ordered", empty, key, typed
        return None

    # -- decision ------------------------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        if not self._candidates:
            return
        by_key: dict[tuple, Candidate] = {}
        for c in self._candidates:
            if self._bindings.get((c.scope, c.name), 0) == 1:
                by_key[(c.scope, c.name)] = c
        if not by_key:
            return
        events: dict[tuple, list[Event]] = {}
        for event in self._events:
            key = self._resolve(event.ref, by_key)
            if key is not None:
                events.setdefault(key, []).append(event)
        for key, candidate in by_key.items():
            self._judge(candidate, events.get(key, []))

    def _removed_elsewhere(self, c: Candidate) -> bool:
        """Another file of the project takes entries out of `c` (see `removed_in_project`)."""
        owner = f"{c.scope[1]}." if c.scope[0] == "class" else ""
        return removed_in_project(self.ctx.index, f"{self.ctx.module_name}.{owner}{c.name}")

    def _resolve(self, ref: tuple, by_key: dict) -> Optional[tuple]:
        if ref[0] == "g":
            key = (("module",), ref[1])
            return key if key in by_key else None
        if ref[0] == "b":
            key = (("class", ref[1]), ref[2])
            if key in by_key or self._bindings.get(key):
                return key if key in by_key else None
            key = (("module",), ref[2])
            return key if key in by_key else None
        # ("c", class, attr): the class or the first in-file base defining it
        seen: set[str] = set()
        pending = [ref[1]]
        while pending:
            name = pending.pop(0)
            if name in seen:
                continue
            seen.add(name)
            key = (("class", name), ref[2])
            if key in by_key:
                return key
            if self._bindings.get(key):
                return None
            cls = self.ctx.classes.get(name)
            if cls is not None:
                pending.extend(b.value.value for b in cls.bases if isinstance(b.value, cst.Name))
        return None


    def _retype_value(self, value: cst.BaseExpression, outer: str) -> cst.BaseExpression:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Subscript):
            return value.with_changes(func=value.func.with_changes(value=cst.parse_expression(outer)))
        return cst.parse_expression(f"{outer}()")

    def _retype_annotation(self, ann: cst.BaseExpression, outer: str):
        if isinstance(ann, cst.SimpleString):
            try:
                inner = cst.parse_expression(ann.evaluated_value)
            except Exception:
                return None
            new = self._retype_annotation(inner, outer)
            if new is None:
                return None
            text = cst.Module(body=[]).code_for_node(new)
            if ann.quote in text:
                return None
            return ann.with_changes(value=f"{ann.prefix}{ann.quote}{text}{ann.quote}")
        if isinstance(ann, cst.Subscript):
            qualified = self.ctx.qualname(ann.value)
            if qualified in _WRAPPER_ANNS and ann.slice and isinstance(ann.slice[0].slice, cst.Index):
                inner = self._retype_annotation(ann.slice[0].slice.value, outer)
                if inner is None:
                    return None
                first = ann.slice[0].with_changes(slice=ann.slice[0].slice.with_changes(value=inner))
                return ann.with_changes(slice=[first, *ann.slice[1:]])
            if qualified in _DICT_ANNS or qualified in _SET_ANNS:
                return ann.with_changes(value=cst.parse_expression(outer))
            if qualified in _ABSTRACT_ANNS:
                return ann
            return None
        qualified = self.ctx.qualname(ann)
        if qualified in _DICT_ANNS or qualified in _SET_ANNS:
            return cst.parse_expression(outer)
        if qualified in _ABSTRACT_ANNS:
            return ann
        return None

    def _holds(self, value, key, function, cls, depth: int) -> bool:
        """Is `value` the key, or obviously built around it (so it keeps the key alive)?"""
        if depth > 3:
            return False
        code = self.ctx.code
        key_code = code(key)
        if code(value) == key_code:
            return True
        if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
            return any(self._holds(e.value, key, function, cls, depth + 1) for e in value.elements)
        if isinstance(value, cst.Dict):
            return any(
                (isinstance(e, cst.DictElement) and self._holds(e.key, key, function, cls, depth + 1))
                or self._holds(e.value, key, function, cls, depth + 1)
                for e in value.elements
            )
        if isinstance(value, cst.Call):
            return any(self._holds(a.value, key, function, cls, depth + 1) for a in value.args)
        if isinstance(value, cst.Attribute) and code(value.value) == key_code:
            # a bound method holds its instance
            attr = value.attr.value
            if attr in ("forward", "__call__"):
                return True
            return any(attr in self.ctx.methods(k) for k in self.ctx.classes.values())
        if isinstance(value, cst.Lambda) and isinstance(key, cst.Name):
            return key.value in code(value.body)  # conservative: any mention
        if isinstance(value, cst.Name) and function is not None:
            for assigned, _ in self.ctx.heavy.local_assignments(function).get(value.value, ()):
                if isinstance(assigned, (cst.Tuple, cst.List, cst.Set, cst.Dict, cst.Call, cst.Lambda)):
                    if self._holds(assigned, key, function, cls, depth + 1):
                        return True
        return False

    # -- key types -----------------------------------------------------------------
    def _annotation_key(self, ann: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """K of `dict[K, V]`, `Dict[K, V]`, `set[K]`, ... (through strings, ClassVar, Final)."""
        if isinstance(ann, cst.SimpleString):
            try:
                return self._annotation_key(cst.parse_expression(ann.evaluated_value))
            except Exception:
                return None
        if not isinstance(ann, cst.Subscript):
            return None
        qualified = self.ctx.qualname(ann.value)
        if qualified in _WRAPPER_ANNS:
            first = first_slice(ann)
            return self._annotation_key(first) if first is not None else None
        if qualified in _DICT_ANNS or qualified in _SET_ANNS or qualified in _ABSTRACT_ANNS or qualified in _OTHER_KEYED_ANNS:
            return first_slice(ann)
        return None

    def _annotation_value(self, ann: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """V of `dict[K, V]`, `Dict[K, V]`, `Mapping[K, V]`, `defaultdict[K, V]`, ...
        (through strings, ClassVar, Final)."""
        if isinstance(ann, cst.SimpleString):
            try:
                return self._annotation_value(cst.parse_expression(ann.evaluated_value))
            except Exception:
                return None
        if not isinstance(ann, cst.Subscript):
            return None
        qualified = self.ctx.qualname(ann.value)
        if qualified in _WRAPPER_ANNS:
            first = first_slice(ann)
            return self._annotation_value(first) if first is not None else None
        if (
            (qualified in _DICT_ANNS or qualified in _OTHER_KEYED_ANNS
             or qualified in _MAPPING_ANNS)
            and len(ann.slice) == 2 and isinstance(ann.slice[1].slice, cst.Index)
        ):
            return ann.slice[1].slice.value
        return None

    def _ann_kinds(self, ann) -> set[str]:
        oracle = self.ctx.heavy
        if ann is None:
            return set()
        if isinstance(ann, cst.Annotation):
            ann = ann.annotation
        if isinstance(ann, cst.SimpleString):
            try:
                return self._ann_kinds(cst.parse_expression(ann.evaluated_value))
            except Exception:
                return set()
        if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
            return self._ann_kinds(ann.left) | self._ann_kinds(ann.right)
        if isinstance(ann, cst.Subscript):
            if self.ctx.qualname(ann.value) in UNION_WRAPPERS:
                kinds: set[str] = set()
                for e in ann.slice:
                    if isinstance(e.slice, cst.Index):
                        kinds |= self._ann_kinds(e.slice.value)
                return kinds
            return set()
        qualified = self.ctx.qualname(ann)
        if oracle.is_heavy_qualname(qualified):
            return {self._qual_kind(qualified, frozenset())}
        return set()

    def _qual_kind(self, qualified: str, seen: frozenset) -> str:
        oracle = self.ctx.heavy
        if qualified in _TENSOR_TYPES:
            return "tensor"
        if qualified in self.ctx.settings.heavy_types:
            return "other"
        if qualified in HEAVY_TYPES or qualified.startswith("torch.nn."):
            return "module"
        cls = self.ctx.classes.get(qualified)
        if cls is not None and qualified not in seen:
            for base in cls.bases:
                bq = self.ctx.qualname(base.value)
                if oracle.is_heavy_qualname(bq):
                    return self._qual_kind(bq, seen | {qualified})
        return self._index_kind(self.ctx.index.resolve(self.ctx.absolute(qualified)), seen)

    def _index_kind(self, qualified: Optional[str], seen: frozenset) -> str:
        """A project class in another file: follow its bases through the index."""
        index = self.ctx.index
        summary = index.classes.get(qualified or "")
        if summary is None or qualified in seen:
            return "other"
        for base in summary.bases:
            resolved = index.resolve(base)
            if resolved in _TENSOR_TYPES:
                return "tensor"
            if resolved in HEAVY_TYPES or (resolved or "").startswith("torch.nn."):
                return "module"
            if index.is_heavy_class(resolved):
                return self._index_kind(resolved, seen | {qualified})
        return "other"

    def _value_kinds(self, expr, function, cls, depth: int) -> set[str]:
        """Mirror of `HeavyOracle.is_heavy_value` that says what kind of heavy object."""
        oracle = self.ctx.heavy
        if depth > _MAX_DEPTH:
            return set()
        if isinstance(expr, cst.Name):
            if expr.value == "self" and cls is not None and function is not None:
                if oracle.is_heavy_class(cls):
                    return {self._qual_kind(cls.name.value, frozenset())}
                return set()
            if function is None:
                return set()
            param = find_param(function, expr.value)
            if param is not None:
                return self._ann_kinds(param.annotation)
            kinds: set[str] = set()
            for value, ann in oracle.local_assignments(function).get(expr.value, ()):
                kinds |= self._ann_kinds(ann)
                if value is not None:
                    kinds |= self._value_kinds(value, function, cls, depth + 1)
            return kinds
        if isinstance(expr, cst.Call):
            qualified = self.ctx.qualname(expr.func)
            if qualified in TENSOR_FACTORIES:
                return {"tensor"}
            if oracle.is_heavy_qualname(qualified):
                return {self._qual_kind(qualified, frozenset())}
            target = oracle._callee(expr.func, cls)
            if target is not None and target.returns is not None:
                return self._ann_kinds(target.returns.annotation)
            return set()
        if (
            isinstance(expr, cst.Attribute)
            and cls is not None
            and isinstance(expr.value, cst.Name)
            and expr.value.value == "self"
        ):
            attr = expr.attr.value
            kinds = set()
            for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        if (
                            isinstance(small, cst.AnnAssign)
                            and isinstance(small.target, cst.Name)
                            and small.target.value == attr
                        ):
                            kinds |= self._ann_kinds(small.annotation)
            for method in self.ctx.methods(cls).values():
                for value, ann in oracle.local_assignments(method).get(f"self.{attr}", ()):
                    kinds |= self._ann_kinds(ann)
                    if value is not None:
                        kinds |= self._value_kinds(value, method, cls, depth + 1)
            return kinds
        return set()



def _star_param(fn: cst.FunctionDef, name: str) -> bool:
    params = fn.params
    for p in (params.star_arg, params.star_kwarg):
        if isinstance(p, cst.Param) and p.name.value == name:
            return True
    return False


def annotation_text(ann: cst.BaseExpression) -> str:
    if isinstance(ann, cst.SimpleString):
        return ann.evaluated_value
    return cst.Module(body=[]).code_for_node(ann)


# -- structural prefilter facts (`Rule.scan`) ---------------------------------------
# What would have to be heavy for the rules above (and RL303) to call something heavy,
# read from the file's `ast` while the project is indexed: the dotted names, as the file
# spells them, that `HeavyOracle` would judge. `might_match` then asks the index about
# those names only. Always a superset of what the oracle looks at, never fewer names.

_AST_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_CTOR_NAMES = frozenset({"dict", "set", "defaultdict", "OrderedDict"})
_UNION_NAMES = frozenset({"Optional", "Union"})
# calls that put an entry into a dict or a set (see `ContainerTracker.visit_Call`)
_INSERTING = frozenset({"setdefault", "add", "update", "__setitem__"})
_EVIDENCE_DEPTH = 12  # deeper than the oracle's, so the superset holds




def innermost_function(nodes, node: ast.AST):
    """(function, class) as the traversal's scope sees them at `node`: the innermost
    function (not lambda), and the class it is directly a method of (`method_class`)."""
    fn = cls = None
    for owner in nodes.owners(node):
        if cls is None and isinstance(owner, ast.ClassDef):
            cls = owner
        elif fn is None and isinstance(owner, _AST_FUNCTIONS):
            fn = owner
        if fn is not None and cls is not None:
            break
    if fn is None or cls is None or not any(s is fn for s in cls.body):
        return fn, None
    return fn, cls


def _slice_elements(sub: ast.Subscript) -> list:
    s = sub.slice
    return list(s.elts) if isinstance(s, ast.Tuple) else [s]


def _parse_annotation(text: str) -> Optional[ast.AST]:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class Evidence:
    """Collects into `names` the dotted names an expression's heaviness depends on, as
    `HeavyOracle.is_heavy_value` / `is_heavy_annotation` (and the container rules' kind
    inference) would look them up: annotations of parameters and locals, callees and
    the return annotations of this file's callees, a method's class and its bases,
    what methods assign to `self.x`."""

    def __init__(self, nodes) -> None:
        self.nodes = nodes
        self.names: set[str] = set()
        self._seen: dict[tuple, int] = {}
        self._file: dict[str, object] = {}  # shared with `fresh` copies: see `_lazy`

    def fresh(self) -> "Evidence":
        """Another collector over the same file, with no names yet."""
        other = Evidence(self.nodes)
        other._file = self._file
        return other

    def _lazy(self, key: str, make):
        value = self._file.get(key)
        if value is None:
            value = self._file[key] = make()
        return value

    @property
    def classes(self) -> dict[str, list[ast.ClassDef]]:
        """Top-level classes by name."""
        return self._lazy("classes", lambda: _top_level(self.nodes.tree, (ast.ClassDef,)))

    @property
    def functions(self) -> dict[str, list]:
        """Top-level functions by name."""
        return self._lazy("functions", lambda: _top_level(self.nodes.tree, _AST_FUNCTIONS))

    @property
    def ctor_aliases(self) -> frozenset:
        """Names that `from m import defaultdict as NAME` (or OrderedDict, dict, set) binds."""
        return self._lazy("ctor_aliases", lambda: frozenset(
            a.asname for node in self.nodes.of(ast.ImportFrom) for a in node.names
            if a.asname and a.name in _CTOR_NAMES))

    @property
    def imports(self) -> dict[str, set[tuple]]:
        """local name -> {(level, module, name)}: every import of the file, as the rules'
        import table reads them (function-local ones included)."""
        return self._lazy("imports", self._imports)

    def _imports(self) -> dict[str, set[tuple]]:
        found: dict[str, set[tuple]] = {}
        for node in self.nodes.of(ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                full = alias.name if alias.asname else local
                found.setdefault(local, set()).add((0, "", full))
        for node in self.nodes.of(ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    found.setdefault(alias.asname or alias.name, set()).add(
                        (node.level, node.module or "", alias.name))
        return found

    # -- results ---------------------------------------------------------------------
    def result(self, names: Optional[set] = None) -> Optional[tuple]:
        """(names, their heads' imports) for `might_be_heavy`, or None for no names."""
        names = self.names if names is None else names
        if not names:
            return None
        heads = {n.split(".", 1)[0] for n in names}
        imports = tuple(sorted((h, tuple(sorted(self.imports[h])))
                               for h in heads if h in self.imports))
        return frozenset(names), imports

    # -- names -----------------------------------------------------------------------
    def name(self, dotted: str) -> None:
        if dotted in self.names:
            return
        self.names.add(dotted)
        if dotted in self.classes:
            for cls in self.classes[dotted]:
                self.bases(cls)

    def bases(self, cls: ast.ClassDef) -> None:
        """A class of this file is heavy through its bases (or by the index)."""
        for base in cls.bases:
            dotted = ast_dotted(base)
            if dotted:
                self.name(dotted)

    def _union(self, dotted: Optional[str]) -> bool:
        if dotted is None:
            return False
        if dotted.rpartition(".")[2] in _UNION_NAMES:
            return True
        return any(b[2].rpartition(".")[2] in _UNION_NAMES
                   for b in self.imports.get(dotted.split(".", 1)[0], ()))

    # -- annotations -----------------------------------------------------------------
    def annotation(self, ann: Optional[ast.AST], depth: int = 0) -> None:
        if ann is None or depth > _EVIDENCE_DEPTH:
            return
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            self.annotation(_parse_annotation(ann.value), depth + 1)
        elif isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            self.annotation(ann.left, depth + 1)
            self.annotation(ann.right, depth + 1)
        elif isinstance(ann, ast.Subscript):
            if self._union(ast_dotted(ann.value)):
                for element in _slice_elements(ann):
                    self.annotation(element, depth + 1)
        else:
            dotted = ast_dotted(ann)
            if dotted:
                self.name(dotted)

    def container_slot(self, ann: Optional[ast.AST], slot: int, depth: int = 0) -> None:
        """The key (`slot` 0) or value (1) type of a container annotation (`dict[K, V]`,
        through strings and wrappers such as `ClassVar[...]`: any subscript's first
        element is looked into)."""
        if ann is None or depth > _EVIDENCE_DEPTH:
            return
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            self.container_slot(_parse_annotation(ann.value), slot, depth + 1)
        elif isinstance(ann, ast.Subscript):
            elements = _slice_elements(ann)
            self.container_slot(elements[0], slot, depth + 1)
            if len(elements) > slot:
                self.annotation(elements[slot])

    # -- values ----------------------------------------------------------------------
    def value(self, expr: Optional[ast.AST], fn, cls, depth: int = 0) -> None:
        """`expr`, evaluated in function `fn` (a method of `cls`, if any)."""
        if expr is None or depth > _EVIDENCE_DEPTH:
            return
        key = (id(expr), id(fn), id(cls))
        if self._seen.get(key, _EVIDENCE_DEPTH + 1) <= depth:
            return
        self._seen[key] = depth
        if isinstance(expr, ast.Name):
            if expr.id == "self" and cls is not None and fn is not None:
                self.name(cls.name)
                self.bases(cls)
                return
            if fn is None:
                return
            param = _ast_param(fn, expr.id)
            if param is not None:
                self.annotation(param.annotation)
                return
            for value, ann in self.assignments(fn).get(expr.id, ()):
                self.annotation(ann)
                self.value(value, fn, cls, depth + 1)
        elif isinstance(expr, ast.Call):
            dotted = ast_dotted(expr.func)
            if dotted:
                self.name(dotted)
            for target in self._callees(expr.func, cls):
                self.annotation(target.returns)
        elif (isinstance(expr, ast.Attribute) and cls is not None
              and isinstance(expr.value, ast.Name) and expr.value.id == "self"):
            self.attribute(cls, expr.attr, depth)

    def attribute(self, cls: ast.ClassDef, attr: str, depth: int) -> None:
        """`self.attr` in a method of `cls`: its class-level annotation and what the
        class's methods assign to it."""
        for stmt in cls.body:
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and stmt.target.id == attr):
                self.annotation(stmt.annotation)
        for method in cls.body:
            if isinstance(method, _AST_FUNCTIONS):
                for value, ann in self.assignments(method).get(f"self.{attr}", ()):
                    self.annotation(ann)
                    self.value(value, method, cls, depth + 1)

    def _callees(self, func: ast.AST, cls) -> list:
        """Functions and methods of this file that `func` may name."""
        if isinstance(func, ast.Name):
            return self.functions.get(func.id, [])
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = func.value.id
            owners = ([cls] if cls is not None else []) if owner in ("self", "cls") \
                else self.classes.get(owner, [])
            return [m for c in owners for m in c.body
                    if isinstance(m, _AST_FUNCTIONS) and m.name == func.attr]
        return []

    def assignments(self, fn) -> dict[str, list]:
        """name (or `self.attr`) -> [(value or None, annotation or None)] directly in `fn`
        (nested functions, classes and lambdas are scopes of their own)."""
        tables = self._lazy("assignments", dict)
        table = tables.get(id(fn))
        if table is None:
            table = tables[id(fn)] = {}
            nodes, first, last = self.nodes, fn.lineno, fn.end_lineno
            everywhere = self._lazy("bindings", lambda: nodes.of(
                ast.Assign, ast.AnnAssign, ast.NamedExpr))
            for node in everywhere:
                if not first <= node.lineno <= last or nodes.owner(node) is not fn:
                    continue
                if type(node) is ast.Assign:
                    for t in node.targets:
                        k = _target_key(t)
                        if k:
                            table.setdefault(k, []).append((node.value, None))
                else:
                    k = _target_key(node.target)
                    if k:
                        ann = node.annotation if type(node) is ast.AnnAssign else None
                        table.setdefault(k, []).append((node.value, ann))
        return table


def _top_level(tree: ast.Module, kinds: tuple) -> dict[str, list]:
    found: dict[str, list] = {}
    for stmt in tree.body:
        if isinstance(stmt, kinds):
            found.setdefault(stmt.name, []).append(stmt)
    return found


def _target_key(target: ast.AST) -> Optional[str]:
    if isinstance(target, ast.Name):
        return target.id
    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == "self"):
        return f"self.{target.attr}"
    return None


def _ast_param(fn, name: str) -> Optional[ast.arg]:
    args = fn.args
    for p in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if p.arg == name:
            return p
    return None


def might_be_heavy(found, summary, settings, index) -> bool:
    """Could one of the names of an `Evidence.result` be heavy (a heavy type, a tensor
    factory, a heavy project class, a project function annotated to return one)?
    Names are qualified as the file's imports make them; lookups go through the index."""
    if not found:
        return False
    names, imports = found
    bound = dict(imports)
    configured = settings.heavy_types
    configured_last = {t.rsplit(".", 1)[-1] for t in configured}
    module = summary.module
    is_package = os.path.basename(summary.path).startswith("__init__.")
    for dotted in names:
        head, _, rest = dotted.partition(".")
        if dotted.rpartition(".")[2] in configured_last:
            return True
        if head in bound:
            qualified = []
            for level, base, name in bound[head]:
                if level:
                    base = absolute_import(module, is_package, level, base or None)
                target = f"{base}.{name}" if base else name
                qualified.append(f"{target}.{rest}" if rest else target)
        else:
            qualified = [dotted, f"{module}.{dotted}"]
        for q in qualified:
            if _heavy_qualified(q, configured, index):
                return True
    return False


def _heavy_qualified(q: str, configured, index) -> bool:
    if q in TENSOR_FACTORIES or q in HEAVY_TYPES or q in configured:
        return True
    if q.startswith("torch.nn.") and q.count(".") == 2 and q.rsplit(".", 1)[1][:1].isupper():
        return True
    return index.is_heavy_class(q) or index.returns_heavy(q)


@dataclass
class ContainerFacts:
    """Containers defined at module level or in a class body (outside functions) and
    bound once there, and every write that may reach one (matched by name only: a
    superset of what `ContainerTracker._resolve` attributes)."""

    evidence: Evidence
    # (scope, name) -> [(kind, the Assign/AnnAssign, its annotation or None)], where
    # scope is None (module level) or the class name and kind "dict" | "set" (any other
    # container counts as "dict")
    candidates: dict[tuple, list] = field(default_factory=dict)
    bare: dict[tuple, list] = field(default_factory=dict)  # `NAME: ann` without a value
    # (name, key, value or None, function, method class)
    writes: list = field(default_factory=list)


def container_facts(nodes) -> ContainerFacts:
    """Computed once per file for the scans of RL301 and RL302."""
    return nodes.shared("containers", _container_facts)


def _container_facts(nodes) -> ContainerFacts:
    evidence = Evidence(nodes)
    facts = ContainerFacts(evidence)
    bindings: dict[tuple, int] = {}
    for scope, node in definitions(nodes.tree.body, None):
        value = node.value
        if type(node) is ast.Assign:
            targets = node.targets
            if len(targets) == 1:  # the common case, without building a list
                if type(targets[0]) is not ast.Name:
                    continue
                names = (targets[0].id,)
            else:
                names = [t.id for t in targets if type(t) is ast.Name]
            annotation = None
        elif type(node.target) is ast.Name:
            names = (node.target.id,)
            annotation = node.annotation
            if value is None:
                facts.bare.setdefault((scope, names[0]), []).append(annotation)
                continue
        else:
            continue
        for name in names:
            bindings[(scope, name)] = bindings.get((scope, name), 0) + 1
        if names and type(value) in _MAYBE_CONTAINERS:
            kind = _container_kind(evidence, value)
            if kind is not None:
                facts.candidates.setdefault((scope, names[0]), []).append(
                    (kind, node, annotation))
    facts.candidates = {k: v for k, v in facts.candidates.items() if bindings.get(k) == 1}
    # a container named only once in the file (its definition) is never written to
    source = nodes.source
    names = {name for _, name in facts.candidates if not name.isascii()
             or source.find(name.encode(), source.find(name.encode()) + 1) != -1}
    if names:
        for node, base, key, value in container_writes(nodes, names):
            if isinstance(key, ast.Tuple):  # `c[a, b]`: the traversal sees `a`
                key = key.elts[0] if key.elts else None
            if key is not None and not isinstance(key, ast.Slice):
                name = base.id if isinstance(base, ast.Name) else base.attr
                facts.writes.append((name, key, value, *innermost_function(nodes, node)))
    return facts


_BLOCKS = ("body", "orelse", "finalbody")
_NO_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Expr, ast.Import,
                             ast.ImportFrom, ast.Return, ast.Pass, ast.AugAssign})
# value node types `_container_kind` may accept
_MAYBE_CONTAINERS = frozenset({ast.Dict, ast.DictComp, ast.Set, ast.SetComp, ast.Call})


def definitions(statements, scope: Optional[str], found: Optional[list] = None) -> list:
    """[(scope, Assign/AnnAssign)] outside functions: at module level (scope None) or in
    a class body (the innermost class's name), inside if/try/with/for blocks too."""
    if found is None:
        found = []
    for stmt in statements:
        kind = type(stmt)
        if kind is ast.Assign or kind is ast.AnnAssign:
            found.append((scope, stmt))
        elif kind is ast.ClassDef:
            definitions(stmt.body, stmt.name, found)
        elif kind in _NO_DEFINITIONS:
            continue
        else:
            for field_name in _BLOCKS:
                block = getattr(stmt, field_name, None)
                if block:
                    definitions(block, scope, found)
            for part in getattr(stmt, "handlers", None) or getattr(stmt, "cases", None) or ():
                definitions(part.body, scope, found)
    return found


def _container_kind(evidence: Evidence, value: ast.AST) -> Optional[str]:
    """"dict"/"set" for what may be a new container (coarser than `_container`: any
    callee named dict/set/defaultdict/OrderedDict, or imported under another name)."""
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return "dict"
    if isinstance(value, (ast.Set, ast.SetComp)):
        return "set"
    if not isinstance(value, ast.Call):
        return None
    func = value.func.value if isinstance(value.func, ast.Subscript) else value.func
    dotted = ast_dotted(func)
    if dotted is None:
        return None
    if dotted in ("set", "builtins.set"):
        return "set"
    if dotted.rpartition(".")[2] in _CTOR_NAMES:
        return "dict"
    if dotted in evidence.ctor_aliases:
        return "dict"
    return None


def container_writes(nodes, names: set):
    """(node, container expression, key, value or None) for every way code puts an entry
    into a dict or a set (`ContainerTracker`'s write events, before resolution), into
    a container spelled `NAME` or `x.NAME` for one of `names`. (Subscripts stored to in
    `for`/`with` targets count too: a superset.)"""
    stores = {id(node): node for node in nodes.of(ast.Subscript)
              if type(node.ctx) is ast.Store and _base_name(node.value) in names}
    if stores:
        # `c[k] = v`: the value is the assignment's (found only for direct targets)
        valued = {}
        for node in nodes.of(ast.Assign):
            for t in node.targets:
                if id(t) in stores:
                    valued[id(t)] = node.value
        for node in nodes.of(ast.AnnAssign):
            if id(node.target) in stores:
                valued[id(node.target)] = node.value
        for key, node in stores.items():
            yield node, node.value, node.slice, valued.get(key)
    for node in nodes.of(ast.AugAssign):
        t = node.target
        if type(node.op) is ast.BitOr and type(t) is not ast.Subscript and _base_name(t) in names:
            if isinstance(node.value, ast.Set):
                for element in node.value.elts:
                    yield node, t, element, None
            elif isinstance(node.value, ast.Dict):
                for k, v in zip(node.value.keys, node.value.values):
                    if k is not None:
                        yield node, t, k, v
    for node in nodes.of(ast.Call):
        func = node.func
        if type(func) is not ast.Attribute or func.attr not in _INSERTING \
                or _base_name(func.value) not in names:
            continue
        args = [a for a in node.args if not isinstance(a, ast.Starred)]
        if not args:
            continue
        if func.attr in ("setdefault", "__setitem__"):
            yield node, func.value, args[0], args[1] if len(args) > 1 else None
        elif func.attr == "add":
            yield node, func.value, args[0], None
        elif isinstance(args[0], ast.Dict):
            for k, v in zip(args[0].keys, args[0].values):
                if k is not None:
                    yield node, func.value, k, v


def _base_name(expr: ast.AST) -> Optional[str]:
    """`NAME` or `x.NAME`: the name a write's container may be known by."""
    kind = type(expr)
    if kind is ast.Name:
        return expr.id
    if kind is ast.Attribute:
        return expr.attr
    return None
