"""Facts about one method of a class, for `retainlint.analysis.hooks.ClassHandles`: the
attributes of `self` it stores hook handles in (`HandleStore`), the handles it removes,
the methods of `self` it calls, a handle it returns (`MethodFacts`, `method_facts`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.analysis.hook_exprs import (
    _value_parts,
    hook_name,
    iter_nodes,
    names_in,
    self_attrs,
    target_names,
)
from retainlint.analysis.walk import visit

# Callees that, handed a handle or a list of them, plausibly remove the hooks.
_REMOVING_WORDS = ("remove", "unregister", "detach", "clean", "release", "clear", "unhook",
                   "reset", "teardown", "close", "free", "destroy", "drop", "uninstall")


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
