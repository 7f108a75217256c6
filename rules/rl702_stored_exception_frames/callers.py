"""Callers in the file that keep a function's result on an object or in a global: what
makes a returned container holding the exception outlive the call."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.rules.prefilters.rl702 import ADDERS
from retainlint.rules.rl702_stored_exception_frames.names import _module_binds


class _KeptResults(cst.CSTVisitor):
    """Which of `names` (functions or methods of the file) have a call whose result is
    stored on an object (`self.x = f()`, `self.results.append(self.f())`) or in a
    module-level name."""

    def __init__(self, ctx, names: set) -> None:
        self.ctx = ctx
        self.names = names
        self.kept: dict[str, cst.CSTNode] = {}
        self.depth = 0  # function nesting

    def visit_FunctionDef(self, node) -> None:
        self.depth += 1

    def leave_FunctionDef(self, node) -> None:
        self.depth -= 1

    def _called(self, value) -> Optional[str]:
        if isinstance(value, cst.Await):
            value = value.expression
        if isinstance(value, cst.Call):
            func = value.func
            name = func.value if isinstance(func, cst.Name) else (
                func.attr.value if isinstance(func, cst.Attribute) else None)
            return name if name in self.names else None
        if isinstance(value, (cst.Tuple, cst.List)):
            for e in value.elements:
                found = self._called(e.value)
                if found:
                    return found
        return None

    def _outlives(self, target) -> bool:
        if isinstance(target, cst.Name):
            return self.depth == 0
        root = target
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        return isinstance(root, cst.Name) and (
            root.value in ("self", "cls") or root.value in self.ctx.classes
            or (self.depth > 0 and _module_binds(self.ctx.module, root.value))
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        name = self._called(node.value)
        if name and any(self._outlives(t.target) for t in node.targets):
            self.kept.setdefault(name, node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ADDERS:
            for arg in node.args:
                name = self._called(arg.value)
                if name and self._outlives(func.value):
                    self.kept.setdefault(name, node)
