"""Hook registrations and their removal handles: the name tables RL501, RL502 and RL701
share, and a per-class analysis of where handles are stored and where they are removed.

Everything here is read-only and walks with `retainlint.analysis.walk` (never libcst's `.visit`).
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

import libcst as cst

from retainlint.analysis.context import FileContext
from retainlint.analysis.cstutil import body_functions, decorator_names, is_self
from retainlint.analysis.release import FINALIZER, is_release_method
from retainlint.project.hook_names import HANDLE_HOOKS
from retainlint.analysis.walk import children, visit

# -- name tables -------------------------------------------------------------------------


CONTEXT_MANAGER_DECORATORS = frozenset(
    {"contextlib.contextmanager", "contextlib.asynccontextmanager", "contextmanager",
     "asynccontextmanager"}
)
PROPERTY_DECORATORS = frozenset(
    {"property", "builtins.property", "functools.cached_property", "cached_property"}
)
# Callees that, handed a handle or a list of them, plausibly remove the hooks.
_REMOVING_WORDS = ("remove", "unregister", "detach", "clean", "release", "clear", "unhook",
                   "reset", "teardown", "close", "free", "destroy", "drop", "uninstall")


# -- on the `ast`, for the rules' prefilter scans ---------------------------------------


# -- small expression helpers -----------------------------------------------------------

def iter_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and everything below it (whitespace left out), depth first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def short(code: str, limit: int = 60) -> str:
    """Source for a message: on one line, cut to `limit` characters."""
    flat = " ".join(code.split())
    flat = flat.replace("( ", "(").replace("[ ", "[").replace(", )", ")").replace(", ]", "]")
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def hook_name(call: cst.Call) -> Optional[str]:
    """The hook registration a call makes (`register_forward_hook`), if it is one."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else (
        func.value if isinstance(func, cst.Name) else None)
    return name if name in HANDLE_HOOKS else None


def receiver(call: cst.Call) -> Optional[cst.BaseExpression]:
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def hook_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The callable a registration installs (first positional argument or `hook=`)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in ("hook", "fn", "callback"):
            return arg.value
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            # `register_multi_grad_hook(tensors, fn)`: the callable comes second
            if hook_name(call) == "register_multi_grad_hook":
                continue
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[1].value if len(positional) > 1 else None


def const_str(node: cst.CSTNode) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def getattr_self(node: cst.CSTNode) -> tuple[bool, Optional[str]]:
    """(is `getattr(self, ...)` / `hasattr`-style access, constant attribute name)."""
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)
            and node.func.value == "getattr" and len(node.args) >= 2 and is_self(node.args[0].value)):
        return True, const_str(node.args[1].value)
    return False, None


def self_attrs(expr: cst.CSTNode) -> tuple[set[str], bool]:
    """Attributes of `self` an expression reads (`self.a`, `getattr(self, "a")`), and
    whether it reads one by a computed name (`getattr(self, name)`)."""
    found: set[str] = set()
    dynamic = False
    for node in iter_nodes(expr):
        if isinstance(node, cst.Attribute) and is_self(node.value):
            found.add(node.attr.value)
        else:
            is_get, name = getattr_self(node)
            if is_get:
                if name is None:
                    dynamic = True
                else:
                    found.add(name)
    return found, dynamic


def names_in(expr: cst.CSTNode) -> set[str]:
    """Names an expression uses (not attribute names: `b` in `a.b` is no name)."""
    attrs = {id(n.attr) for n in iter_nodes(expr) if isinstance(n, cst.Attribute)}
    return {n.value for n in iter_nodes(expr) if isinstance(n, cst.Name) and id(n) not in attrs}


def mentions_self(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Name) and n.value == "self" for n in iter_nodes(node))


def target_names(target: cst.CSTNode) -> set[str]:
    """Names bound by an assignment / loop target (`a`, `a, (b, c)`, `*rest`)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        out: set[str] = set()
        for element in target.elements:
            out |= target_names(element.value)
        return out
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return set()


def is_accumulate_grad(expr: cst.CSTNode) -> bool:
    """`p.expand_as(p).grad_fn.next_functions[0][0]` and the like: a gradient
    accumulator node, which lives as long as its parameter."""
    saw_next = saw_grad_fn = False
    for node in iter_nodes(expr):
        if isinstance(node, cst.Attribute):
            if node.attr.value == "next_functions":
                saw_next = True
            elif node.attr.value == "grad_fn":
                saw_grad_fn = True
        elif isinstance(node, cst.Call):
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else "")
            if name == "get_gradient_edge":
                return True
    return saw_next and saw_grad_fn


def is_context_manager(ctx: FileContext, fn: cst.FunctionDef) -> bool:
    return bool(decorator_names(ctx, fn) & CONTEXT_MANAGER_DECORATORS)


def is_property(ctx: FileContext, fn: cst.FunctionDef) -> bool:
    if decorator_names(ctx, fn) & PROPERTY_DECORATORS:
        return True
    # `@x.setter` / `@x.deleter`
    return any(isinstance(d.decorator, cst.Attribute) and d.decorator.attr.value in ("setter", "getter", "deleter")
               for d in fn.decorators)


# -- classes of the file: same-file ancestors and descendants ----------------------------

def local_bases(ctx: FileContext, cls: cst.ClassDef) -> list[cst.ClassDef]:
    """Same-file ancestors of `cls`, nearest first (each once)."""
    out: list[cst.ClassDef] = []
    todo = [cls]
    while todo:
        current = todo.pop(0)
        for base in current.bases:
            if isinstance(base.value, cst.Name):
                found = ctx.classes.get(base.value.value)
                if found is not None and found is not cls and found not in out:
                    out.append(found)
                    todo.append(found)
    return out


def local_subclasses(ctx: FileContext, cls: cst.ClassDef) -> list[cst.ClassDef]:
    """Same-file descendants of `cls`, in the file's order."""
    table = _SUBCLASSES.get(ctx)
    if table is None:  # once per file: asked per class, a file of thousands took minutes
        table = {}
        for c in ctx.classes.values():
            for base in local_bases(ctx, c):
                table.setdefault(id(base), []).append(c)
        _SUBCLASSES[ctx] = table
    return list(table.get(id(cls), ()))


# FileContext -> id of a class of its file -> its same-file descendants (`local_subclasses`)
_SUBCLASSES: "weakref.WeakKeyDictionary[FileContext, dict[int, list[cst.ClassDef]]]" = \
    weakref.WeakKeyDictionary()


def class_methods(ctx: FileContext, cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    """Methods as an instance of `cls` sees them: its own over same-file bases'."""
    table: dict[str, cst.FunctionDef] = {}
    for klass in reversed([cls, *local_bases(ctx, cls)]):
        table.update(ctx.methods(klass))
    return table


def external_bases(ctx: FileContext, cls: cst.ClassDef) -> list[str]:
    """Qualified names of bases defined in other files (or unknown)."""
    out = []
    for klass in [cls, *local_bases(ctx, cls)]:
        for base in klass.bases:
            if isinstance(base.value, cst.Name) and base.value.value in ctx.classes:
                continue
            q = ctx.qualname(base.value)
            if q and q not in ("object", "builtins.object"):
                out.append(ctx.absolute(q))
    return out


# -- facts about one method --------------------------------------------------------------

@dataclass
class HandleStore:
    """`self.<attr>` receives the handle(s) of `call`."""

    attr: str
    call: cst.Call  # the registration
    hook: str
    kind: str  # "single" | "collection" | "mapping" | "nested" (mapping of collections)
    node: cst.CSTNode  # the assignment / container call that stores it (reported)
    method: cst.FunctionDef


@dataclass
class MethodFacts:
    stores: list[HandleStore] = field(default_factory=list)
    removes: set[str] = field(default_factory=set)  # self attrs whose handles it removes
    removes_any: bool = False  # removes through a computed attribute name
    # removed inside a nested function (the hook itself, when it removes itself once run)
    nested_removes: set[str] = field(default_factory=set)
    self_calls: set[str] = field(default_factory=set)  # self.m(...)
    super_calls: set[str] = field(default_factory=set)  # super().m(...)
    returns_handle: Optional[cst.Call] = None  # `return x.register_..._hook(...)`
    assigns: dict[str, list] = field(default_factory=dict)  # attr -> [(value, statement)]
    drops: set[str] = field(default_factory=set)  # del self.a / self.a = None / self.a.clear()


_CONTAINER_ADD = frozenset({"append", "appendleft", "add", "insert", "extend"})
_MAPPING_ADD = frozenset({"setdefault", "update", "__setitem__"})


def binds_own_self(fn: cst.CSTNode) -> bool:
    """Does a function (or lambda) nested in a method take its own `self` parameter? Then
    `self` inside it is whatever it is later bound to (a function installed on another
    class, or bound with `MethodType`), not the instance of the enclosing method."""
    params = getattr(fn, "params", None)
    if not isinstance(params, cst.Parameters):
        return False
    star = params.star_arg if isinstance(params.star_arg, cst.Param) else None
    every = (*params.posonly_params, *params.params, *params.kwonly_params, star, params.star_kwarg)
    return any(p is not None and p.name.value == "self" for p in every)


class _FirstPass(cst.CSTVisitor):
    """Locals of a method: which hold hook handles (or lists of them), which are read
    from attributes of `self` (aliases)."""

    def __init__(self) -> None:
        self.handle_locals: dict[str, cst.Call] = {}  # name -> registration
        self.collection_locals: set[str] = set()
        self.aliases: dict[str, set[str]] = {}  # name -> self attrs it was read from
        self.dynamic_aliases: set[str] = set()
        self.bindings: list[tuple[set[str], cst.CSTNode]] = []  # (names, value or iter)
        self.adds: list[tuple[str, cst.CSTNode]] = []  # (local, value) for local.append(v)

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_FunctionDef(self, node) -> bool:
        return not binds_own_self(node)

    visit_Lambda = visit_FunctionDef

    def visit_Assign(self, node: cst.Assign) -> None:
        names: set[str] = set()
        for t in node.targets:
            names |= target_names(t.target)
        if names:
            self.bindings.append((names, node.value))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.bindings.append((target_names(node.target), node.value))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.bindings.append((target_names(node.target), node.value))

    def visit_For(self, node: cst.For) -> None:
        self.bindings.append((target_names(node.target), node.iter))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.bindings.append((target_names(node.target), node.iter))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.bindings.append((target_names(node.asname.name), node.item))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and (
                func.attr.value in _CONTAINER_ADD | _MAPPING_ADD):
            for arg in node.args:
                self.adds.append((func.value.value, arg.value))

    def resolve(self) -> None:
        for _ in range(4):  # a few rounds: chains of locals
            changed = False
            for names, value in self.bindings:
                call = registration_in(value, self.handle_locals)
                collection = call is not None and _holds_many(value, self.collection_locals)
                attrs, dynamic = self_attrs(value)
                used = names_in(value)
                for alias in used & self.aliases.keys():
                    attrs = attrs | self.aliases[alias]
                dynamic = dynamic or bool(used & self.dynamic_aliases)
                for name in names:
                    if call is not None and name not in self.handle_locals:
                        self.handle_locals[name] = call
                        changed = True
                    if collection and name not in self.collection_locals:
                        self.collection_locals.add(name)
                        changed = True
                    if attrs - self.aliases.get(name, set()):
                        self.aliases.setdefault(name, set()).update(attrs)
                        changed = True
                    if dynamic and name not in self.dynamic_aliases:
                        self.dynamic_aliases.add(name)
                        changed = True
            for local, value in self.adds:
                call = registration_in(value, self.handle_locals)
                if call is not None and local not in self.collection_locals:
                    self.handle_locals.setdefault(local, call)
                    self.collection_locals.add(local)
                    changed = True
            if not changed:
                break


def _holds_many(value: cst.CSTNode, collection_locals: set[str]) -> bool:
    """Is `value` a collection of handles (a list display, a comprehension, a local
    list of them) rather than one handle?"""
    if isinstance(value, (cst.List, cst.Tuple, cst.ListComp, cst.Set, cst.SetComp,
                          cst.GeneratorExp, cst.Dict, cst.DictComp)):
        return True
    return isinstance(value, cst.Name) and value.value in collection_locals


def registration_in(expr: cst.CSTNode, handle_locals: dict[str, cst.Call],
                    handle_methods: Optional[dict[str, cst.Call]] = None) -> Optional[cst.Call]:
    """The registration whose handle `expr` evaluates to or holds (a display, a
    comprehension, a conditional of them), if any; a call other than a registration
    (`len(handles)`) does not count."""
    node = expr
    if isinstance(node, cst.Call):
        if hook_name(node) is not None:
            return node
        if handle_methods and isinstance(node.func, cst.Attribute) and is_self(node.func.value):
            return handle_methods.get(node.func.attr.value)
        return None
    if isinstance(node, cst.Name):
        return handle_locals.get(node.value)
    for part in _value_parts(node):
        found = registration_in(part, handle_locals, handle_methods)
        if found is not None:
            return found
    return None


def _value_parts(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The expressions whose values `node` evaluates to or holds: the elements of a
    display, a comprehension's element, both arms of a conditional or `or`, ..."""
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return [e.value for e in node.elements]
    if isinstance(node, cst.Dict):
        return [e.value for e in node.elements]
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return [node.elt]
    if isinstance(node, cst.DictComp):
        return [node.value]
    if isinstance(node, cst.IfExp):
        return [node.body, node.orelse]
    if isinstance(node, cst.BooleanOperation):
        return [node.left, node.right]
    if isinstance(node, cst.NamedExpr):
        return [node.value]
    if isinstance(node, cst.Await):
        return [node.expression]
    if isinstance(node, (cst.Element, cst.StarredElement)):
        return [node.value]
    return []


class _SecondPass(cst.CSTVisitor):
    def __init__(self, first: _FirstPass, facts: MethodFacts, method: cst.FunctionDef,
                 handle_methods: dict[str, cst.Call]) -> None:
        self.first = first
        self.facts = facts
        self.method = method
        self.handle_methods = handle_methods
        self.depth = 0

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_FunctionDef(self, node) -> bool:
        self.depth += 1
        # its `self` is not this instance: what it stores or removes is another object's
        return not binds_own_self(node)

    def leave_FunctionDef(self, node) -> None:
        self.depth -= 1

    visit_Lambda = visit_FunctionDef
    leave_Lambda = leave_FunctionDef

    # stores ------------------------------------------------------------------------
    def _registration(self, value: cst.CSTNode) -> Optional[cst.Call]:
        return registration_in(value, self.first.handle_locals, self.handle_methods)

    def _kind_of(self, value: cst.CSTNode) -> str:
        if isinstance(value, (cst.List, cst.Tuple, cst.ListComp, cst.Set, cst.SetComp,
                              cst.GeneratorExp)):
            return "collection"
        if isinstance(value, (cst.Dict, cst.DictComp)):
            return "mapping"
        if isinstance(value, cst.Name) and value.value in self.first.collection_locals:
            return "collection"
        return "single"

    def _store(self, target: cst.CSTNode, value: cst.CSTNode, node: cst.CSTNode) -> None:
        call = self._registration(value)
        attr = None
        kind = self._kind_of(value)
        if isinstance(target, cst.Attribute) and is_self(target.value):
            attr = target.attr.value
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Attribute) \
                and is_self(target.value.value):
            attr = target.value.attr.value
            kind = "nested" if kind == "collection" else "mapping"
        if attr is None:
            return
        self.facts.assigns.setdefault(attr, []).append((value, node))
        if call is not None:
            self.facts.stores.append(HandleStore(attr, call, hook_name(call) or "?", kind, node,
                                                 self.method))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._store(t.target, node.value, node)
            if isinstance(t.target, cst.Attribute) and is_self(t.target.value) and \
                    isinstance(node.value, cst.Name) and node.value.value == "None":
                self.facts.drops.add(t.target.attr.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node.target, node.value, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Attribute) and is_self(node.target.value):
            call = self._registration(node.value)
            if call is not None:
                self.facts.stores.append(HandleStore(node.target.attr.value, call,
                                                     hook_name(call) or "?", "collection",
                                                     node, self.method))

    def visit_Del(self, node: cst.Del) -> None:
        for t in iter_nodes(node.target):
            if isinstance(t, cst.Attribute) and is_self(t.value):
                self.facts.drops.add(t.attr.value)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None and self.facts.returns_handle is None:
            call = registration_in(node.value, self.first.handle_locals)
            if call is not None:
                self.facts.returns_handle = call

    def visit_WithItem(self, node: cst.WithItem) -> None:
        # a RemovableHandle is a context manager that removes the hook on exit
        self._removes(node.item)

    # removals and calls ------------------------------------------------------------
    def _removes(self, expr: cst.CSTNode) -> None:
        attrs, dynamic = self_attrs(expr)
        used = names_in(expr)
        for name in used & self.first.aliases.keys():
            attrs |= self.first.aliases[name]
        if dynamic or used & self.first.dynamic_aliases:
            self.facts.removes_any = True
        self.facts.removes |= attrs
        if self.depth:
            self.facts.nested_removes |= attrs

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if name == "remove" and not node.args:
                self._removes(func.value)
            elif name == "clear" and not node.args:
                if isinstance(func.value, cst.Attribute) and is_self(func.value.value):
                    self.facts.drops.add(func.value.attr.value)
            if is_self(func.value):
                self.facts.self_calls.add(name)
            elif isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) \
                    and func.value.func.value == "super":
                self.facts.super_calls.add(name)
            elif isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) \
                    and func.value.func.value == "type" and func.value.args and is_self(func.value.args[0].value):
                self.facts.self_calls.add(name)  # type(self).m(self)
            # container.append(handle) on self.<attr>
            target = func.value
            if isinstance(target, cst.Attribute) and is_self(target.value) and (
                    name in _CONTAINER_ADD or name in _MAPPING_ADD):
                for arg in node.args:
                    call = self._registration(arg.value)
                    if call is not None:
                        kind = "mapping" if name in _MAPPING_ADD else "collection"
                        if kind == "mapping" and self._kind_of(arg.value) == "collection":
                            kind = "nested"
                        self.facts.stores.append(HandleStore(target.attr.value, call,
                                                             hook_name(call) or "?", kind, node,
                                                             self.method))
                        break
        # a handle (or a list of them) handed to a function that removes it
        callee = func.attr.value if isinstance(func, cst.Attribute) else (
            func.value if isinstance(func, cst.Name) else "")
        if callee and any(w in callee.lower() for w in _REMOVING_WORDS):
            for arg in node.args:
                self._removes(arg.value)


def method_facts(method: cst.FunctionDef, handle_methods: Optional[dict[str, cst.Call]] = None) -> MethodFacts:
    first = _FirstPass()
    visit(method.body, first)
    first.resolve()
    facts = MethodFacts()
    visit(method.body, _SecondPass(first, facts, method, handle_methods or {}))
    return facts


# -- facts about a class -----------------------------------------------------------------

class ClassHandles:
    """Where a class stores hook handles and which methods remove them."""

    def __init__(self, ctx: FileContext, cls: cst.ClassDef) -> None:
        self.ctx = ctx
        self.cls = cls
        self.methods = class_methods(ctx, cls)
        own = ctx.methods(cls)
        # methods that return a handle (`self._h = self._register_hook()`)
        handle_methods: dict[str, cst.Call] = {}
        self.facts: dict[str, MethodFacts] = {}
        for name, fn in self.methods.items():
            f = self.facts[name] = method_facts(fn)
            if f.returns_handle is not None:
                handle_methods[name] = f.returns_handle
        if handle_methods:  # a second look, now knowing which calls return a handle
            for name, fn in self.methods.items():
                self.facts[name] = method_facts(fn, handle_methods)
        self.own = own
        self._callbacks: Optional[set[str]] = None

    def stores(self) -> dict[str, list[HandleStore]]:
        """attr -> its stores, for stores made in the class's own methods."""
        out: dict[str, list[HandleStore]] = {}
        for name, fn in self.own.items():
            for store in self.facts[name].stores:
                out.setdefault(store.attr, []).append(store)
        return out

    def release_methods(self, finalizer: bool = True, whole: bool = True) -> list[str]:
        """Release methods as `release.is_release_method` defines them (named as one,
        callable with `self` alone, releasing the whole object, not per item), less those
        the class installs as callbacks (a hook method called `stop` is no release
        method); `__del__` only when `finalizer`. With `whole=False`, every method named
        as one (`shutdown(self, force)` too): evidence of what the author treats as tied
        to the instance's life, not a place that surely runs."""
        return [n for n in self.ctx.settings.release_methods
                if n in self.methods and n not in self.callbacks and (finalizer or n != FINALIZER)
                and (not whole or is_release_method(self.ctx, self.methods[n]))]

    @property
    def callbacks(self) -> set[str]:
        """Methods passed as `self.<name>` to a hook registration (or a partial of it)."""
        if self._callbacks is None:
            self._callbacks = set()
            for fn in self.methods.values():
                for node in iter_nodes(fn.body):
                    if isinstance(node, cst.Call) and hook_name(node) is not None:
                        hook = hook_argument(node)
                        if hook is not None:
                            self._callbacks |= self_attrs(hook)[0]
        return self._callbacks

    def context_managers(self) -> list[str]:
        return [n for n, fn in self.methods.items() if is_context_manager(self.ctx, fn)]

    def self_removing(self, attr: str) -> bool:
        """Does a hook remove its own handle when it runs (a one-shot hook)?"""
        return any(attr in f.nested_removes for f in self.facts.values())

    def reachable(self, roots: Iterable[str]) -> set[str]:
        seen: set[str] = set()
        todo = list(roots)
        while todo:
            name = todo.pop()
            if name in seen or name not in self.facts:
                continue
            seen.add(name)
            facts = self.facts[name]
            todo.extend(facts.self_calls)
            todo.extend(facts.super_calls)
        return seen

    def removed_in(self, attr: str, methods: Iterable[str]) -> list[str]:
        return [m for m in methods if m in self.facts and (
            attr in self.facts[m].removes or self.facts[m].removes_any)]

    def removed_by_subclass(self, attr: str) -> bool:
        for sub in local_subclasses(self.ctx, self.cls):
            for fn in body_functions(sub):
                f = method_facts(fn)
                if attr in f.removes or f.removes_any:
                    return True
        return False

    def removed_by_external_base(self, attr: str) -> bool:
        return any(external_removes(self.ctx.index, base, attr)
                   for base in external_bases(self.ctx, self.cls))


# -- removal in project classes of other files (read with `ast`, only when needed) -------

def parse_file(index, path: str) -> Optional[ast.Module]:
    """The `ast` of a project file in another file, read once per index (`ProjectIndex.source`)."""
    found = index.source(path)
    return found[0] if found is not None else None


def _class_node(index, summary) -> Optional[ast.ClassDef]:
    """The `ast` of a project class in another file."""
    tree = parse_file(index, summary.path)
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.lineno == summary.line:
                return node
    return None


def external_attributes(index, qualified: str, depth: int = 0) -> set[str]:
    """Every name a project class in another file (or one of its project bases) uses on
    `self` or defines in its body: attributes an instance of a subclass shares with it."""
    resolved = index.resolve(qualified)
    summary = index.classes.get(resolved) if resolved else None
    if summary is None or depth > 5:
        return set()
    found: set[str] = set()
    node = _class_node(index, summary)
    if node is not None:
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
                found.add(n.attr)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                found.add(n.id)  # class attributes (and, harmlessly, method locals)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.add(n.name)
    for base in summary.bases:
        found |= external_attributes(index, base, depth + 1)
    return found


def _external_removals(index, qualified: Optional[str], depth: int = 0) -> set[str]:
    """Attributes of `self` that a project class in another file (or its project bases)
    mentions in a method that calls `.remove()`; `{"*"}` when it removes by a computed
    name."""
    resolved = index.resolve(qualified)
    summary = index.classes.get(resolved) if resolved else None
    if summary is None or depth > 5:
        return set()
    found: set[str] = set()
    node = _class_node(index, summary)
    if node is not None:
        for item in node.body:
            if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            removes = any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr == "remove" and not n.args for n in ast.walk(item))
            if removes:
                for n in ast.walk(item):
                    if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                            and n.value.id == "self":
                        found.add(n.attr)
                    elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                            and n.func.id == "getattr" and n.args:
                        found.add("*")
    for base in summary.bases:
        found |= _external_removals(index, base, depth + 1)
    return found


def external_removes(index, qualified: str, attr: str) -> bool:
    found = _external_removals(index, qualified)
    return attr in found or "*" in found



# -- taken out again on every way out of the function that makes it ----------------------
#
# A hook registered (or a method patched) for the length of one call is no lasting cycle
# when the function removes it again on every way out: in `finally`, after a
# `@contextmanager`'s `yield`, in both `except` and `else`, before each `return`. The
# walk below follows the statements after the registration through `if`/`try`/loops up to
# the end of the function. Exceptions any call might raise are not followed (a removal
# at the end of a straight block counts); explicit `return`, `raise` and the `except`
# clauses of an enclosing `try` are.

@dataclass
class _Exits:
    """Ways a run of statements can end without the undo having run."""

    falls: bool = False  # reaches its end (control goes on after it)
    returns: bool = False  # leaves the function (`return`; a `yield` never resumed)
    raises: bool = False  # raises (an enclosing `except` may still catch it)

    def merge(self, other: "_Exits") -> None:
        self.falls |= other.falls
        self.returns |= other.returns
        self.raises |= other.raises


def _block(suite: Optional[cst.CSTNode]) -> list[cst.CSTNode]:
    """The statements of a suite (a one-line suite counts as one simple statement)."""
    if isinstance(suite, cst.IndentedBlock):
        return list(suite.body)
    return [suite] if isinstance(suite, cst.SimpleStatementSuite) else []


def _yields(statement: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Yield) for n in iter_nodes(statement))


def _test_key(ctx: FileContext, test: cst.CSTNode) -> str:
    return " ".join(ctx.code(test).split())


class _ExitPaths:
    """Runs of statements judged by `undoes(statement)`: does the undo run before the
    run ends, returns or raises? `truth(test)` says which way an `if` must go (True,
    False, or None for either); `resumes`: a `yield` always resumes (a context manager)."""

    def __init__(self, ctx: FileContext, undoes, truth, resumes: bool) -> None:
        self.ctx = ctx
        self.undoes = undoes
        self.truth = truth
        self.resumes = resumes
        self.known: dict[str, bool] = {}  # `if` tests whose outcome the path fixes

    def test(self, test: cst.BaseExpression) -> Optional[bool]:
        known = self.known.get(_test_key(self.ctx, test))
        if known is not None:
            return known
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.test(test.expression)
            return None if inner is None else not inner
        return self.truth(test)

    def run(self, statements: list[cst.CSTNode]) -> _Exits:
        out = _Exits()
        for statement in statements:
            if self.undoes(statement):
                return out
            step = self.statement(statement)
            out.returns |= step.returns
            out.raises |= step.raises
            if not step.falls:
                return out
        out.falls = True
        return out

    def statement(self, node: cst.CSTNode) -> _Exits:
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in node.body:
                if isinstance(small, cst.Return):
                    return _Exits(returns=True)
                if isinstance(small, cst.Raise):
                    return _Exits(raises=True)
                if isinstance(small, (cst.Break, cst.Continue)):
                    return _Exits(falls=True)  # on after the loop, or round it again
            return _Exits(falls=True, returns=not self.resumes and _yields(node))
        if isinstance(node, cst.If):
            return self._if(node)
        if isinstance(node, (cst.Try, cst.TryStar)):
            return self._try(node)
        if isinstance(node, (cst.For, cst.While)):
            out = self.run(_block(node.body))  # may run no time at all
            if node.orelse is not None:
                out.merge(self.run(_block(node.orelse.body)))
            out.falls = True
            return out
        if isinstance(node, cst.With):
            return self.run(_block(node.body))
        if isinstance(node, cst.Match):
            out = _Exits(falls=True)  # no case may match
            for case in node.cases:
                out.merge(self.run(_block(case.body)))
            return out
        return _Exits(falls=True)  # a `def`, a `class`

    def _if(self, node: cst.If) -> _Exits:
        truth = self.test(node.test)
        out = _Exits()
        if truth is not False:
            out.merge(self.run(_block(node.body)))
        if truth is not True:
            if node.orelse is None:
                out.falls = True
            elif isinstance(node.orelse, cst.If):
                out.merge(self._if(node.orelse))
            else:
                out.merge(self.run(_block(node.orelse.body)))
        return out

    def _finally(self, node) -> Optional[_Exits]:
        return self.run(_block(node.finalbody.body)) if node.finalbody is not None else None

    def _try(self, node) -> _Exits:
        final = self._finally(node)
        if final is not None and not final.falls:
            return final  # the `finally` undoes on every way out of the `try`
        body = self.run(_block(node.body))
        out = _Exits(returns=body.returns, raises=body.raises and not node.handlers)
        if body.falls:
            if node.orelse is not None:
                out.merge(self.run(_block(node.orelse.body)))
            else:
                out.falls = True
        for handler in node.handlers:
            out.merge(self.run(_block(handler.body)))
        if final is not None:
            out.returns |= final.returns
            out.raises |= final.raises
        return out

    def undone_after(self, path: list[cst.CSTNode]) -> bool:
        """`path`: the nodes from the function down to the statement of interest. Does
        every way on from that statement to the end of the function run the undo?"""
        for i, node in enumerate(path[:-1]):  # the `if`s on the way went one way
            if isinstance(node, cst.If) and path[i + 1] is node.body:
                self.known[_test_key(self.ctx, node.test)] = True
            elif isinstance(node, cst.If) and isinstance(path[i + 1], cst.Else):
                self.known[_test_key(self.ctx, node.test)] = False
        for i, node in enumerate(path[:-1]):
            # a `try` around it whose `finally` undoes: every way out passes through it
            if isinstance(node, (cst.Try, cst.TryStar)) and not isinstance(path[i + 1], cst.Finally):
                final = self._finally(node)
                if final is not None and not final.falls:
                    return not final.returns and not final.raises
        raising = False  # a `raise` on the way, not yet caught by an `except`
        for i in range(len(path) - 1, 0, -1):
            suite, owner = path[i], path[i - 1]
            if not isinstance(suite, (cst.IndentedBlock, cst.SimpleStatementSuite)):
                continue
            statements = _block(suite)
            index = statements.index(path[i + 1]) if isinstance(suite, cst.IndentedBlock) else 0
            rest = self.run(statements[index + 1:])
            if rest.returns:
                return False
            raising |= rest.raises
            falls = rest.falls
            if isinstance(owner, cst.FunctionDef):
                return not falls and not raising  # falling off the end: a `return None`
            statement = path[i - 2] if isinstance(owner, (cst.Else, cst.ExceptHandler, cst.ExceptStarHandler,
                                                          cst.Finally)) else owner
            if isinstance(statement, (cst.Try, cst.TryStar)) and not isinstance(owner, cst.Finally):
                final = self._finally(statement)  # (one that undoes returned above)
                if owner is statement:  # left the `try` body: `else`, or an `except`
                    if statement.handlers:
                        raising = False  # caught (the `except` clauses follow)
                    if falls and statement.orelse is not None:
                        after = self.run(_block(statement.orelse.body))
                        if after.returns:
                            return False
                        raising |= after.raises
                        falls = after.falls
                    for handler in statement.handlers:
                        after = self.run(_block(handler.body))
                        if after.returns:
                            return False
                        raising |= after.raises
                        falls |= after.falls
                if final is not None and (final.returns or final.raises):
                    return False
            if not falls and not raising:
                return True
        return False


def _path_to(root: cst.CSTNode, target: cst.CSTNode) -> Optional[list[cst.CSTNode]]:
    """The nodes from `root` down to `target`, both included (None if not below it)."""
    parents: dict[int, Optional[cst.CSTNode]] = {id(root): None}
    stack = [root]
    while stack:
        node = stack.pop()
        if node is target:
            path = [node]
            while parents[id(path[-1])] is not None:
                path.append(parents[id(path[-1])])
            return path[::-1]
        for child in children(node):
            parents[id(child)] = node
            stack.append(child)
    return None


def _scope_path(root: cst.CSTNode, node: cst.CSTNode) -> Optional[list[cst.CSTNode]]:
    """The nodes from the innermost function around `node` (within `root`) down to it;
    None when `node` is in a lambda (no statements to follow)."""
    path = _path_to(root, node)
    if path is None:
        return None
    start = max((i for i, n in enumerate(path[:-1]) if isinstance(n, (cst.FunctionDef, cst.Lambda))),
                default=None)
    if start is None or isinstance(path[start], cst.Lambda):
        return None
    return path[start:]


def undone_on_every_exit(ctx: FileContext, root: cst.CSTNode, node: cst.CSTNode, undoes,
                         truth=lambda test: None) -> bool:
    """Is what `node` (a statement's part, inside a function in `root`) sets up taken out
    again - a statement for which `undoes(statement)` holds - on every way out of the
    innermost function around it? `truth(test)`: how an `if` on that test must go
    (True/False), or None."""
    path = _scope_path(root, node)
    if path is None:
        return False
    paths = _ExitPaths(ctx, undoes, truth, resumes=is_context_manager(ctx, path[0]))
    return paths.undone_after(path)


class _Handle:
    """What holds the handle(s) of one registration in a function: local names, and
    attributes or containers written as code (`self._handle`, `self._hooks`)."""

    _METHODS = frozenset({"pop", "popitem", "values", "items", "copy"})  # hand its handles out

    def __init__(self, ctx: FileContext, scope: cst.FunctionDef, call: cst.Call) -> None:
        self.ctx = ctx
        self.call = call
        self.names: set[str] = set()
        self.attrs: set[str] = set()
        bindings = list(_bindings(scope))
        for _ in range(4):  # a few rounds: chains of locals
            before = len(self.names) + len(self.attrs)
            for targets, value in bindings:
                if self.held(value):
                    for target in targets:
                        self._add(target)
            if len(self.names) + len(self.attrs) == before:
                break

    def _add(self, target: cst.CSTNode) -> None:
        if isinstance(target, cst.Subscript):  # `handles[key] = ...`: the container holds it
            target = target.value
        if isinstance(target, cst.Attribute):
            self.attrs.add(_test_key(self.ctx, target))
        else:
            self.names |= target_names(target)

    def held(self, expr: cst.CSTNode) -> bool:
        """Does `expr` evaluate to (or hold) the handle?"""
        if expr is self.call:
            return True
        if isinstance(expr, cst.Name):
            return expr.value in self.names
        if isinstance(expr, cst.Attribute):
            return bool(self.attrs) and _test_key(self.ctx, expr) in self.attrs
        if isinstance(expr, cst.Subscript):
            return self.held(expr.value)
        if isinstance(expr, cst.Call):
            func = expr.func
            return isinstance(func, cst.Attribute) and func.attr.value in self._METHODS and self.held(func.value)
        return any(self.held(part) for part in _value_parts(expr))

    def removed_in(self, node: cst.CSTNode) -> bool:
        """Does `node` call `.remove()` on the handle, or hand it to a function that
        removes it (`remove_hooks(handles)`)? Lambdas, which may never run, do not count."""
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Lambda):
                continue
            if isinstance(current, cst.Call) and self._removes(current):
                return True
            stack.extend(children(current))
        return False

    def _removes(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "remove" and not call.args:
            return self.held(func.value)
        callee = func.attr.value if isinstance(func, cst.Attribute) else (
            func.value if isinstance(func, cst.Name) else "")
        return any(w in callee.lower() for w in _REMOVING_WORDS) and any(
            self.held(arg.value) for arg in call.args)

    def undoes(self, statement: cst.CSTNode) -> bool:
        """Does running `statement` remove the handle (a loop over the handles removing
        each, `with handle:`, a statement that removes it)?"""
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return self.removed_in(statement)
        if isinstance(statement, cst.For):
            return self.held(statement.iter) and self.removed_in(statement.body)
        if isinstance(statement, cst.With):
            return any(self.held(item.item) for item in statement.items)
        return False

    def truth(self, test: cst.BaseExpression) -> Optional[bool]:
        """`if handle:` / `if handle is not None:` hold wherever the handle was made."""
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            target = test.comparisons[0]
            if isinstance(target.comparator, cst.Name) and target.comparator.value == "None" \
                    and self.held(test.left):
                if isinstance(target.operator, cst.IsNot):
                    return True
                if isinstance(target.operator, cst.Is):
                    return False
            return None
        return True if self.held(test) else None


def _bindings(scope: cst.CSTNode) -> Iterator[tuple[list[cst.CSTNode], cst.CSTNode]]:
    """(targets, value) for what the function (its nested functions included) binds or
    stores: assignments, loop targets, `with ... as`, and `x.append(v)`-style adds."""
    for node in iter_nodes(scope):
        if isinstance(node, cst.Assign):
            yield [t.target for t in node.targets], node.value
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)) and node.value is not None:
            yield [node.target], node.value
        elif isinstance(node, cst.NamedExpr):
            yield [node.target], node.value
        elif isinstance(node, (cst.For, cst.CompFor)):
            yield [node.target], node.iter
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            yield [node.asname.name], node.item
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value in _CONTAINER_ADD | _MAPPING_ADD:
            for arg in node.args:
                yield [node.func.value], arg.value


def _nested_function(scope: cst.CSTNode, name: str) -> Optional[cst.FunctionDef]:
    for node in iter_nodes(scope):
        if isinstance(node, cst.FunctionDef) and node is not scope and node.name.value == name:
            return node
    return None


def hook_removed_on_exit(ctx: FileContext, root: cst.CSTNode, call: cst.Call,
                         hook: Optional[cst.CSTNode]) -> bool:
    """Is the handle of the registration `call` (inside a function in `root`) removed on
    every way out of that function (see `undone_on_every_exit`), or by the hook itself,
    a nested function of it that removes its own handle when it runs (a one-shot hook)?"""
    path = _scope_path(root, call)
    if path is None:
        return False
    scope = path[0]
    handle = _Handle(ctx, scope, call)
    if isinstance(hook, cst.Name):
        fn = _nested_function(scope, hook.value)
        if fn is not None and handle.removed_in(fn.body):
            return True
    # a registration used as a context manager (`with m.register_forward_hook(fn):`)
    if any(isinstance(n, cst.With) and any(handle.held(item.item) for item in n.items) for n in path):
        return True
    paths = _ExitPaths(ctx, handle.undoes, handle.truth, resumes=is_context_manager(ctx, scope))
    return paths.undone_after(path)


# -- hooks on objects the instance was handed (not its own) ------------------------------

# Calls that reach objects inside their receiver (a submodule, a parameter): what they
# return belongs to whoever owns the receiver.
_INSIDE = frozenset({"get_submodule", "get_parameter", "modules", "named_modules", "children",
                     "named_children", "parameters", "named_parameters", "values", "items"})
_ITERATION = frozenset({"enumerate", "zip", "list", "tuple", "reversed", "iter", "sorted"})


def _params(fn: cst.FunctionDef) -> set[str]:
    p = fn.params
    return {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)} - {"self"}


def passed_in_attrs(ctx: FileContext, cls: cst.ClassDef) -> set[str]:
    """Attributes `__init__` sets to one of its own arguments (`self._encoder = encoder`):
    objects the caller made and keeps, not the instance's own."""
    init = ctx.methods(cls).get("__init__")
    if init is None:
        return set()
    params = _params(init)
    out: set[str] = set()
    for node in iter_nodes(init.body):
        if isinstance(node, (cst.Assign, cst.AnnAssign)) and isinstance(node.value, cst.Name) \
                and node.value.value in params:
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            out |= {t.attr.value for t in targets if isinstance(t, cst.Attribute) and is_self(t.value)}
    return out


def reaches_passed_in(ctx: FileContext, cls: cst.ClassDef, method: cst.FunctionDef,
                      expr: cst.CSTNode) -> bool:
    """Is `expr` an object the caller handed in, or one inside it: an argument of the
    method (`model`, `model.encoder`, a layer of `model.modules()`), an attribute
    `__init__` set from an argument (`self._encoder.get_submodule(name)`), or a local
    bound to one of those? Not the instance's own objects, nor values computed now."""
    bindings: dict[str, list[cst.CSTNode]] = {}
    for targets, value in _bindings(method.body):
        for target in targets:
            for name in target_names(target):
                bindings.setdefault(name, []).append(value)
    params = _params(method)
    passed = passed_in_attrs(ctx, cls)

    def reaches(node: cst.CSTNode, depth: int) -> bool:
        while depth < 8:
            if isinstance(node, cst.Name):
                if node.value in params:
                    return True
                values = bindings.get(node.value, [])
                return bool(values) and all(reaches(v, depth + 1) for v in values)
            if isinstance(node, cst.Attribute):
                if is_self(node.value):
                    return node.attr.value in passed
                node = node.value
            elif isinstance(node, cst.Subscript):
                node = node.value
            elif isinstance(node, cst.Call):
                func = node.func
                if isinstance(func, cst.Attribute) and func.attr.value in _INSIDE:
                    node = func.value
                elif isinstance(func, cst.Name) and func.value in _ITERATION and node.args:
                    node = node.args[0].value
                else:
                    return False
            else:
                return False
            depth += 1
        return False

    return reaches(expr, 0)


def removes_hooks_by_identity(ctx: FileContext, cls: cst.ClassDef) -> set[str]:
    """The methods of the class that take hooks out of a module's hook dict themselves
    (`del layer._forward_hooks[key]`, `hooks = m._forward_pre_hooks; hooks.pop(k)`) - the
    way to undo a hook whose handle was not kept."""
    def hook_dict(node: cst.CSTNode, aliases: set[str]) -> bool:
        if isinstance(node, cst.Name):
            return node.value in aliases
        return isinstance(node, cst.Attribute) and node.attr.value.startswith("_") \
            and node.attr.value.endswith("hooks")

    found: set[str] = set()
    for name, method in ctx.methods(cls).items():
        aliases = {n for targets, value in _bindings(method.body) if hook_dict(value, set())
                   for t in targets for n in target_names(t)}
        for node in iter_nodes(method.body):
            if isinstance(node, cst.Del):
                removed = any(isinstance(t, cst.Subscript) and hook_dict(t.value, aliases)
                              for t in iter_nodes(node.target))
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                removed = node.func.attr.value in ("pop", "clear", "popitem") and hook_dict(node.func.value, aliases)
            else:
                continue
            if removed:
                found.add(name)
                break
    return found


def hook_holds_self(method: cst.FunctionDef, hook: cst.CSTNode) -> bool:
    """Does the installed callable keep the instance (or an object kept on it) alive: a
    bound method or attribute of `self`, a lambda using `self`, a function nested in the
    method that uses `self`, what a method of `self` makes (`self._make_hook(fn)`), a
    partial over one of those? A plain function called with `self.group` makes a hook
    that holds the group, not the instance."""
    if isinstance(hook, cst.Name):
        nested = _nested_function(method.body, hook.value)
        return nested is not None and mentions_self(nested.body)
    if isinstance(hook, cst.Attribute):
        return is_self(hook.value)
    if isinstance(hook, cst.Lambda):
        return mentions_self(hook.body)
    if isinstance(hook, cst.Call):
        func = hook.func
        if isinstance(func, cst.Attribute) and is_self(func.value):
            return True
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in ("partial", "MethodType"):
            return any(is_self(a.value) or hook_holds_self(method, a.value) for a in hook.args)
    return False
