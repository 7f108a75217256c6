"""Locals of a handler bound to `sys.exc_info()` (or `sys.exception()`): which part of it
a value is, and which names hold the exception or its traceback."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor
from retainlint.analysis.holding import ctx_code


def _exc_info_parts(ctx, value: cst.BaseExpression) -> set:
    """Which parts of `sys.exc_info()` (0 type, 1 exception, 2 traceback) `value` is."""
    if isinstance(value, cst.Call):
        name = ctx.qualname(value.func)
        return {0, 1, 2} if name == "sys.exc_info" else {1} if name == "sys.exception" else set()
    if isinstance(value, cst.Subscript) and len(value.slice) == 1 and isinstance(value.value, cst.Call) \
            and ctx.qualname(value.value.func) == "sys.exc_info":
        index = value.slice[0].slice
        if isinstance(index, cst.Index):
            text = ctx_code(ctx, index.value).replace(" ", "")
            position = {"0": 0, "1": 1, "2": 2, "-1": 2, "-2": 1, "-3": 0}.get(text)
            return {position} if position is not None else {0, 1, 2}
    return set()


class _ExcInfoBindings(OwnScopeVisitor):
    """Locals bound to the exception or traceback part of `sys.exc_info()` (or to
    `sys.exception()`): (statement, assignment, names, the call as the message names it)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.bound: list[tuple] = []
        self._line: Optional[cst.CSTNode] = None

    def visit_SimpleStatementLine(self, node) -> None:
        self._line = node

    def visit_Assign(self, node: cst.Assign) -> None:
        parts = _exc_info_parts(self.ctx, node.value)
        if not parts & {1, 2}:
            return
        names = []
        for t in node.targets:
            target = t.target
            if isinstance(target, cst.Name):
                names.append(target.value)
            elif isinstance(target, (cst.Tuple, cst.List)) and parts == {0, 1, 2} and len(target.elements) == 3:
                names.extend(e.value.value for i, e in enumerate(target.elements)
                             if i and isinstance(e.value, cst.Name))
        if names:
            call = "sys.exception()" if parts == {1} and isinstance(node.value, cst.Call) else "sys.exc_info()"
            self.bound.append((self._line, node, names, call))
