"""Is what a function sets up (a hook, a patched method) taken out again on every way out
of it? `_ExitPaths` follows the statements after it through `if`/`try`/loops to the end
of the function, for `undone_on_every_exit` and `hook_removed_on_exit` in
`retainlint.analysis.hooks`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.context import FileContext
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.walk import children


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
