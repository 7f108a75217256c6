"""What a release leaves behind: after its own release method has run, does an instance
hold anything the project built for it, or only plain values and closed handles?

A registry that keeps an instance past its release (an exit handler, a signal handler)
costs what the release leaves: nothing that matters when the release let go of every
object the project built for the instance - a manager, a backend, a component - and what
stays is its arguments, numbers, flags and the library handles it closed. (RL203.)"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor, body_functions, is_self, self_attribute
from retainlint.analysis.release import is_release_method
from retainlint.analysis.walk import visit
from retainlint.analysis.weight import sources

if TYPE_CHECKING:
    from retainlint.analysis.context import FileContext

# Return annotations of plain values: what such a function returns is no built object.
_PLAIN_RETURNS = frozenset({"int", "float", "str", "bool", "bytes", "None", "Optional", "Union"})


class _Stores(OwnScopeVisitor):
    """Every (target, value) one function assigns, tuple targets taken apart: `a, b = f()`
    gives both `a` and `b` the call."""

    def __init__(self) -> None:
        self.found: list[tuple[str, cst.BaseExpression]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._store(t.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node.target, node.value)

    def _store(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            pairs = isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements)
            for i, element in enumerate(target.elements):
                self._store(element.value, value.elements[i].value if pairs else value)  # type: ignore[union-attr]
            return
        attr = self_attribute(target)
        if attr is not None:
            self.found.append((f"self.{attr}", value))
        elif isinstance(target, cst.Name):
            self.found.append((target.value, value))


def _plain_annotation(annotation: Optional[cst.Annotation]) -> bool:
    """Is it a plain value's annotation (`int`, `-> Optional[str]`)?"""
    if annotation is None:
        return False
    names = [n.value for n in _names(annotation.annotation)]
    return bool(names) and all(n in _PLAIN_RETURNS for n in names)


def _names(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name):
            found.append(current)
        elif isinstance(current, cst.Attribute):
            found.append(current.attr)
        else:
            pending.extend(current.children)
    return found


def _project_callee(ctx: FileContext, cls: cst.ClassDef, func: cst.BaseExpression) -> Optional[object]:
    """What a call runs when the project defines it: the class (`True`), the function or
    method (its libcst tree); `False` for a library callable; None when it is the
    project's but unreadable."""
    if isinstance(func, cst.Attribute) and (is_self(func.value) or (
            isinstance(func.value, cst.Name) and func.value.value in ("cls", cls.name.value))):
        return ctx.methods(cls).get(func.attr.value)  # a base class's: unread, so unknown
    index = ctx.index
    resolved = index.resolve(ctx.absolute(ctx.qualname(func)))
    if not resolved:
        return False
    if index.classes.get(resolved) is not None:
        return True
    summary = index.functions.get(resolved)
    if summary is not None:
        return sources(index).function(summary.path, summary.line)
    # named from the project's own top package but not found (a folder without
    # `__init__.py` gives its modules shorter names): the project's, unread
    return None if _own_package(ctx, resolved) else False


def _own_package(ctx: FileContext, qualified: str) -> bool:
    """Does `qualified` start with the top package of the file being checked?"""
    parts = Path(ctx.path).resolve().parts
    head = qualified.partition(".")[0]
    return bool(head) and head in parts[:-1]


def _built(ctx: FileContext, cls: cst.ClassDef, value: cst.BaseExpression, stores: list,
           params: dict, depth: int = 0) -> bool:
    """Is `value` an object the project built: an instance of one of its classes, what one
    of its functions returns (unless annotated as a plain value), an argument not annotated
    as a plain value, or a local holding one? Literals and what library calls make (a
    thread, a queue, a socket: the release closes them) are not."""
    if depth > 4:
        return False
    if isinstance(value, cst.Call):
        callee = _project_callee(ctx, cls, value.func)
        if callee is True or callee is None:
            return True
        return isinstance(callee, cst.FunctionDef) and not _plain_annotation(callee.returns)
    if isinstance(value, cst.Name):
        if value.value in params:
            # what the caller handed in - a server, a client - is kept unless it is a plain value
            return not _plain_annotation(params[value.value])
        return any(_built(ctx, cls, v, stores, params, depth + 1) for k, v in stores if k == value.value)
    return False


def leaves_a_shell(ctx: FileContext, cls: cst.ClassDef, method: str) -> bool:
    """Does the release method `method` of `cls` leave the instance a closed shell: is
    every attribute the class sets to an object the project built dropped or released
    on the method's path? False when the path drops what we cannot name."""
    fn = ctx.methods(cls).get(method)
    if fn is None or not is_release_method(ctx, fn):
        return False
    drops = ctx.release.drops(cls, [fn])
    if drops is None:
        return False
    for member in body_functions(cls):
        collector = _Stores()
        visit(member.body, collector)
        p = member.params
        params = {q.name.value: q.annotation for q in (*p.posonly_params, *p.params, *p.kwonly_params)}
        for key, value in collector.found:
            if key.startswith("self.") and key[5:] not in drops.objects \
                    and _built(ctx, cls, value, collector.found, params):
                return False
    return True
