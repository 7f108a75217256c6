"""Module-level (and class-level) containers and what the code does to them: shared by
RL301 (strong-module-keyed-cache) and RL302 (strong-module-valued-cache).

`ContainerTracker` is a rule mixin: during the one traversal of a file it collects the
dicts/sets defined at module level or in a top-level class body (candidates) and every
write, removal and escape of them (events); at the end of the module it hands each
candidate that is bound exactly once, with its events, to the rule's `_judge`. It also
says what kind of heavy object (module, tensor, other) an annotation or a value is, and
whether another file of the project removes entries from a module global."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from retainlint.analysis.heavy import find_param
from retainlint.project.names import HEAVY_TYPES, TENSOR_FACTORIES, UNION_WRAPPERS
from retainlint.analysis.walk import visit


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
    # "write" | "remove" | "escape" | "lookup" (`c[k]` read, `c.get(k)`; no key: keys added
    # in bulk that are not seen, `c.update(other)`, `c |= other`)
    kind: str
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
                    if isinstance(element, cst.StarredElement):
                        self._event(ref, "lookup", node=node)
                    else:
                        self._write(ref, element.value, None, node.value)
            elif isinstance(node.value, cst.Dict):
                self._dict_writes(ref, node.value, node.value)
            else:
                self._event(ref, "lookup", node=node)

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
                    elif method == "update":
                        if args and isinstance(args[0], cst.Dict):
                            self._dict_writes(ref, args[0], node)
                        if len(args) != 1 or not isinstance(args[0], cst.Dict) or any(
                                a.keyword is not None or a.star for a in node.args):
                            self._event(ref, "lookup", node=node)  # `update(other, k=v)`
            elif method in ("get", "__getitem__"):
                ref = self._ref(func.value)
                if ref is not None and node.args:
                    self._event(ref, "lookup", key=node.args[0].value, node=node)
        qualified = self.ctx.qualname(func)
        if qualified not in _READERS:
            for arg in node.args:
                ref = self._ref(arg.value)
                if ref is not None:
                    self._event(ref, "escape")

    def visit_Subscript(self, node: cst.Subscript) -> None:
        # reads, and the targets of the writes recorded above
        ref = self._ref(node.value)
        if ref is not None:
            self._event(ref, "lookup", key=first_slice(node), node=node)

    def _dict_writes(self, ref, value: cst.Dict, node) -> None:
        for element in value.elements:
            if isinstance(element, cst.DictElement):
                self._write(ref, element.key, element.value, node)
            else:
                self._event(ref, "lookup", node=node)  # `{**other}`

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


