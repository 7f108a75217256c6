"""Where a method makes the cycle: the locals it binds (`_Locals`) and the sites
(`_Sites`) that store a callback over `self` back on `self` - assigned, added to a
container, registered as a hook, connected to a Qt signal, handed to a callback setter or
to a base class's method that keeps it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.analysis.hooks import hook_argument, local_bases, mentions_self
from retainlint.analysis.hook_exprs import target_names
from retainlint.project.hook_names import HANDLE_HOOKS
from retainlint.project.names import name_words
from retainlint.rules.prefilters.rl701 import CALLBACK_WORDS, CONTAINER_ADD, REGISTER_VERBS
from retainlint.rules.rl701_self_cycle_callback.references import (
    _on_graph,
    _owned,
    _refers_to,
    _stored_parameters,
)

if TYPE_CHECKING:
    from retainlint.rules.rl701_self_cycle_callback import SelfCycleCallback

_WEAK = frozenset({"weakref.WeakMethod", "weakref.ref", "weakref.proxy"})
_PARTIAL = frozenset({"functools.partial", "functools.partialmethod"})
_METHOD_TYPE = frozenset({"types.MethodType"})
# Wrappers whose result keeps the function it wraps (and, for caches, every result).
_CACHES = frozenset({"functools.lru_cache", "functools.cache"})
# Constructors that drop the callable they were given once it has run (`Thread.run`
# deletes its `_target`): a thread started with a bound method is no lasting cycle.
_RUN_ONCE = frozenset({"threading.Thread", "threading.Timer"})


def _is_super(expr: cst.CSTNode) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "super"


def _own_method_receiver(func: cst.CSTNode) -> Optional[str]:
    """The instance a base class's method runs on: `self` for `super().m(...)`, `obj`
    for `super(C, obj).m(...)`."""
    if not isinstance(func, cst.Attribute):
        return None
    owner = func.value
    if _is_super(owner):
        args = owner.args
        if not args:
            return "self"
        if len(args) == 2 and isinstance(args[1].value, cst.Name):
            return args[1].value.value
    return None


def _base_method(ctx, cls: cst.ClassDef, name: str) -> Optional[cst.FunctionDef]:
    for base in local_bases(ctx, cls):
        method = ctx.methods(base).get(name)
        if method is not None:
            return method
    return None


class _Locals(cst.CSTVisitor):
    """Per method: nested functions that close over `self`, locals holding a callback
    that references `self`, locals naming objects reached from `self` (loop variables
    over `self.parameters()`, `m = self.sub`)."""

    def __init__(self) -> None:
        self.closures: dict[str, cst.FunctionDef] = {}
        self.bindings: list[tuple[set[str], cst.CSTNode]] = []

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if mentions_self(node.body):
            self.closures[node.name.value] = node

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self.bindings.append((target_names(t.target), node.value))

    def visit_For(self, node: cst.For) -> None:
        self.bindings.append((target_names(node.target), node.iter))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.bindings.append((target_names(node.target), node.iter))


class _Sites(cst.CSTVisitor):
    """Where a method stores a callback that references `self` back on `self` (or on
    an object reached from it), or registers one as a hook there."""

    def __init__(self, rule: "SelfCycleCallback", methods: set[str], locals_: _Locals,
                 cls: Optional[cst.ClassDef] = None) -> None:
        self.rule = rule
        self.methods = methods
        self.cls = cls
        self.closures = locals_.closures
        self.bound_locals: set[str] = set()
        self.owned_locals: set[str] = set()
        self.cache_locals: dict[str, cst.CSTNode] = {}  # a local bound to a cache: its value
        for _ in range(3):
            sizes = (len(self.bound_locals), len(self.cache_locals), len(self.owned_locals))
            for names, value in locals_.bindings:
                if self.refers(value):
                    self.bound_locals |= names
                if self.cache_of_self(value):
                    self.cache_locals.update(dict.fromkeys(names, value))
                if _owned(value, self.owned_locals) or self._parented(value):
                    self.owned_locals |= names - {"self"}
            if sizes == (len(self.bound_locals), len(self.cache_locals), len(self.owned_locals)):
                break  # nothing new: another round would find the same
        self.found: list[tuple[cst.CSTNode, cst.CSTNode, str, str]] = []  # (node, value, how, where)

    def _parented(self, value: cst.CSTNode) -> bool:
        """A Qt object made with `self` as its parent (`QAction("Run", self)`, `parent=self`):
        its C++ parent, `self`, keeps it as long as `self` lives."""
        return isinstance(value, cst.Call) and any(
            is_self(a.value) and (a.keyword is None or a.keyword.value == "parent") for a in value.args
        ) and self.rule.uses_qt()  # (last: the first answer per file walks the module)

    def visit_ClassDef(self, node) -> bool:
        return False

    # -- does a value reference `self` (so storing it on `self` makes a cycle)? ------------
    def refers(self, value: cst.CSTNode) -> bool:
        ctx = self.rule.ctx
        if isinstance(value, cst.Attribute):
            return is_self(value.value) and value.attr.value in self.methods
        if isinstance(value, cst.Name):
            return value.value in self.closures or value.value in self.bound_locals
        if isinstance(value, cst.Lambda):
            return mentions_self(value.body)
        if isinstance(value, cst.Call):
            q = ctx.qualname(value.func)
            if q in _WEAK:
                return False
            if q in _PARTIAL or q in _METHOD_TYPE:
                return any(is_self(a.value) or self.refers(a.value) for a in value.args)
            return self.cache_of_self(value)
        if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            return any(self.refers(e.value) for e in value.elements)
        if isinstance(value, cst.Dict):
            return any(isinstance(e, cst.DictElement) and self.refers(e.value) for e in value.elements)
        return False

    def cache_of_self(self, value: cst.CSTNode) -> bool:
        """`lru_cache(...)(self.m)`, `functools.cache(self.m)`, or a local bound to one:
        a cache around a callback over `self` (it keeps the callback, and every result)."""
        if isinstance(value, cst.Name):
            return value.value in self.cache_locals
        if not isinstance(value, cst.Call) or not value.args:
            return False
        func = value.func.func if isinstance(value.func, cst.Call) else value.func
        return self.rule.ctx.qualname(func) in _CACHES and self.refers(value.args[0].value)

    def cached_method(self, value: cst.CSTNode) -> Optional[str]:
        """The method of `self` that a cache found by `cache_of_self` wraps (`m` of
        `lru_cache()(self.m)`), if it is one."""
        for _ in range(3):
            if isinstance(value, cst.Name) and value.value in self.cache_locals:
                value = self.cache_locals[value.value]
        if isinstance(value, cst.Call) and value.args:
            arg = value.args[0].value
            if isinstance(arg, cst.Attribute) and is_self(arg.value):
                return arg.attr.value
        return None

    def constructed_with_self(self, value: cst.CSTNode) -> bool:
        """`Timer(self.tick, 5)`: a class (a capitalised name, as PEP 8 spells classes)
        built around a callback over `self`, which it keeps."""
        if not isinstance(value, cst.Call):
            return False
        q = self.rule.ctx.qualname(value.func) or ""
        last = q.rpartition(".")[2]
        if not last[:1].isupper() or last.isupper() or q in _RUN_ONCE:
            return False
        return any(self.refers(a.value) for a in value.args)

    def _passed_to_storing_method(self, node: cst.Call) -> bool:
        """`super().__init__(self.propose, ...)` (or `super(C, obj).__init__(obj.propose)`)
        where the base's method (a class of the file) stores that parameter on its
        instance as it is (`self.propose = propose`)."""
        receiver = _own_method_receiver(node.func)
        if receiver is None:
            return False
        callee = _base_method(self.rule.ctx, self.cls, node.func.attr.value)
        if callee is None:
            return False
        stored = _stored_parameters(callee)
        params = [p.name.value for p in (*callee.params.posonly_params, *callee.params.params)][1:]
        for position, arg in enumerate(node.args):
            if arg.star:
                break
            name = arg.keyword.value if arg.keyword is not None else \
                params[position] if position < len(params) else None
            attr = stored.get(name) if name else None
            if attr is None:
                continue
            if self.refers(arg.value) if receiver == "self" else \
                    _refers_to(receiver, arg.value, self.methods):
                self.found.append((node, arg.value, "passed", f"{receiver}.{attr}"))
                return True
        return False

    # -- stores ------------------------------------------------------------------------------
    def _stored(self, target: cst.CSTNode, value: cst.CSTNode, node: cst.CSTNode) -> None:
        if not isinstance(target, (cst.Attribute, cst.Subscript)) or not _owned(target, self.owned_locals):
            return
        if self.cache_of_self(value):
            self.found.append((node, value, "cached", self.rule.ctx.code(target)))
        elif self.refers(value):
            self.found.append((node, value, "stored", self.rule.ctx.code(target)))
        elif self.constructed_with_self(value):
            self.found.append((node, value, "constructed", self.rule.ctx.code(target)))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._stored(t.target, node.value, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._stored(node.target, node.value, node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if self.cls is not None and self._passed_to_storing_method(node):
            return
        if isinstance(func, cst.Name) and func.value == "setattr" and len(node.args) == 3:
            owner, attr, value = (a.value for a in node.args)
            if _owned(owner, self.owned_locals) and self.refers(value):
                name = attr.evaluated_value if isinstance(attr, cst.SimpleString) else "..."
                self.found.append((node, value, "stored", f"{self.rule.ctx.code(owner)}.{name}"))
            return
        if not isinstance(func, cst.Attribute):
            return
        name = func.attr.value
        owner = func.value
        owned = _owned(owner, self.owned_locals)
        if name in CONTAINER_ADD:
            if owned and not is_self(owner):
                for arg in node.args:
                    if self.refers(arg.value):
                        self.found.append((node, arg.value, "added", self.rule.ctx.code(owner)))
                        return
            return
        if name == "connect" and owned and self.rule.uses_qt():
            # a Qt signal keeps a plain bound method weakly, any other callable (a
            # partial, a lambda, a closure) strongly, in its C++ connection
            for arg in node.args:
                value = arg.value
                if not (isinstance(value, cst.Attribute) and is_self(value.value)) and self.refers(value):
                    self.found.append((node, value, "slot", self.rule.ctx.code(owner)))
                    return
            return
        is_hook = name in HANDLE_HOOKS or (name.lstrip("_").startswith("register") and "hook" in name)
        if is_hook:
            hook = hook_argument(node)
            # an autograd node of a tensor made here is reported when the class keeps
            # what it is handed per call (`_keeps_call_values`)
            if (owned or _on_graph(owner)) and hook is not None and self.refers(hook):
                self.found.append((node, hook, "hook", name))
            return
        words = name_words(name)
        if words & CALLBACK_WORDS and words & REGISTER_VERBS and owned:
            for arg in node.args:
                if self.refers(arg.value):
                    self.found.append((node, arg.value, "callback", name))
                    return
        # a setter (`setopt`, `set_handler`) keeps what it is given
        if owned and not is_self(owner) and name.lstrip("_").lower().startswith("set") \
                and name not in ("setdefault", "setattr"):
            for arg in node.args:
                if self.refers(arg.value):
                    self.found.append((node, arg.value, "setter", name))
                    return
