"""How a block ends (`raise`, `return`, `continue`, `break`) and what rebinds a local in
it: the control flow that the serving-loop check and the `isinstance` narrowing read."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor
from retainlint.rules.rl702_stored_exception_frames.names import _target_names


class _Leaves(OwnScopeVisitor):
    """A `return`, or a `break` not inside an inner loop."""

    def __init__(self) -> None:
        self.found = False
        self._loops = 0

    def visit_For(self, node) -> None:
        self._loops += 1

    def leave_For(self, node) -> None:
        self._loops -= 1

    def visit_While(self, node) -> None:
        self._loops += 1

    def leave_While(self, node) -> None:
        self._loops -= 1

    def visit_Return(self, node) -> None:
        self.found = True

    def visit_Break(self, node) -> None:
        if not self._loops:
            self.found = True


class _Rebinds(OwnScopeVisitor):
    """Is `name` assigned (but by `assignment`), deleted or a loop target?"""

    def __init__(self, name: str, assignment: cst.CSTNode) -> None:
        self.name = name
        self.assignment = assignment
        self.found = False

    def visit_Assign(self, node: cst.Assign) -> bool:
        return node is not self.assignment

    def _check(self, target) -> None:
        if self.name in _target_names(target):
            self.found = True

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._check(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._check(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._check(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._check(node.target)


def _leaves_loop(block) -> bool:
    """Does the block (a handler directly in a loop) end by leaving that loop: `raise`,
    `return` or `break`, not `continue`?"""
    return _terminates(block) and not isinstance(_last_small(block), cst.Continue)


def _last_small(block) -> Optional[cst.BaseSmallStatement]:
    if isinstance(block, cst.IndentedBlock) and block.body and isinstance(block.body[-1], cst.SimpleStatementLine):
        return block.body[-1].body[-1] if block.body[-1].body else None
    if isinstance(block, cst.SimpleStatementSuite) and block.body:
        return block.body[-1]
    return None


def _terminates(block) -> bool:
    """Does the block end in `raise`, `return`, `continue` or `break`?"""
    if isinstance(block, cst.Else):
        block = block.body
    if isinstance(block, cst.IndentedBlock):
        if not block.body:
            return False
        last = block.body[-1]
        if not isinstance(last, cst.SimpleStatementLine):
            return False
        small = last.body
    elif isinstance(block, cst.SimpleStatementSuite):
        small = block.body
    else:
        return False
    return bool(small) and isinstance(small[-1], (cst.Raise, cst.Return, cst.Continue, cst.Break))
