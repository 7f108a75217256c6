"""A stored exception RL611 does not report: one the class raises once its release path has
set a flag (`if self.closed: raise self._failure`), kept on purpose for callers still in flight."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor, body_functions, self_attribute
from retainlint.analysis.walk import visit


def _release_flags(drops) -> dict[str, bool]:
    """Flags the release path sets to a literal (`self.closed = True`): name -> truth."""
    found: dict[str, bool] = {}

    class _Flags(OwnScopeVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            value = node.value
            if isinstance(value, cst.Name) and value.value in ("True", "False"):
                truth = value.value == "True"
            elif isinstance(value, cst.Integer):
                truth = value.evaluated_value != 0
            else:
                return
            for t in node.targets:
                attr = self_attribute(t.target)
                if attr is not None and attr in drops.flags:
                    found[attr] = truth

    for _, fn in drops.methods:
        visit(fn.body, _Flags())
    return found


def _raised_once_released(cls: cst.ClassDef, attr: str, flags: dict[str, bool]) -> bool:
    """Does a method of `cls` raise `self.attr` (`raise self._failure`, `raise X from
    self._failure`) in a branch that runs only once the release path has set its flag
    (`if self.closed:`, `if not self._open: ... else:`)?"""
    if not flags:
        return False

    def flag_test(test) -> Optional[bool]:
        """The truth of `test` once released, when it is one flag (negated or not)."""
        negated = False
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            negated, test = not negated, test.expression
        name = self_attribute(test)
        if name is None or name not in flags:
            return None
        return flags[name] != negated

    def raises_attr(branch) -> bool:
        found = []

        class _Raises(cst.CSTVisitor):
            def visit_Raise(self, node: cst.Raise) -> None:
                for part in (node.exc, node.cause.item if node.cause is not None else None):
                    if part is not None and self_attribute(part) == attr:
                        found.append(node)

        visit(branch, _Raises())
        return bool(found)

    hits = []

    class _Guards(cst.CSTVisitor):
        def visit_If(self, node: cst.If) -> None:
            truth = flag_test(node.test)
            if truth is True and raises_attr(node.body):
                hits.append(node)
            elif truth is False and node.orelse is not None and raises_attr(node.orelse):
                hits.append(node)

    for fn in body_functions(cls):
        visit(fn.body, _Guards())
    return bool(hits)
