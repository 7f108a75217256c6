"""RL304 weak-key-value-refs-key."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor, annotation_expression, is_self
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.analysis.holding import Scopes, ctx_code, first_slice, holds_heavy, reaches
from retainlint.rules.prefilters.rl304 import WeakKeyValueRefsKeyPrefilter
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.walk import visit

WEAK_KEYED = frozenset(
    {
        "weakref.WeakKeyDictionary",
        "torch.utils.weak.WeakIdKeyDictionary",
    }
)

# Callables whose result never holds their argument.
# Callables whose result is built around their arguments (besides class constructors).
_WEAK_CACHE_NAME = re.compile(r"weak.*(?:cache|memo)|(?:cache|memo).*weak", re.IGNORECASE)


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
  variable assigned such a value;
- a new container (`c = wkd.get(k, {})`, `c = []`) that the same function fills with
  objects reaching the key, or links back to the object the key was read from
  (`root = self.scope.root; wkd[root] = c; item = c[i]; item.parent = self`): the
  container holds the key just the same;
- a value made from what pluggable callbacks return when handed the key: a call of a
  loop variable with the key among its arguments (`for p in processors:
  data.update(p(request))`, `[hook(page) for hook in self.hooks]`), stored as it is or
  merged into a new container. The callbacks are not visible where the value is cached,
  and one that hands its argument back (Django's `request` context processor returns
  `{"request": request}`) makes the value hold its key. Named functions (`stats(m)`)
  and a memo decorator's `fn(obj)` do not count.

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
`fn.__code__.co_argcount`), tests it (`if source is not None`) or keeps a weak reference
to it (`self.source = weakref.ref(source)`). A local that starts as an alias of the key and is rebound
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
        # callbacks handed something else than the key, or reduced to plain values
        """
import weakref

_labels = weakref.WeakKeyDictionary()

def label(request, processors):
    data = {}
    for processor in processors:
        data.update(processor(request.path))
        data[processor.__name__] = len(processor(request))
    _labels[request] = data
""",
        # a class that keeps only a weak reference to the key, and a container of plain data
        """
import weakref

_bound = weakref.WeakKeyDictionary()
_names = weakref.WeakKeyDictionary()

class View:
    def __init__(self, *, source=None):
        if source is not None:
            self.source = weakref.ref(source)

def bind(obj, slot, text):
    _bound[obj] = View(source=obj)
    names = _names.get(obj, {})
    _names[obj] = names
    names[slot] = text.upper()
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
        # the value merges what callbacks return for the key (a context processor may
        # return `{"request": request}`)
        Example(
            """
from weakref import WeakKeyDictionary

_context_data = WeakKeyDictionary()

def context_data(request, processors):
    if request not in _context_data:
        data = {}
        for processor in processors:
            data.update(processor(request))
        _context_data[request] = data
    return _context_data[request]
""",
            lines=[11],
        ),
        # the value is a container filled with objects linked back to the key's owner
        Example(
            """
import weakref

_adopted = weakref.WeakKeyDictionary()

class Node:
    def adopt(self, child, slot):
        root = self.scope.root
        children = _adopted.get(root, {})
        _adopted[root] = children
        children[slot] = child.copy()
        children[slot].parent = self
""",
            lines=[10],
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
        ann = annotation_expression(ann)
        if ann is None:
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
                holder = self._filled_to_reach(w, self._reaching)
            callback = None
            if holder is None and w.function is not None:
                callback = (_callback_result(self.ctx, w.value, w.key, w.function)
                            or self._filled_to_reach(w, self._from_callback))
            if holder is None and callback is None:
                continue
            key_code = ctx_code(self.ctx, w.key)
            value_code = ctx_code(self.ctx, w.value)
            heavy = holds_heavy(self.ctx, w.key, w.function, w.cls) or self._heavy_keys(
                self._weak[w.ref])
            how = "holds the key" if callback is None else (
                f"is made from what callbacks return for the key (`{_short(ctx_code(self.ctx, callback))}`), "
                "and one that hands its argument back makes it hold the key")
            self.report(
                w.node,
                f"`{w.container}` is weak-keyed, but the value written under `{key_code}` "
                f"(`{_short(value_code)}`) {how}: the entry is never evicted and keeps "
                f"`{key_code}` alive as long as `{w.container}` lives; store `weakref.ref({key_code})` "
                "or values that do not reach the key",
                severity=Severity.ERROR if heavy else Severity.WARNING,
                related=[RelatedNode("made weak-keyed here", self._weak[w.ref])],
                statement=w.statement,
                consequence=Consequence(
                    f"every `{key_code}` {'key' if callback is None else 'a callback returns'}"
                    + (" (heavy)" if heavy else ""),
                    f"its value in `{w.container}`", self._lifetime(w),
                    "one entry per distinct key" if w.function is not None else ""),
            )
        for fn, decorator, cls in self._decorated:
            self._judge_decorated(fn, decorator, cls)

    def _lifetime(self, w: _Write) -> str:
        """How long the weak-keyed container lives: a module global or a class attribute
        for the process, an instance attribute as long as its instance."""
        if w.ref[0] == "g":
            return "the process"
        if w.ref[0] == "a":
            made = self._weak[w.ref]
            targets = ([t.target for t in made.targets] if isinstance(made, cst.Assign)
                       else [made.target] if isinstance(made, cst.AnnAssign) else [])
            on_self = any(isinstance(t, cst.Attribute) and is_self(t.value) for t in targets)
            return f"as long as the `{w.ref[1]}` instance" if on_self else "the process"
        return f"as long as `{w.container}` lives"  # a local or a parameter

    def _filled_to_reach(self, w: _Write, holds) -> Optional[cst.CSTNode]:
        """The value is a new container (`cache = wkd.get(k, {})`, `cache = []`) that the
        same function fills with objects that `holds` says reach the key (or one of the
        objects it was read from: `root = self.scope.root` ... `item = cache[i];
        item.parent = self`): the container holds its key just the same. Returns what
        links it, or None."""
        fn = w.function
        if fn is None or not isinstance(w.value, cst.Name):
            return None
        name = w.value.value
        assigned = [v for v, _ in self.ctx.heavy.local_assignments(fn).get(name, ())]
        if not assigned or not all(_new_container(self.ctx, v) for v in assigned):
            return None
        anchors = [w.key, *_owners(self.ctx, w.key, fn)]
        fill = _ContainerFill(name)
        visit(fn.body, fill)
        linked = [*fill.elements,
                  *(value for alias, value in fill.links if alias in fill.aliases)]
        for value in linked:
            found = holds(value, w, anchors)
            if found is not None:
                return found
        return None

    def _reaching(self, value, w: _Write, anchors) -> Optional[cst.CSTNode]:
        fn = w.function
        return value if any(reaches(self.ctx, value, a, fn, w.cls) is not None for a in anchors) else None

    def _from_callback(self, value, w: _Write, anchors) -> Optional[cst.CSTNode]:
        return _callback_result(self.ctx, value, w.key, w.function) if w.function is not None else None

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
                consequence=Consequence(f"every `{key.value}` passed to `{fn.name.value}()`{' (heavy)' if heavy else ''}",
                                        f"its result in the `@{_short(deco)}` cache", "the process",
                                        "one per distinct argument"),
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


class _Returns(OwnScopeVisitor):
    """`return <value>` statements of one function (not of nested ones)."""

    def __init__(self) -> None:
        self.found: list[tuple[cst.Return, cst.CSTNode]] = []
        self._line: Optional[cst.CSTNode] = None

    def visit_SimpleStatementLine(self, node) -> None:
        self._line = node

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.found.append((node, self._line))


_CONTAINER_CTORS = frozenset({"dict", "list", "set", "collections.OrderedDict", "collections.defaultdict"})


def _new_container(ctx, value: Optional[cst.BaseExpression]) -> bool:
    """`{}`, `[]`, `dict()`, or a lookup defaulting to one (`wkd.get(k, {})`)."""
    if isinstance(value, (cst.Dict, cst.List, cst.Set)):
        return True
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("get", "setdefault") and len(value.args) == 2:
        return _new_container(ctx, value.args[1].value)
    return ctx.qualname(func) in _CONTAINER_CTORS


def _callback_result(ctx, value: Optional[cst.BaseExpression], key: cst.BaseExpression,
                     fn: cst.FunctionDef) -> Optional[cst.BaseExpression]:
    """Is the value what a pluggable callback returns when given the key: a call of a
    loop variable (`for hook in hooks: data = hook(key)`, `[hook(key) for hook in ...]`)
    with the key among its arguments? The callbacks are not visible here, and a callback
    handed an object commonly hands it back (a context processor returning
    `{"request": request}`): such a value holds its key. Named functions (`stats(key)`)
    and parameters (a memo decorator's `fn(obj)`, judged at the decorated function) do
    not count. Returns the call, or None."""
    if isinstance(value, cst.Name):
        for assigned, _ in ctx.heavy.local_assignments(fn).get(value.value, ()):
            found = _callback_result(ctx, assigned, key, fn) if not isinstance(assigned, cst.Name) else None
            if found is not None:
                return found
        return None
    loops = _LoopNames()
    visit(fn.body, loops)
    callees = loops.names
    if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
        callees = callees | _comprehension_names(value.for_in)
        value = value.value if isinstance(value, cst.DictComp) else value.elt
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
            and value.func.value in callees):
        return None
    key_code = ctx.code(key).strip()
    return value if any(ctx.code(a.value).strip() == key_code for a in value.args) else None


def _comprehension_names(comp: Optional[cst.CompFor]) -> frozenset:
    names: set[str] = set()
    while comp is not None:
        names |= _target_names(comp.target)
        comp = comp.inner_for_in
    return frozenset(names)


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in _target_names(e.value)}
    return set()


class _LoopNames(OwnScopeVisitor):
    """The names a function's own `for` statements bind."""

    def __init__(self) -> None:
        self.names: frozenset = frozenset()

    def visit_For(self, node: cst.For) -> None:
        self.names = self.names | _target_names(node.target)


def _owners(ctx, key: cst.BaseExpression, fn: cst.FunctionDef) -> list[cst.Name]:
    """What the key was read from: `self` for `self.scope.root`, also through a local
    (`root = self.scope.root`). The owner reaches the key through its attributes."""
    if isinstance(key, cst.Name):
        values = [v for v, _ in ctx.heavy.local_assignments(fn).get(key.value, ())]
        if len(values) != 1 or values[0] is None:
            return []
        key = values[0]
    if not isinstance(key, cst.Attribute):
        return []
    while isinstance(key, cst.Attribute):
        key = key.value
    return [key] if isinstance(key, cst.Name) else []


class _ContainerFill(OwnScopeVisitor):
    """In one function, for the local container `name`: the objects put into it
    (`name[k] = v`, `name.append(v)`), the locals read out of it (`x = name[k]`), and
    every `local.attr = value` (kept if the local turns out to be read out of it)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.elements: list[cst.BaseExpression] = []
        self.aliases: set[str] = set()
        self.links: list[tuple[str, cst.BaseExpression]] = []

    def _is_container(self, node) -> bool:
        return isinstance(node, cst.Name) and node.value == self.name

    def _read(self, value) -> bool:
        if isinstance(value, cst.Subscript):
            return self._is_container(value.value)
        return (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and value.func.attr.value in ("get", "setdefault", "pop")
                and self._is_container(value.func.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if isinstance(target, cst.Subscript) and self._is_container(target.value):
                self.elements.append(node.value)
            elif isinstance(target, cst.Name) and self._read(node.value):
                self.aliases.add(target.value)
            elif isinstance(target, cst.Attribute) and self._read(target.value):
                self.elements.append(node.value)  # `name[k].parent = v`: v is in it too
            elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
                self.links.append((target.value.value, node.value))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (isinstance(func, cst.Attribute) and self._is_container(func.value)
                and func.attr.value in ("append", "add", "insert", "setdefault", "extend", "update")):
            self.elements.extend(a.value for a in node.args[-1:])
