"""RL304 weak-key-value-refs-key."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.names import WRAPPING_CALLS
from retainlint.finding import Applicability, Severity
from retainlint.heavy import find_param
from retainlint.module_caches import FunctionNames, function_bindings
from retainlint.rules.prefilters.rl304 import WeakKeyValueRefsKeyPrefilter
from retainlint.rule import Example, RelatedNode, Rule
from retainlint.walk import visit

WEAK_KEYED = frozenset(
    {
        "weakref.WeakKeyDictionary",
        "torch.utils.weak.WeakIdKeyDictionary",
    }
)

# Callables whose result never holds their argument.
_NON_HOLDING = frozenset(
    {
        "id", "len", "str", "repr", "hash", "type", "bool", "int", "float", "isinstance",
        "issubclass", "hasattr", "callable", "format", "sum", "any",
        "all", "getattr", "vars", "dir", "hex", "oct", "bin", "abs", "round", "ascii",
        "weakref.ref", "weakref.proxy", "weakref.WeakMethod", "weakref.finalize",
        "copy.copy", "copy.deepcopy", "pickle.dumps", "json.dumps",
    }
)
# Callables whose result is built around their arguments (besides class constructors).
_WEAK_CACHE_NAME = re.compile(r"weak.*(?:cache|memo)|(?:cache|memo).*weak", re.IGNORECASE)
_MAX_DEPTH = 4
_BUILDERS = (cst.Tuple, cst.List, cst.Set, cst.Dict, cst.Call, cst.Lambda)


def _callee_name(ctx, func: cst.BaseExpression) -> Optional[str]:
    if isinstance(func, cst.Subscript):  # `Wrapper[T](x)`
        func = func.value
    qualified = ctx.qualname(func)
    if qualified:
        return qualified
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _is_bound_method(ctx, owner_cls: Optional[cst.ClassDef], attr: str) -> bool:
    """Is `x.attr` a bound method? `forward`/`__call__`, or a method some class of the
    file defines (of `owner_cls` only, when the owner's class is known)."""
    if attr in ("forward", "__call__"):
        return True
    if owner_cls is not None:
        return attr in ctx.methods(owner_cls)
    return any(attr in ctx.methods(c) for c in ctx.classes.values())


def _constructor_keeps(ctx, callee: str, index: Optional[int], arg: cst.Arg) -> bool:
    """Does the class `callee` keep the argument it receives at position `index` (or by
    `arg`'s keyword)? Unknown classes are assumed to; a class of this file whose
    `__init__` only reads attributes of that parameter (`self.n = func.__code__.co_argcount`)
    does not."""
    cls = ctx.classes.get(callee)
    if cls is None or arg.star:
        return True
    init = ctx.methods(cls).get("__init__")
    if init is None:
        return True  # inherited `__init__`, dataclass fields, named tuples: they keep it
    params = init.params
    positional = [*params.posonly_params, *params.params][1:]  # without `self`
    name = None
    if index is not None:
        if index < len(positional):
            name = positional[index].name.value
        elif isinstance(params.star_arg, cst.Param):
            return True
    elif arg.keyword is not None:
        name = arg.keyword.value
        known = {p.name.value for p in (*positional, *params.kwonly_params)}
        if name not in known:
            return True  # into **kwargs
    if name is None:
        return True
    use = _RawUse(name)
    visit(init.body, use)
    return use.found


class _RawUse(cst.CSTVisitor):
    """Is `name` used other than through its attributes (`name.x`) or as the argument of
    a call whose result never holds it (`len(name)`)?"""

    def __init__(self, name: str) -> None:
        self.name = name
        self.found = False

    def _is_name(self, node) -> bool:
        return isinstance(node, cst.Name) and node.value == self.name

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if self._is_name(node.value):
            if node.attr.value in ("forward", "__call__", "__self__"):
                self.found = True
            return False
        return True

    def visit_Call(self, node: cst.Call) -> bool:
        func = node.func
        plain = func.value if isinstance(func, cst.Name) else None
        if plain in _NON_HOLDING:
            for a in node.args:
                if not self._is_name(a.value):
                    visit(a.value, self)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.found = True


class _NameUse(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.found = False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.found = True

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        visit(node.value, self)  # `x.name` is not a use of `name`
        return False


def mentions(node: cst.CSTNode, name: str) -> bool:
    use = _NameUse(name)
    visit(node, use)
    return use.found


def reaches(ctx, value: Optional[cst.BaseExpression], key: cst.BaseExpression,
            function: Optional[cst.FunctionDef], cls: Optional[cst.ClassDef] = None,
            depth: int = 0, seen: frozenset = frozenset()) -> Optional[cst.BaseExpression]:
    """Does `value` (evaluated in `function`, a method of `cls` if any) hold `key`: is it
    the key, a container or class instance built around it, a bound method of it, a
    closure over it? Returns the sub-expression that holds the key, or None."""
    if value is None or depth > _MAX_DEPTH:
        return None
    key_code = ctx.code(key).strip()
    if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)) and ctx.code(value).strip() == key_code:
        return value
    nxt = depth + 1
    if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
        for e in value.elements:
            if reaches(ctx, e.value, key, function, cls, nxt, seen) is not None:
                return value
        return None
    if isinstance(value, cst.Dict):
        for e in value.elements:
            parts = (e.key, e.value) if isinstance(e, cst.DictElement) else (e.value,)
            if any(reaches(ctx, p, key, function, cls, nxt, seen) is not None for p in parts):
                return value
        return None
    if isinstance(value, cst.IfExp):
        return (reaches(ctx, value.body, key, function, cls, nxt, seen)
                or reaches(ctx, value.orelse, key, function, cls, nxt, seen))
    if isinstance(value, cst.BooleanOperation):
        return (reaches(ctx, value.left, key, function, cls, nxt, seen)
                or reaches(ctx, value.right, key, function, cls, nxt, seen))
    if isinstance(value, cst.NamedExpr):
        return reaches(ctx, value.value, key, function, cls, nxt, seen)
    if isinstance(value, cst.Call):
        callee = _callee_name(ctx, value.func)
        if not callee or callee in _NON_HOLDING or callee.startswith("builtins."):
            return None
        last = callee.rsplit(".", 1)[-1]
        if callee in WRAPPING_CALLS or last[:1].isupper():
            positional = 0
            for arg in value.args:
                index = None
                if arg.keyword is None and not arg.star:
                    index, positional = positional, positional + 1
                if reaches(ctx, arg.value, key, function, cls, nxt, seen) is not None and (
                    callee in WRAPPING_CALLS or _constructor_keeps(ctx, callee, index, arg)
                ):
                    return value
        return None
    if isinstance(value, cst.Attribute) and ctx.code(value.value).strip() == key_code:
        owner = cls if key_code == "self" else None
        return value if _is_bound_method(ctx, owner, value.attr.value) else None
    if isinstance(value, cst.Lambda) and isinstance(key, cst.Name):
        params = value.params
        shadowed = any(
            p.name.value == key.value
            for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        )
        return value if not shadowed and mentions(value.body, key.value) else None
    if isinstance(value, cst.Name) and function is not None and value.value not in seen:
        if find_param(function, value.value) is not None:
            return None
        # Only values built in this function count: a plain alias (`mod = key`) is
        # usually rebound before use (`mod = getattr(mod, name)`, `for mod in ...`).
        for assigned, _ in ctx.heavy.local_assignments(function).get(value.value, ()):
            if isinstance(assigned, _BUILDERS) and reaches(
                ctx, assigned, key, function, cls, nxt, seen | {value.value}
            ) is not None:
                return value
    return None


def holds_heavy(ctx, expr: Optional[cst.BaseExpression], function, cls, depth: int = 0) -> bool:
    """Is `expr` heavy, or does it obviously hold something heavy: a container with a
    heavy element, or `self` of a class with a heavy attribute (`self.model = model`
    where `model: nn.Module`)?"""
    if expr is None or depth > 3:
        return False
    oracle = ctx.heavy
    if oracle.is_heavy_value(expr, function, cls):
        return True
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return any(holds_heavy(ctx, e.value, function, cls, depth + 1) for e in expr.elements)
    if isinstance(expr, cst.Dict):
        return any(
            holds_heavy(ctx, e.value, function, cls, depth + 1) for e in expr.elements
        )
    if isinstance(expr, cst.Name) and expr.value == "self" and cls is not None:
        return has_heavy_attribute(ctx, cls)
    if isinstance(expr, cst.Attribute) and cls is not None and ctx_code(ctx, expr.value) == "self":
        return has_heavy_attribute(ctx, cls, expr.attr.value) or (
            _is_bound_method(ctx, cls, expr.attr.value) and has_heavy_attribute(ctx, cls))
    return False


def has_heavy_attribute(ctx, cls: cst.ClassDef, only: Optional[str] = None) -> bool:
    """Does some method of `cls` assign `self.<attr>` a heavy value (or annotate it so)?"""
    oracle = ctx.heavy
    if oracle.is_heavy_class(cls):
        return only is None
    for method in ctx.methods(cls).values():
        for target, assigned in oracle.local_assignments(method).items():
            if not target.startswith("self.") or (only is not None and target != f"self.{only}"):
                continue
            for value, ann in assigned:
                if oracle.is_heavy_annotation(ann) or (
                    value is not None and oracle.is_heavy_value(value, method, cls)
                ):
                    return True
    return False


class Scopes:
    """Turns a container expression into a reference that survives across functions:
    ("g", name) a module global, ("a", class, name) a class or instance attribute,
    ("l", id(function), name) a function's local (closures resolve to the function
    that binds the name)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._bindings: dict[int, FunctionNames] = {}

    def bindings(self, fn: cst.FunctionDef) -> FunctionNames:
        found = self._bindings.get(id(fn))
        if found is None:
            found = self._bindings[id(fn)] = function_bindings(fn)
        return found

    def ref(self, expr: cst.BaseExpression) -> Optional[tuple]:
        scope = self.ctx.scope
        if isinstance(expr, cst.Name):
            name = expr.value
            if not scope.functions:
                if scope.classes:
                    return ("a", scope.classes[-1].name.value, name)
                return ("g", name)
            for fn in reversed(scope.functions):
                b = self.bindings(fn)
                if name in b.globals:
                    return ("g", name)
                if name in b.nonlocals:
                    continue
                if name in b.bound or _is_param(fn, name):
                    return ("l", id(fn), name)
            return ("g", name)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, (cst.Name, cst.Call)):
            owner, attr = expr.value, expr.attr.value
            if isinstance(owner, cst.Name):
                if owner.value in ("self", "cls") and scope.functions and scope.classes:
                    return ("a", scope.classes[-1].name.value, attr)
                if owner.value in self.ctx.classes:
                    return ("a", owner.value, attr)
            elif (
                self.ctx.qualname(owner.func) in ("type", "builtins.type")
                and len(owner.args) == 1
                and ctx_code(self.ctx, owner.args[0].value) == "self"
                and scope.classes
            ):
                return ("a", scope.classes[-1].name.value, attr)
        return None


def ctx_code(ctx, node: cst.CSTNode) -> str:
    return ctx.code(node).strip()


def _is_param(fn: cst.FunctionDef, name: str) -> bool:
    if find_param(fn, name) is not None:
        return True
    params = fn.params
    return any(
        isinstance(p, cst.Param) and p.name.value == name for p in (params.star_arg, params.star_kwarg)
    )


def first_slice(sub: cst.Subscript) -> Optional[cst.BaseExpression]:
    if len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index):
        return sub.slice[0].slice.value
    return None


@dataclass
class _Write:
    ref: tuple
    key: cst.BaseExpression
    value: cst.BaseExpression
    node: cst.CSTNode
    statement: Optional[cst.CSTNode]
    function: Optional[cst.FunctionDef]
    cls: Optional[cst.ClassDef]
    container: str


class WeakKeyValueRefsKey(Rule):
    prefilter = WeakKeyValueRefsKeyPrefilter
    name = "weak-key-value-refs-key"
    summary = "A WeakKeyDictionary value that holds its own key keeps the entry alive forever"
    severity = Severity.WARNING  # an error when the key is a model, a tensor or holds one
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports a write to a weak-keyed dictionary - `weakref.WeakKeyDictionary` or
`torch.utils.weak.WeakIdKeyDictionary`, however imported, held in a module global, a
class attribute, `self.<attr>` or a local variable - whose value is the key, contains it,
or is built from it without a copy:

- `wkd[k] = k`, `wkd[k] = (k, meta)`, `wkd[k] = {"owner": k}`;
- `wkd[m] = Wrapper(m)`, `wkd[m] = functools.partial(f, m)` (a class instance or a partial
  built around the key);
- `wkd[m] = m.forward`, `wkd[self] = self.method` (a bound method holds its instance);
- `wkd[m] = lambda: m(...)` (a closure over the key);
- the same through `wkd.setdefault(k, v)`, `wkd.update({k: v})`, and through a local
  variable assigned such a value.

It also reports a function decorated with a weak-keyed cache decorator (a decorator of
the file that builds a `WeakKeyDictionary`, or one whose name says so, such as
`@weak_lru_cache`) whose return value holds its first argument.

Reported as an error when the key is heavy (a model, a tensor, a configured heavy type,
an object holding one, or annotated so: `WeakKeyDictionary[nn.Module, X]`), as a
warning otherwise.

Values that do not reach the key are fine: `weakref.ref(k)`, `id(k)`, `str(k)`,
`len(k)`, `copy.deepcopy(k)`, data attributes such as `m.weight`, results of methods
called on the key (`t.detach()`), results of plain functions, and instances of a class
of the file whose `__init__` only reads from the key (`FunctionSpec(fn)` storing
`fn.__code__.co_argcount`). A local that starts as an alias of the key and is rebound
before it is stored (`mod = key; mod = getattr(mod, name)`) does not count.

## Why it leaks
A `WeakKeyDictionary` holds its keys weakly but its values strongly. A value that
reaches its key keeps the key alive, so the key never dies and the entry is never
evicted: the "weak" cache is a strong one, and it pins the model or tensor used as the
key for the life of the dictionary (a long-standing CPython issue documents this).

## Example
```python
import weakref

_wrappers = weakref.WeakKeyDictionary()

def wrap(model):
    if model not in _wrappers:
        _wrappers[model] = Wrapper(model)  # RL304: the wrapper holds the model
    return _wrappers[model]
```

## Fix (suggestion only)
Store a `weakref.ref(key)` in the value instead of the key, or store values that do not
reach the key (derived data, a copy). When the value must hold the key, use a plain
dict and remove entries explicitly when the key's owner shuts down.
"""

    valid = [
        # the value is derived data, a weak reference, or a copy
        """
import copy
import weakref

_shapes = weakref.WeakKeyDictionary()

def remember(model):
    _shapes[model] = tuple(model.weight.shape)
    _shapes[model] = weakref.ref(model)
    _shapes[model] = copy.deepcopy(model)
    _shapes[model] = id(model)
""",
        # a plain dict is RL301's business, not this rule's
        """
_cache = {}

def wrap(model):
    _cache[model] = Wrapper(model)
""",
        # the key is built from the value, not the other way round
        """
from weakref import WeakKeyDictionary

_sources = WeakKeyDictionary()

def quantized_copy(head):
    copy = quantize(head)
    _sources[copy] = (head, "fp8")
    return copy
""",
        # a data attribute of the key, and a method's result, do not hold the key
        """
import weakref

class Tracker:
    def __init__(self):
        self.grads = weakref.WeakKeyDictionary()

    def track(self, t):
        self.grads[t] = t.grad
        self.grads[t] = t.detach()
""",
    ]
    invalid = [
        Example(
            """
import weakref

_wrappers = weakref.WeakKeyDictionary()

def wrap(model):
    if model not in _wrappers:
        _wrappers[model] = Wrapper(model)
    return _wrappers[model]
""",
            lines=[8],
        ),
        # aliased import, annotated class attribute, setdefault, a tuple holding the key
        Example(
            """
import weakref as wr
import torch.nn as nn

class Registry:
    _entries: "wr.WeakKeyDictionary[nn.Module, tuple]" = wr.WeakKeyDictionary()

    @classmethod
    def add(cls, model: nn.Module, name: str):
        cls._entries.setdefault(model, (model, name))
""",
            lines=[10],
        ),
        # a bound method, a local holding the key, torch's id-keyed variant
        Example(
            """
from torch.utils.weak import WeakIdKeyDictionary

class Hooks:
    def __init__(self):
        self._fns = WeakIdKeyDictionary()

    def add(self, module):
        self._fns[module] = module.forward
        entry = {"module": module}
        self._fns[module] = entry
""",
            lines=[9, 11],
        ),
        # a weak-keyed cache decorator of the file whose result holds its argument
        Example(
            """
import functools
import weakref

def weak_cache(fn):
    memo = weakref.WeakKeyDictionary()
    @functools.wraps(fn)
    def wrapper(obj):
        if obj not in memo:
            memo[obj] = fn(obj)
        return memo[obj]
    return wrapper

@weak_cache
def compiled(model):
    return functools.partial(run, model)
""",
            lines=[16],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._scopes = Scopes(ctx)
        self._weak: dict[tuple, cst.CSTNode] = {}  # reference -> where it is made weak-keyed
        self._writes: list[_Write] = []
        self._decorated: list[tuple[cst.FunctionDef, cst.Decorator, Optional[cst.ClassDef]]] = []
        self._weak_decorators: dict[str, bool] = {}

    # -- collection ----------------------------------------------------------------
    def _is_weak_ctor(self, value: Optional[cst.BaseExpression]) -> bool:
        if not isinstance(value, cst.Call):
            return False
        func = value.func.value if isinstance(value.func, cst.Subscript) else value.func
        return self.ctx.qualname(func) in WEAK_KEYED

    def _is_weak_annotation(self, ann: Optional[cst.BaseExpression]) -> bool:
        if ann is None:
            return False
        if isinstance(ann, cst.Annotation):
            ann = ann.annotation
        if isinstance(ann, cst.SimpleString):
            try:
                return self._is_weak_annotation(cst.parse_expression(ann.evaluated_value))
            except Exception:
                return False
        if isinstance(ann, cst.Subscript):
            if self.ctx.qualname(ann.value) in WEAK_KEYED:
                return True
            return any(
                isinstance(e.slice, cst.Index) and self._is_weak_annotation(e.slice.value)
                for e in ann.slice
            )
        if isinstance(ann, cst.BinaryOperation):
            return self._is_weak_annotation(ann.left) or self._is_weak_annotation(ann.right)
        return self.ctx.qualname(ann) in WEAK_KEYED

    def _define(self, target: cst.BaseExpression, node: cst.CSTNode) -> None:
        ref = self._scopes.ref(target)
        if ref is not None:
            self._weak.setdefault(ref, node)

    def visit_Assign(self, node: cst.Assign) -> None:
        weak = self._is_weak_ctor(node.value)
        for t in node.targets:
            if weak:
                self._define(t.target, node)
            elif isinstance(t.target, cst.Subscript):
                key = first_slice(t.target)
                if key is not None:
                    self._write(t.target.value, key, node.value, t.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._is_weak_ctor(node.value) or self._is_weak_annotation(node.annotation):
            self._define(node.target, node)
        elif isinstance(node.target, cst.Subscript) and node.value is not None:
            key = first_slice(node.target)
            if key is not None:
                self._write(node.target.value, key, node.value, node.target)

    def visit_Param(self, node: cst.Param) -> None:
        # `def f(cache: WeakKeyDictionary[...])`: the parameter is weak-keyed
        fn = self.ctx.scope.function
        if fn is not None and node.annotation is not None and self._is_weak_annotation(node.annotation):
            self._weak.setdefault(("l", id(fn), node.name.value), node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        args = [a for a in node.args if a.keyword is None and not a.star]
        if method in ("setdefault", "__setitem__") and len(args) >= 2:
            self._write(func.value, args[0].value, args[1].value, node)
        elif method == "update" and args and isinstance(args[0].value, cst.Dict):
            for e in args[0].value.elements:
                if isinstance(e, cst.DictElement):
                    self._write(func.value, e.key, e.value, node)

    def _write(self, container, key, value, node) -> None:
        ref = self._scopes.ref(container)
        if ref is None:
            return
        scope = self.ctx.scope
        self._writes.append(
            _Write(ref, key, value, node, scope.statement, scope.function,
                   scope.method_class or (scope.classes[-1] if scope.classes else None),
                   ctx_code(self.ctx, container))
        )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for d in node.decorators:
            if self._is_weak_cache_decorator(d.decorator):
                self._decorated.append((node, d, self.ctx.scope.classes[-1] if self.ctx.scope.classes else None))
                return

    def _is_weak_cache_decorator(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            expr = expr.func
        name = self.ctx.qualname(expr)
        if not name:
            return False
        known = self._weak_decorators.get(name)
        if known is not None:
            return known
        found = bool(_WEAK_CACHE_NAME.search(name.rsplit(".", 1)[-1]))
        local = self.ctx.functions.get(name)
        if not found and local is not None:
            finder = _WeakCtorFinder(self.ctx)
            visit(local.body, finder)
            found = finder.found
        self._weak_decorators[name] = found
        return found

    # -- judgement -----------------------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        for w in self._writes:
            if w.ref not in self._weak:
                continue
            holder = reaches(self.ctx, w.value, w.key, w.function, w.cls)
            if holder is None:
                continue
            key_code = ctx_code(self.ctx, w.key)
            value_code = ctx_code(self.ctx, w.value)
            heavy = holds_heavy(self.ctx, w.key, w.function, w.cls) or self._heavy_keys(
                self._weak[w.ref])
            self.report(
                w.node,
                f"`{w.container}` is weak-keyed, but the value written under `{key_code}` "
                f"(`{_short(value_code)}`) holds the key: the entry is never evicted and keeps "
                f"`{key_code}` alive as long as `{w.container}` lives; store `weakref.ref({key_code})` "
                "or values that do not reach the key",
                severity=Severity.ERROR if heavy else Severity.WARNING,
                related=[RelatedNode("made weak-keyed here", self._weak[w.ref])],
                statement=w.statement,
            )
        for fn, decorator, cls in self._decorated:
            self._judge_decorated(fn, decorator, cls)

    def _heavy_keys(self, definition: cst.CSTNode) -> bool:
        """Does the definition's annotation or subscripted constructor name a heavy key
        type (`WeakKeyDictionary[nn.Module, X]`)?"""
        candidates = []
        if isinstance(definition, cst.AnnAssign):
            candidates.append(definition.annotation.annotation)
        value = getattr(definition, "value", None)
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Subscript):
            candidates.append(value.func)
        for ann in candidates:
            if isinstance(ann, cst.SimpleString):
                try:
                    ann = cst.parse_expression(ann.evaluated_value)
                except Exception:
                    continue
            if isinstance(ann, cst.Subscript) and self.ctx.qualname(ann.value) in WEAK_KEYED:
                key = first_slice(ann) if len(ann.slice) == 1 else (
                    ann.slice[0].slice.value if isinstance(ann.slice[0].slice, cst.Index) else None)
                if key is not None and self.ctx.heavy.is_heavy_annotation(key):
                    return True
        return False

    def _judge_decorated(self, fn: cst.FunctionDef, decorator: cst.Decorator, cls) -> None:
        params = [*fn.params.posonly_params, *fn.params.params]
        if not params:
            return
        key = params[0].name
        returns = _Returns()
        visit(fn.body, returns)
        deco = ctx_code(self.ctx, decorator.decorator)
        for ret, statement in returns.found:
            if reaches(self.ctx, ret.value, key, fn, cls) is None:
                continue
            heavy = holds_heavy(self.ctx, key, fn, cls)
            self.report(
                ret.value,
                f"`{fn.name.value}` is cached by the weak-keyed `@{deco}`, but its result "
                f"(`{_short(ctx_code(self.ctx, ret.value))}`) holds its argument `{key.value}`: "
                f"the cache entry keeps `{key.value}` alive forever",
                severity=Severity.ERROR if heavy else Severity.WARNING,
                related=[RelatedNode("weak-keyed cache decorator", decorator)],
                statement=statement,
            )


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _WeakCtorFinder(cst.CSTVisitor):
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func.value if isinstance(node.func, cst.Subscript) else node.func
        if self.ctx.qualname(func) in WEAK_KEYED:
            self.found = True


class _Returns(cst.CSTVisitor):
    """`return <value>` statements of one function (not of nested ones)."""

    def __init__(self) -> None:
        self.found: list[tuple[cst.Return, cst.CSTNode]] = []
        self._line: Optional[cst.CSTNode] = None

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_Lambda(self, node) -> bool:
        return False

    def visit_SimpleStatementLine(self, node) -> None:
        self._line = node

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.found.append((node, self._line))
