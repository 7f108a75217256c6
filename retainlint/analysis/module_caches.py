"""Module-level (and class-level) containers and what the code does to them: shared by
RL301 (strong-module-keyed-cache) and RL302 (strong-module-valued-cache).

`ContainerTracker` is a rule mixin: during the one traversal of a file it collects the
dicts/sets defined at module level or in a top-level class body (candidates) and every
write, removal and escape of them (events); at the end of the module it hands each
candidate that is bound exactly once, with its events, to the rule's `_judge`. It also
says what kind of heavy object (module, tensor, other) an annotation or a value is, and
whether another file of the project removes entries from a module global."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor, annotation_expression
from retainlint.analysis.heavy import find_param
from retainlint.project.names import HEAVY_TYPES, TENSOR_FACTORIES, TENSOR_TYPES as _TENSOR_TYPES, UNION_WRAPPERS
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

_CLASS_ANNS = frozenset({"type", "builtins.type", "typing.Type", "typing_extensions.Type"})

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
    scope: tuple  # ("module",), ("class", class name) or ("instance", class name)
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


def instance_definitions(init: cst.FunctionDef) -> list:
    """The `self.x = ...` statements directly in the body of `__init__`."""
    found = []
    body = init.body.body if isinstance(init.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            found += [s for s in stmt.body if isinstance(s, cst.Assign) and len(s.targets) == 1
                      and isinstance(s.targets[0].target, cst.Attribute)
                      and isinstance(s.targets[0].target.value, cst.Name)
                      and s.targets[0].target.value.value == "self"]
    return found


def first_slice(sub: cst.Subscript) -> Optional[cst.BaseExpression]:
    if sub.slice and isinstance(sub.slice[0].slice, cst.Index):
        return sub.slice[0].slice.value
    return None


# -- removals in other files -----------------------------------------------------------
def removed_in_project(index, qualified: str) -> bool:
    """Does a function or method anywhere in the project call a removing method on the
    module global `qualified` (`from pkg.mod import _CACHE` then `_CACHE.clear()`,
    `mod._CACHE.pop(k)`, through re-exports)? Read from the index's per-function call
    lists, so module-level code and `del X[k]` in other files are not seen."""
    return index.ask(_removed_anywhere, qualified)


def _removed_anywhere(index, qualified: str) -> bool:
    removed = index.memo("module globals removed from", lambda: _globals_removed_from(index))
    return (index.resolve(qualified) or qualified) in removed


def _globals_removed_from(index) -> set[str]:
    removed = set()
    for function in index.functions.values():
        for call in function.calls:
            owner, _, method = call.rpartition(".")
            if method in _REMOVERS and "." in owner:
                removed.add(index.resolve(owner) or owner)
    return removed


# -- memoizing decorators ------------------------------------------------------------
_CACHE_DECORATORS = frozenset({"functools.cache", "functools.lru_cache"})


def cache_decorator(ctx, expr: cst.BaseExpression) -> bool:
    """`@functools.cache`, `@lru_cache`, `@lru_cache(maxsize=None)`, however imported."""
    if isinstance(expr, cst.Call):
        expr = expr.func
    return ctx.qualname(expr) in _CACHE_DECORATORS


def cleared_in_project(index, qualified: str) -> bool:
    """Does a function anywhere in the project call `cache_clear()` on the cached
    function `qualified` (`from pkg.mod import get_x` then `get_x.cache_clear()`)?"""
    cleared = index.memo("cached functions cleared", lambda: _cleared_anywhere(index))
    return (index.resolve(qualified) or qualified) in cleared


def _cleared_anywhere(index) -> set[str]:
    cleared = set()
    for function in index.functions.values():
        for call in function.calls:
            owner, _, method = call.rpartition(".")
            if method == "cache_clear" and owner:
                cleared.add(index.resolve(owner) or owner)
    return cleared


class ContainerTracker:
    """Rule mixin (list it before `Rule`): collects candidates and events; the rule
    implements `_judge(candidate, events)`. `_scopes`: the definition scopes that make
    candidates ("module", "class", and "instance": `self.x = {}` directly in `__init__`)."""

    _scopes: tuple[str, ...] = ("module", "class")

    def has_candidates(self) -> bool:
        """Any container defined in a scope this rule looks at (for `applies`)."""
        def statements(block, in_class):
            for stmt in block:
                if isinstance(stmt, cst.SimpleStatementLine):
                    if ("class" if in_class else "module") in self._scopes:
                        yield from stmt.body
                elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
                    if "class" in self._scopes:
                        yield from statements(stmt.body.body, True)
                    if "instance" in self._scopes:
                        init = self.ctx.methods(stmt).get("__init__")
                        if init is not None:
                            yield from instance_definitions(init)

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

    def _instance_definition(self, node: cst.Assign) -> bool:
        """`self.x = {}` directly in `__init__`, for rules that look at instance
        containers: counted as a binding of ("instance", class), never as a removal."""
        scope = self.ctx.scope
        fn, cls = scope.function, scope.method_class
        if ("instance" not in self._scopes or fn is None or cls is None
                or fn.name.value != "__init__" or len(node.targets) != 1
                or not any(node is d for d in instance_definitions(fn))):
            return False
        target = node.targets[0].target
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                and target.value.value == "self"):
            return False
        where = ("instance", cls.name.value)
        key = (where, target.attr.value)
        self._bindings[key] = self._bindings.get(key, 0) + 1
        self._candidate(where, target.attr, node, node.value, None, True)
        return True

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._instance_definition(node):
            self._maybe_escape(node.value)
            return
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
            key = (("instance", name), ref[2])
            if key in by_key or self._bindings.get(key):
                return key if key in by_key else None
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

    def _annotates_classes(self, ann: Optional[cst.BaseExpression]) -> bool:
        """Does a key or value annotation say the entries are classes (`type[nn.Module]`,
        `Type[X]`, `type`, unions of them, in strings too)? A class lives as long as its
        module: such entries pin nothing, whatever a writer's parameter annotation says."""
        if isinstance(ann, cst.SimpleString):
            try:
                return self._annotates_classes(cst.parse_expression(ann.evaluated_value))
            except Exception:
                return False
        if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
            sides = [x for x in (ann.left, ann.right) if not _is_none(x)]
            return bool(sides) and all(self._annotates_classes(x) for x in sides)
        if isinstance(ann, cst.Subscript):
            qualified = self.ctx.qualname(ann.value)
            if qualified in UNION_WRAPPERS:
                members = [e.slice.value for e in ann.slice if isinstance(e.slice, cst.Index)]
                return bool(members) and all(self._annotates_classes(m) for m in members)
            return qualified in _CLASS_ANNS
        return ann is not None and self.ctx.qualname(ann) in _CLASS_ANNS

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




# -- what a cache owns ---------------------------------------------------------------
# A per-device or per-shape memo (`_ones[device] = torch.ones(1, device=device)`, one
# workspace object per stream) keeps only what it allocated itself: a few constants or a
# fixed workspace meant to live as long as the process. What leaks is a value the memo did
# not make - a layer, a caller's tensor, an object built around either - or buffers keyed
# by object identity, one more for every model the process builds. (Shared by RL302, for
# dict values, and RL303, for singletons.)

# may hand back their argument's own memory (`torch.as_tensor(t) is t`)
_SHARING_FACTORIES = frozenset({"torch.as_tensor", "torch.from_numpy", "torch.asarray"})
# what a tensor says about itself: plain values, whatever the tensor holds
_PLAIN_ATTRIBUTES = frozenset(
    {"device", "dtype", "shape", "ndim", "is_cuda", "layout", "nbytes", "itemsize",
     "requires_grad", "index", "type", "cuda_stream"}
)
_PLAIN_METHODS = frozenset(
    {"data_ptr", "numel", "nelement", "size", "dim", "element_size", "stride",
     "storage_offset", "item", "tolist", "get_device", "is_contiguous"}
)
# identities: a key made of them is one entry per object, not per device or shape
_IDENTITY_CALLS = frozenset({"id", "hash", "builtins.id", "builtins.hash"})
_IDENTITY_METHODS = frozenset({"data_ptr", "untyped_storage", "storage"})
_OWN_DEPTH = 24  # expression nesting followed (locals are followed once each)
_PLAIN_LITERALS = (
    cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float,
    cst.Imaginary, cst.Ellipsis,
)


def _module_type(index, qualified: Optional[str]) -> bool:
    """A layer type by itself: `nn.Module` and its library subclasses, a pretrained
    model, or a type the user configured heavy (never judged a mere workspace)."""
    if not qualified or qualified in _TENSOR_TYPES:
        return False
    if qualified in HEAVY_TYPES or qualified in index.heavy_types:
        return True
    return (qualified.startswith("torch.nn.") and qualified.count(".") == 2
            and qualified.rsplit(".", 1)[1][:1].isupper())


def holds_layers(index, qualified: Optional[str], _seen: frozenset = frozenset()) -> bool:
    """Is `qualified` a layer type, or a project class that derives from one or builds one
    into an attribute (`self.proj = nn.Linear(...)`, through other project classes and
    functions annotated to return one)? A class that only allocates tensors is a
    workspace, not part of a model."""
    resolved = index.resolve(qualified) or qualified
    if not resolved or resolved in _seen or len(_seen) > _MAX_DEPTH:
        return False
    if _module_type(index, resolved):
        return True
    summary = index.classes.get(resolved)
    if summary is None:
        return False
    seen = _seen | {resolved}
    if any(holds_layers(index, base, seen) for base in summary.bases):
        return True
    for makers in summary.attributes.values():
        for callee in makers:
            if callee in TENSOR_FACTORIES:
                continue
            if holds_layers(index, callee, seen):
                return True
            function = index.functions.get(index.resolve(callee) or callee)
            if function is not None and any(holds_layers(index, r, seen) for r in function.returns):
                return True
    return False


class _Ownership:
    """What one function builds (see `builds_own`). `container`: the global the value is
    stored in; reading it back (`t = cache.get(k)`) adds nothing the cache lacks."""

    def __init__(self, ctx, function: Optional[cst.FunctionDef], cls, container: Optional[str]) -> None:
        self.ctx = ctx
        self.function = function
        self.cls = cls
        self.container = container
        self._pending: set[str] = set()  # locals being judged (`H = torch.cat([H, H])`)
        self._unpacked: Optional[dict[str, list]] = None  # see `_sources`

    # -- a value the function makes ----------------------------------------------------
    def made(self, expr, depth: int = 0) -> bool:
        if depth > _OWN_DEPTH:
            return False
        if self._neutral(expr):
            return True  # `d[k] = None`: keeps nothing
        if isinstance(expr, cst.Name):
            return self._made_name(expr, depth)
        if isinstance(expr, cst.Call):
            return self._made_call(expr, depth)
        if isinstance(expr, cst.Subscript):  # a view or a copy of what it indexes
            return self.made(expr.value, depth + 1)
        if isinstance(expr, cst.BinaryOperation):  # tensor arithmetic allocates its result
            return self.harmless(expr.left, depth + 1) and self.harmless(expr.right, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self.harmless(expr.expression, depth + 1)
        if isinstance(expr, cst.IfExp):
            return all(self._neutral(e) or self.made(e, depth + 1) for e in (expr.body, expr.orelse))
        if isinstance(expr, (cst.Tuple, cst.List)):
            return all(
                not isinstance(e, cst.StarredElement)
                and (self._neutral(e.value) or self.made(e.value, depth + 1))
                for e in expr.elements
            )
        return False

    def _neutral(self, expr) -> bool:
        """Holds nothing (`None`, a number, a string)."""
        return isinstance(expr, _PLAIN_LITERALS) or (
            isinstance(expr, cst.Name) and expr.value in ("None", "True", "False"))

    def _reads_container(self, expr) -> bool:
        return reads_container(expr, self.container)

    def _made_name(self, name: cst.Name, depth: int) -> bool:
        fn = self.function
        if fn is None or name.value in ("self", "cls") or find_param(fn, name.value) is not None:
            return False  # handed in: the caller's
        if name.value in self._pending:
            return True  # judged by its other assignments
        values = [v for v, _ in self.ctx.heavy.local_assignments(fn).get(name.value, ())]
        values += self._sources(fn).get(name.value, ())
        values = [v for v in values if v is not None and not self._neutral(v)
                  and not self._reads_container(v)]
        if not values:
            return False
        self._pending.add(name.value)
        try:
            return all(self.made(v, depth + 1) for v in values)
        finally:
            self._pending.discard(name.value)

    def _receiver(self, func) -> Optional[cst.BaseExpression]:
        """The object a method is called on (`t` of `t.to(device)`), or None for a
        function or class named through an import or this file (`torch.cat`, `Model`)."""
        if not isinstance(func, cst.Attribute):
            return None
        root = func.value
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and (
                root.value in self.ctx.imports.names or root.value in self.ctx.classes
                or root.value in self.ctx.functions):
            return None
        return func.value

    def _made_call(self, call: cst.Call, depth: int) -> bool:
        receiver = self._receiver(call.func)
        if receiver is not None:
            # `t.to(device)`, `t[idx].reshape(shape)`: a method of a value made here
            # returns that value, a view of it or a new one computed from it
            return self.made(receiver, depth + 1)
        args = all(self.harmless(a.value, depth + 1) for a in call.args)
        qualified = self.ctx.qualname(call.func)
        if qualified in _SHARING_FACTORIES:
            return args
        if qualified in TENSOR_FACTORIES:
            return True  # new storage, whatever it is filled from
        if qualified is None or self._makes_layer(qualified):
            return False  # a layer (or a model part) is no buffer of the cache's own
        # a tensor or a workspace object built from plain inputs (`_Workspace(device)`,
        # `_make_table(kind, device)`): whatever it keeps is its own, or the process's
        return args

    def _makes_layer(self, qualified: str) -> bool:
        """Does calling `qualified` build a layer: a layer class, or a function annotated
        to return one (`def load_model(path) -> nn.Module`)?"""
        index = self.ctx.index
        target = index.resolve(self.ctx.absolute(qualified)) or qualified
        if holds_layers(index, target):
            return True
        function = index.functions.get(target)
        return function is not None and any(holds_layers(index, r) for r in function.returns)

    # -- an input that reaches nothing heavy -----------------------------------------------
    def harmless(self, expr, depth: int = 0) -> bool:
        if depth > _OWN_DEPTH:
            return False
        if self._neutral(expr):
            return True
        if isinstance(expr, cst.Name):
            return self._harmless_name(expr, depth)
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in _PLAIN_ATTRIBUTES:
                return True
            return self.harmless(expr.value, depth + 1) and not self.ctx.heavy.is_heavy_value(
                expr, self.function, self.cls)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _PLAIN_METHODS:
                return True
            if self.made(expr, depth + 1):
                return True
            receiver = self._receiver(func)
            return (
                not self.ctx.heavy.is_heavy_value(expr, self.function, self.cls)
                and (receiver is None or self.harmless(receiver, depth + 1))
                and all(self.harmless(a.value, depth + 1) for a in expr.args)
            )
        if isinstance(expr, cst.Subscript):
            return self.harmless(expr.value, depth + 1)
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return all(self.harmless(e.value, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            return all(isinstance(e, cst.DictElement) and self.harmless(e.key, depth + 1)
                       and self.harmless(e.value, depth + 1) for e in expr.elements)
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self.harmless(expr.elt, depth + 1) and self._harmless_loops(expr.for_in, depth)
        if isinstance(expr, cst.BinaryOperation):
            return self.harmless(expr.left, depth + 1) and self.harmless(expr.right, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self.harmless(expr.expression, depth + 1)
        if isinstance(expr, cst.BooleanOperation):
            return self.harmless(expr.left, depth + 1) and self.harmless(expr.right, depth + 1)
        if isinstance(expr, cst.Comparison):
            return True  # a bool
        if isinstance(expr, cst.IfExp):
            return self.harmless(expr.body, depth + 1) and self.harmless(expr.orelse, depth + 1)
        return False

    def _harmless_loops(self, for_in, depth: int) -> bool:
        while for_in is not None:
            if not self.harmless(for_in.iter, depth + 1):
                return False
            for_in = for_in.inner_for_in
        return True

    def _harmless_name(self, name: cst.Name, depth: int) -> bool:
        fn = self.function
        if name.value in ("self", "cls"):
            return not (self.cls is not None and self.ctx.heavy.is_heavy_class(self.cls))
        if fn is None:
            return True
        param = find_param(fn, name.value)
        if param is not None:
            return not _mentions_heavy(self.ctx, param.annotation)
        if name.value in self._pending:
            return True
        assigned = list(self.ctx.heavy.local_assignments(fn).get(name.value, ()))
        assigned += [(v, None) for v in self._sources(fn).get(name.value, ())]
        if not assigned:
            # a global or an import lives as long as the process anyway; another binding
            # (`except E as e`, an import in the function) is not followed
            return name.value not in function_bindings(fn).bound
        self._pending.add(name.value)
        try:
            return all(
                not _mentions_heavy(self.ctx, ann)
                and (v is None or self._reads_container(v) or self.harmless(v, depth + 1))
                for v, ann in assigned
            )
        finally:
            self._pending.discard(name.value)

    def _sources(self, fn: cst.FunctionDef) -> dict[str, list]:
        """Names bound from part of a value: `a, b = pair()`, `for x in xs`,
        `with open(p) as f` -> what they come from (`pair()`, `xs`, `open(p)`)."""
        if self._unpacked is None:
            found: dict[str, list] = {}

            def bind(target, source) -> None:
                if isinstance(target, cst.Name):
                    found.setdefault(target.value, []).append(source)
                elif isinstance(target, (cst.Tuple, cst.List)):
                    for element in target.elements:
                        bind(element.value, source)
                elif isinstance(target, cst.StarredElement):
                    bind(target.value, source)

            class _Bindings(OwnScopeVisitor):
                def visit_Assign(self, node: cst.Assign) -> None:
                    for t in node.targets:
                        if isinstance(t.target, (cst.Tuple, cst.List)):
                            bind(t.target, node.value)

                def visit_For(self, node: cst.For) -> None:
                    bind(node.target, node.iter)

                def visit_WithItem(self, node: cst.WithItem) -> None:
                    if node.asname is not None:
                        bind(node.asname.name, node.item)

            visit(fn.body, _Bindings())
            self._unpacked = found
        return self._unpacked


def reads_container(expr: cst.BaseExpression, container: Optional[str]) -> bool:
    """`cache.get(k)`, `cache[k]`, `cache.setdefault(k, v)`, `cache` itself, for the global
    named `container`: what the cache holds already."""
    if container is None:
        return False
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        expr = expr.func.value
    elif isinstance(expr, cst.Subscript):
        expr = expr.value
    return isinstance(expr, cst.Name) and expr.value == container


def _mentions_heavy(ctx, ann) -> bool:
    """Does an annotation name a heavy type anywhere (`list[torch.Tensor]` too)?"""
    written = annotation_expression(ann)
    if written is None:
        return ann is not None  # a string that does not parse: assume it might
    ann = written
    found = []

    class _Names(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            found.append(node)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            found.append(node)

    visit(ann, _Names())
    return any(ctx.heavy.is_heavy_qualname(ctx.qualname(n)) for n in found)


def builds_own(ctx, expr: cst.BaseExpression, function: Optional[cst.FunctionDef], cls,
               container: Optional[str] = None) -> bool:
    """Is `expr` a new object that `function` builds from inputs reaching nothing heavy -
    a tensor it allocates (`torch.zeros(n, device=d)`, `torch.tensor(LEVELS).to(d)`), a
    table it computes, a workspace object of a class that holds no layer
    (`_Workspace(device)`) - so that keeping it keeps only its own memory, never a
    model's or a caller's? Parameters, attributes, layers and objects built around a heavy
    argument are not. `container`: the global it is stored in (reading that back is no
    new value)."""
    return _Ownership(ctx, function, cls, container).made(expr)


class _KeyParts(cst.CSTVisitor):
    """The calls and names a key is made of, leaving out what only describes an object
    (`q.device`, `t.numel()`: the same for many objects)."""

    def __init__(self) -> None:
        self.found: list[cst.CSTNode] = []

    def visit_Call(self, node: cst.Call) -> bool:
        self.found.append(node)
        func = node.func
        return not (isinstance(func, cst.Attribute) and func.attr.value in _PLAIN_METHODS
                    and func.attr.value not in _IDENTITY_METHODS)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return node.attr.value not in _PLAIN_ATTRIBUTES

    def visit_Name(self, node: cst.Name) -> None:
        self.found.append(node)


def per_object_key(ctx, key: Optional[cst.BaseExpression], function: Optional[cst.FunctionDef],
                   cls) -> bool:
    """Is a dict key (or part of it) an object's identity - `id(model)`, `t.data_ptr()`,
    a heavy object itself - so that the dict gains an entry for every object rather than
    one per device, dtype or shape? Followed through locals (`key = (id(m), n)`)."""
    if key is None:
        return False
    seen: set[str] = set()
    pending = [key]
    while pending:
        parts = _KeyParts()
        visit(pending.pop(), parts)
        for node in parts.found:
            if isinstance(node, cst.Call):
                func = node.func
                if ctx.qualname(func) in _IDENTITY_CALLS or (
                        isinstance(func, cst.Attribute) and func.attr.value in _IDENTITY_METHODS):
                    return True
                continue
            if ctx.heavy.is_heavy_value(node, function, cls):
                return True
            if function is not None and node.value not in seen and len(seen) < _OWN_DEPTH:
                seen.add(node.value)
                pending.extend(v for v, _ in ctx.heavy.local_assignments(function).get(node.value, ())
                               if v is not None)
    return False


def _is_none(ann: cst.BaseExpression) -> bool:
    return isinstance(ann, cst.Name) and ann.value == "None"
