"""RL616's stores behind a release inherited that only marks the object closed: attributes
holding an instance of a project class whose methods fill a container of theirs with what
they are handed, and the attributes reached by callbacks the object hands on for itself."""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor, is_self
from retainlint.analysis.walk import visit
from retainlint.analysis.owned_parts import _MAX_DEPTH
from retainlint.analysis.part_freeing import _attributes_called, _handed_methods
from retainlint.analysis.owned_parts import _built_parts


def _reached_by_callbacks(ctx, cls: cst.ClassDef) -> Optional[set[str]]:
    """Attributes that the methods `cls` or a project base hands on as callbacks
    (`self.m` passed, not called) drop, release or call a method of, following the
    methods they call on `self` (overrides included); None when one cannot be read
    or drops what cannot be named."""
    release = ctx.release
    owners, pending, seen = [], [cls], 0
    while pending and seen < _MAX_DEPTH:
        owner = pending.pop()
        seen += 1
        owners.append(owner)
        pending.extend(release.bases(owner))
    handed: set[str] = set()
    for owner in owners:
        if isinstance(owner, cst.ClassDef):
            handed |= _handed_methods(owner)
        else:
            for name in owner.methods:
                fn = release.method(owner, name)
                if fn is not None:
                    handed |= _handed_methods(fn)
    reached: set[str] = set()
    for name in sorted(handed):
        found = release.lookup(cls, name)
        if found is None:
            continue  # not a method: an attribute handed over
        if found[1] is None:
            return None
        path = release.drops(cls, [found[1]])
        if path is None:
            return None
        reached |= path.all
        for _, fn in path.methods:
            reached |= _attributes_called(fn)
    return reached


def _stores(ctx, cls: cst.ClassDef, methods) -> dict[str, str]:
    """Attributes `cls` assigns an instance of a project store class, built directly
    or by a method of `cls` that returns one: attribute -> the class's name."""
    found: dict[str, str] = {}
    for attr, call in _built_parts(ctx, cls).items():
        for target in _built_classes(ctx, call, methods):
            if _fills_container(ctx.index, target):
                found[attr] = target.rsplit(".", 1)[1]
                break
    return found


def _built_classes(ctx, call: cst.Call, methods) -> list[str]:
    """Project classes `call` builds: `Store(...)`, or `self.make(...)` whose
    `return` statements build one."""
    calls = [call]
    if isinstance(call.func, cst.Attribute) and is_self(call.func.value) \
            and call.func.attr.value in methods:
        fn = methods[call.func.attr.value]
        calls = [n.value for n in _returns(fn) if isinstance(n.value, cst.Call)]
    index = ctx.index
    found = []
    for c in calls:
        q = ctx.qualname(c.func)
        resolved = index.resolve(ctx.absolute(q)) or q if q else None
        if resolved in index.classes:
            found.append(resolved)
    return found


def _returns(fn: cst.FunctionDef) -> list[cst.Return]:
    found: list[cst.Return] = []

    class _Returns(OwnScopeVisitor):
        def visit_Return(self, node: cst.Return) -> None:
            found.append(node)

    visit(fn.body, _Returns())
    return found


def _fills_container(index, qualified: str) -> bool:
    """Does a method of the project class `qualified` (not `__init__`) put an object it is
    handed, as it is, into a container of the instance: `self.c[name] = entry`,
    `self.c.append(item)` (`entry`, `item` parameters; `self.c` assigned in a method, not
    a class-level memo)? A value derived from what is handed (`self.sizes[p.numel()] =
    groups`) is a bounded memo, not a store."""
    info = index.classes.get(qualified)
    if info is None:
        return False
    parsed = index.tree(info.path)
    if parsed is None:
        return False
    node = next((n for n in ast.walk(parsed) if isinstance(n, ast.ClassDef) and n.lineno == info.line), None)
    if node is None:
        return False
    functions = [fn for fn in node.body if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))]
    instance = {t.attr for fn in functions for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if _own_attribute(t)}
    for fn in functions:
        if fn.name == "__init__":
            continue
        params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs][1:]}

        def handed(expr) -> bool:
            return isinstance(expr, ast.Name) and expr.id in params

        def container(expr) -> bool:
            return _own_attribute(expr) and expr.attr in instance

        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and handed(n.value) and any(
                    isinstance(t, ast.Subscript) and container(t.value) for t in n.targets):
                return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _FILLS \
                    and container(n.func.value) and any(handed(a) for a in n.args):
                return True
    return False


_FILLS = frozenset({"append", "add", "setdefault", "insert"})


def _own_attribute(expr) -> bool:
    return isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self"
