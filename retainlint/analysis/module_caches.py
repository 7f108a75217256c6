"""Module-level (and class-level) containers and what the code does to them: shared by
RL301 (strong-module-keyed-cache) and RL302 (strong-module-valued-cache).

`ContainerTracker` is a rule mixin: during the one traversal of a file it collects the
dicts/sets defined at module level or in a top-level class body (candidates) and every
write, removal and escape of them (events); at the end of the module it hands each
candidate that is bound exactly once, with its events, to the rule's `_judge`. It also
says what kind of heavy object (module, tensor, other) an annotation or a value is, and
whether another file of the project removes entries from a module global. The machinery
lives in sibling modules: `container_types` (what annotations and values say, a mixin of
`ContainerTracker`), `cache_ownership` (what a cache owns) and `function_names`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.cache_ownership import (
    _IDENTITY_CALLS,
    _IDENTITY_METHODS,
    _OWN_DEPTH,
    _KeyParts,
    _Ownership,
)
from retainlint.analysis.container_types import ContainerTypes, first_slice
from retainlint.analysis.function_names import FunctionNames, function_bindings
from retainlint.analysis.heavy import find_param
from retainlint.analysis.walk import visit
from retainlint.analysis.cstutil import is_self



# -- container types ---------------------------------------------------------------
_DICT_CTORS = frozenset({"dict", "builtins.dict"})
_SET_CTORS = frozenset({"set", "builtins.set"})
_DEFAULTDICT_CTORS = frozenset({"collections.defaultdict"})
_ORDERED_CTORS = frozenset({"collections.OrderedDict"})

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


def instance_definitions(init: cst.FunctionDef) -> list:
    """The `self.x = ...` statements directly in the body of `__init__`."""
    found = []
    body = init.body.body if isinstance(init.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            found += [s for s in stmt.body if isinstance(s, cst.Assign) and len(s.targets) == 1
                      and isinstance(s.targets[0].target, cst.Attribute)
                      and is_self(s.targets[0].target.value)]
    return found


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


class ContainerTracker(ContainerTypes):
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
        if not (isinstance(target, cst.Attribute) and is_self(target.value)):
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
                and is_self(owner.args[0].value)
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


# -- what a cache owns (the machinery: `retainlint.analysis.cache_ownership`) -------------

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
