"""RL601's alias analysis: which other attributes of the class reference a released
attribute's object - assigned from an expression that holds it, from the same local
value, or handed it (`self.b.load_model(self.a)`) by a method that keeps it."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions, self_attribute
from retainlint.analysis.holding import caller_supplied, immutable_annotation, immutable_value
from retainlint.rules.prefilters.rl601 import (
    READ_ONLY_METHODS,
    SCALAR_ATTRS,
    SCALAR_CALLS,
    scalar_name,
)
from retainlint.rules.rl601_release_leaves_alias.callee import (
    METHOD_NAMES,
    Escape,
    from_inner_root,
    methods_named,
)
from retainlint.rules.rl601_release_leaves_alias.collector import Release, Source

_STORE_VERBS = frozenset(
    {
        "load", "register", "add", "attach", "bind", "set", "append", "extend", "insert",
        "setdefault", "install", "store", "push", "track", "wrap", "hold", "keep",
        "save", "own", "adopt", "init", "initialize", "setup", "__setitem__",
    }
)
_COPY_CALLS = frozenset(
    {
        "list", "dict", "tuple", "set", "frozenset", "copy.copy", "collections.OrderedDict",
        "builtins.list", "builtins.dict", "builtins.tuple", "builtins.set",
    }
)


# Method names that use a handle/id they are given and do not keep it.
_USE_VERBS = frozenset(
    {
        "release", "free", "remove", "close", "unregister", "drop", "delete", "discard",
        "cancel", "abort", "check", "get", "query", "is", "has", "poll", "wait", "lookup",
        "contains", "shutdown", "cleanup", "destroy", "reset", "clear", "stop", "finish",
    }
)


def _uses_only(method: Optional[str]) -> bool:
    return bool(method) and any(t in _USE_VERBS for t in method.split("_"))


def _stores_by_name(method: Optional[str]) -> bool:
    if not method:
        return True
    return method in _STORE_VERBS or any(t in _STORE_VERBS for t in method.split("_"))


class Aliases:
    """The other attributes of a class that still reference a released attribute's object.
    `method_facts`: the facts of a method body (`collector.MethodFacts`), kept by the rule."""

    def __init__(self, ctx, method_facts) -> None:
        self.ctx = ctx
        self.method_facts = method_facts

    def plain_value(self, cls: cst.ClassDef, attr: str) -> bool:
        """Is `self.attr` only ever a value that holds no other object (a number, text,
        bytes, a path): by its literal, its annotation, the parameter or the function
        it comes from (`self.width = requested_width(r)` with `-> int`)?"""
        seen = False
        for fn in body_functions(cls):
            if attr in self.method_facts(fn).unpacked:
                return False  # `self.a, self.b = make()`: a value not seen here
            for value, ann in self.ctx.heavy.local_assignments(fn).get(f"self.{attr}", ()):
                if value is None or (isinstance(value, cst.Name) and value.value == "None"):
                    continue
                if not (immutable_value(self.ctx, value, fn) or (
                        ann is not None and immutable_annotation(self.ctx, ann.annotation))):
                    return False
                seen = True
        return seen

    def aliases(self, cls: cst.ClassDef, release_fn: cst.FunctionDef, release: Release) -> list[Source]:
        a = release.attr
        if self.plain_value(cls, a):
            return []
        found: dict[str, Source] = {}
        release_names = set(self.ctx.settings.release_methods)
        called_on_a: set[str] = set()
        called_self: set[str] = set()
        for fn in body_functions(cls):
            facts = self.method_facts(fn)
            called_on_a |= facts.called_attrs.get(a, set())
            called_self |= facts.self_called
        for fn in body_functions(cls):
            facts = self.method_facts(fn)
            names = {n for n, attr in facts.name_from_attr if attr == a}
            for attr, value, node in facts.assigns:
                if attr == a or attr in found:
                    continue
                held = self._holds(value, a, names, called_on_a, attr in called_self)
                if held is None:
                    continue
                how, via = held
                if release.kind == "clear" and how != "copy":
                    continue
                if release.kind != "clear" and how == "copy":
                    how = "built"
                if how == "built" and attr.lstrip("_").startswith(SCALAR_ATTRS):
                    continue
                found[attr] = Source(attr, node, fn.name.value, how, via)
            if fn.name.value in release_names:
                continue  # handing it over while releasing is cleanup, not retention
            for attr, exprs, node, method in facts.handed:
                if attr == a or attr in found or method in READ_ONLY_METHODS:
                    continue
                if release.kind == "clear":
                    continue
                for i, expr in enumerate(exprs):
                    held = self._holds(expr, a, names, called_on_a, False)
                    if held is not None and self._handed_keeps(cls, attr, node, method, i):
                        found[attr] = Source(attr, node, fn.name.value, "handed", held[1])
                        break
        return list(found.values())

    def _holds(self, expr, a: str, names: set, called_on_a: set, called: bool):
        """Does evaluating `expr` give something that references `self.a`?
        (how, spelled source) or None."""

        def ref(e) -> Optional[str]:
            if self_attribute(e) == a:
                return f"self.{a}"
            if isinstance(e, cst.Name) and e.value in names:
                return e.value
            return None

        def walk(e, depth: int):
            if depth > 8:
                return None
            direct = ref(e)
            if direct is not None:
                return ("alias", direct) if depth == 0 else ("container", direct)
            if isinstance(e, cst.Attribute):
                base = ref(e.value)
                if base is not None and (
                    e.attr.value in METHOD_NAMES or e.attr.value in called_on_a
                    or (called and depth == 0)
                ):
                    return ("bound", base)
                return None
            if isinstance(e, cst.Call):
                q = self.ctx.qualname(e.func)
                if q in SCALAR_CALLS or scalar_name(q):
                    return None
                if isinstance(e.func, cst.Attribute):
                    if depth == 0 and e.func.attr.value == "copy" and not e.args and ref(e.func.value):
                        return ("copy", ref(e.func.value))
                    root = e.func.value
                    while isinstance(root, (cst.Attribute, cst.Subscript)):
                        if ref(root):
                            return None  # a value computed by its own method
                        root = root.value
                    if ref(root):
                        return None
                for i, arg in enumerate(e.args):
                    inner = walk(arg.value, depth + 1)
                    if inner is None:
                        continue
                    if depth == 0 and q in _COPY_CALLS and i == 0 and inner[0] in ("alias", "container"):
                        return ("copy", inner[1])
                    if arg.star or self._callee_keeps(q, i, arg):
                        return ("built", inner[1])
                return None
            if isinstance(e, (cst.Tuple, cst.List, cst.Set)):
                for element in e.elements:
                    inner = walk(element.value, depth + 1)
                    if inner is not None:
                        return ("container", inner[1])
                return None
            if isinstance(e, cst.Dict):
                for element in e.elements:
                    parts = (
                        (element.key, element.value)
                        if isinstance(element, cst.DictElement)
                        else (element.value,)
                    )
                    for part in parts:
                        inner = walk(part, depth + 1)
                        if inner is not None:
                            return ("container", inner[1])
                return None
            if isinstance(e, cst.IfExp):
                return walk(e.body, depth) or walk(e.orelse, depth)
            if isinstance(e, cst.BooleanOperation):
                return walk(e.left, depth) or walk(e.right, depth)
            if isinstance(e, cst.NamedExpr):
                return walk(e.value, depth)
            return None

        return walk(expr, 0)

    def _callee_keeps(self, qualified: Optional[str], position: int, arg: cst.Arg) -> bool:
        keyword = arg.keyword.value if arg.keyword is not None else None
        absolute = self.ctx.absolute(qualified)
        index = self.ctx.index
        resolved = index.resolve(absolute)
        if resolved not in index.classes and resolved not in index.functions:
            resolved = from_inner_root(index, absolute, self.ctx.module_name)
            if resolved is None:
                return True
        return Escape(index).callee_keeps(resolved, None if keyword else position, keyword)

    def _attribute_classes(self, cls: cst.ClassDef, attr: str) -> set[str]:
        """Project classes `self.attr` is annotated with or built from."""
        found: set[str] = set()
        index = self.ctx.index
        for fn in body_functions(cls):
            for value, ann in self.ctx.heavy.local_assignments(fn).get(f"self.{attr}", ()):
                exprs = []
                if ann is not None:
                    a = ann.annotation
                    if isinstance(a, cst.BinaryOperation):
                        exprs += [a.left, a.right]
                    else:
                        exprs.append(a)
                if isinstance(value, cst.Call):
                    exprs.append(value.func)
                for e in exprs:
                    q = index.resolve(self.ctx.absolute(self.ctx.qualname(e)))
                    if q in index.classes:
                        found.add(q)
        return found

    def _handed_keeps(self, cls, receiver: str, node: cst.CSTNode, method: Optional[str],
                      position: int) -> bool:
        if method is None or not isinstance(node, cst.Call):
            return True  # `self.b.x = ...`, `self.b[k] = ...`
        arg = node.args[position]
        if arg.star:
            return True
        keyword = arg.keyword.value if arg.keyword is not None else None
        if _uses_only(method):
            return False
        candidates = []
        direct = isinstance(node.func, cst.Attribute) and self_attribute(node.func.value) == receiver
        if direct:
            for q in self._attribute_classes(cls, receiver):
                c, seen = self.ctx.index.classes.get(q), 0
                while c is not None and method not in c.methods and seen < 6:
                    seen += 1
                    bases = [self.ctx.index.resolve(b) for b in c.bases]
                    c = next((self.ctx.index.classes[b] for b in bases if b in self.ctx.index.classes), None)
                if c is not None:
                    candidates.append(c.methods[method])
        if not candidates:
            own = f"{self.ctx.module_name}.{cls.name.value}."
            candidates = [  # the receiver is another object: not this class's method
                m for m in methods_named(self.ctx.index, method) if not m.qualname.startswith(own)
            ]
            if not candidates or len(candidates) > 3:
                # Judged by the method's name alone. A sink the caller handed in
                # (`self.buffer = buffer`) keeps what it is given for its owner, on
                # purpose: dropping this object's reference to it would free nothing.
                return _stores_by_name(method) and not (direct and caller_supplied(self.ctx, cls, receiver))
        escape = Escape(self.ctx.index)
        return any(  # what the method returns is judged where it goes (`assigns`)
            escape.keeps(m, None if keyword else position, keyword, True, 0, False) for m in candidates
        )
