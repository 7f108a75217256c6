"""What a registered callback keeps alive: the instance (a bound method, a lambda or
closure over `self`, `partial(f, self)`), or a bound method of another heavy object."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import decorator_names, is_self
from retainlint.analysis.walk import visit
from retainlint.rules.rl203_global_callback_pins_instance.classes import ClassLookup
from retainlint.rules.rl203_global_callback_pins_instance.facts import FileFacts

_PARTIALS = frozenset({"functools.partial", "functools.partialmethod"})
_STATIC = frozenset({"staticmethod", "builtins.staticmethod", "classmethod", "builtins.classmethod"})
_PROPERTIES = frozenset({"property", "builtins.property", "functools.cached_property"})


class Pins:
    """How a callback registered in a method of a class holds the instance, or another
    heavy object."""

    def __init__(self, ctx, classes: ClassLookup, facts: FileFacts) -> None:
        self.ctx = ctx
        self.classes = classes
        self.facts = facts

    def pins_self(self, expr, fn, cls, depth: int) -> Optional[str]:
        """A description of how `expr` holds the instance, or None."""
        if depth > 3:
            return None
        code = self.ctx.code
        if isinstance(expr, cst.Name):
            if expr.value == "self":
                return "the instance itself"
            nested = _nested_function(fn, expr.value)
            if nested is not None and _mentions_self(nested.body):
                return f"the closure `{expr.value}` (it uses `self`)"
            for value, _ in self.ctx.heavy.local_assignments(fn).get(expr.value, ()):
                if value is not None and self.pins_self(value, fn, cls, depth + 1):
                    return f"`{expr.value}` (built from `self`)"
            return None
        if isinstance(expr, cst.Attribute) and is_self(expr.value):
            if self.bound_method(cls, expr.attr.value, depth):
                return f"the bound method `{code(expr)}`"
            return None
        if isinstance(expr, cst.Lambda):
            return "a lambda using `self`" if _mentions_self(expr.body) else None
        if isinstance(expr, cst.Call):
            if self.ctx.qualname(expr.func) in _PARTIALS:
                if any(self.pins_self(a.value, fn, cls, depth + 1) for a in expr.args):
                    return f"`{code(expr.func)}(...)` over `self`"
                return None
            func = expr.func
            if isinstance(func, cst.Attribute) and is_self(func.value):
                method = self.classes.method(cls, func.attr.value)
                if method is not None and _returns_closure_over_self(method):
                    return f"the closure returned by `{code(func)}()` (it uses `self`)"
        return None

    def bound_method(self, cls: cst.ClassDef, attr: str, depth: int) -> bool:
        """Is `self.<attr>` a bound method of the instance (or an attribute holding one)?"""
        method = self.classes.method(cls, attr)
        if method is not None:
            decorators = decorator_names(self.ctx, method)
            return not (decorators & _STATIC or decorators & _PROPERTIES)
        assigned = False
        for m in self.classes.class_chain_methods(cls):
            for value, _ in self.ctx.heavy.local_assignments(m).get(f"self.{attr}", ()):
                assigned = True
                if value is not None and self.pins_self(value, m, cls, depth + 1):
                    return True
        if assigned or self.classes.class_level(cls, attr):
            return False
        # not defined in this file: a method of a base class in another file?
        return self.inherited_method(cls, attr)

    def inherited_method(self, cls: cst.ClassDef, attr: str) -> bool:
        """Through the project index: a method of a base class in another file; for bases
        outside the project (or unknown), assume it is one."""
        index = self.ctx.index
        pending = [self.ctx.qualname(b.value) for c in self.classes.class_chain(cls) for b in c.bases
                   if not (isinstance(b.value, cst.Name) and b.value.value in self.ctx.classes)]
        pending = [q for q in pending if q and q not in ("object", "builtins.object")]
        seen: set[str] = set()
        while pending:
            qualified = index.resolve(pending.pop(0))
            if not qualified or qualified in seen:
                continue
            seen.add(qualified)
            summary = index.classes.get(qualified)
            if summary is None:
                return True  # outside the project: `nn.Module`, `threading.Thread`, ...
            method = summary.methods.get(attr)
            if method is not None:
                return not any(d in _STATIC or d in _PROPERTIES for d in method.decorators)
            pending.extend(summary.bases)
        return False

    def pins_heavy_other(self, expr, fn, cls) -> Optional[str]:
        """`x.method` (a bound method of another object) where `x` is heavy."""
        if not isinstance(expr, cst.Attribute):
            return None
        owner = expr.value
        if isinstance(owner, cst.Name) and (owner.value == "self" or owner.value in self.ctx.classes):
            return None
        if not self.local_or_self(owner, fn):
            return None  # an imported module or class (`shutil.rmtree`), a module global
        if self.ctx.heavy.is_heavy_value(owner, fn, cls):
            return f"the bound method `{self.ctx.code(expr)}` of a heavy object"
        return None

    def local_or_self(self, owner, fn) -> bool:
        root = owner
        while isinstance(root, cst.Attribute):
            root = root.value
        return isinstance(root, cst.Name) and (root.value == "self" or self.facts.local(root.value, fn))


def _mentions_self(node: cst.CSTNode) -> bool:
    found = False

    class _Finder(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            nonlocal found
            if name.value == "self":
                found = True

    visit(node, _Finder())
    return found


def _nested_function(fn: cst.FunctionDef, name: str) -> Optional[cst.FunctionDef]:
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            return stmt
    return None


def _returns_closure_over_self(method: cst.FunctionDef) -> bool:
    """`def make_handler(self): def handler(...): self.x(); return handler`."""
    body = method.body.body if isinstance(method.body, cst.IndentedBlock) else ()
    nested = {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Return) and small.value is not None:
                    value = small.value
                    if isinstance(value, cst.Lambda) and _mentions_self(value.body):
                        return True
                    if isinstance(value, cst.Name) and value.value in nested and _mentions_self(nested[value.value].body):
                        return True
    return False
