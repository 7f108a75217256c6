"""RL202's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl202_finalize_owner_immortal.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast

from retainlint.project.nodes import FileNodes
from retainlint.project.prefilter import Prefilter
from retainlint.project.ast_facts import Values, finalize_calls, qualify


PARTIAL = frozenset({"functools.partial", "functools.partialmethod"})


def _may_pin(values: Values, call: ast.Call, expr: ast.AST, owner: ast.AST) -> bool:
    """`FinalizeOwnerImmortal._pins` on the ast, coarser: what it reports has one of
    these shapes."""
    shape = ast.dump(owner)
    if ast.dump(expr) == shape:
        return True
    kind = type(expr)
    if kind is ast.Attribute:
        return ast.dump(expr.value) == shape
    if kind is ast.Call:  # a partial, or a wrapper made from something that pins
        return qualify(values.imports, expr.func) in PARTIAL or any(
            ast.dump(a) != shape and _may_pin(values, call, a, owner) for a in expr.args)
    if type(owner) is not ast.Name:
        return False
    if kind is ast.Lambda:
        return any(type(n) is ast.Name and n.id == owner.id for n in ast.walk(expr))
    if kind is ast.Name:
        fn, _ = values.scope(call)
        if fn is None:
            return False
        if values.assigned(fn, expr.id):
            return True
        return any(d.name == expr.id and fn in values.nodes.owners(d)
                   for d in values.nodes.of(ast.FunctionDef, ast.AsyncFunctionDef))
    return False


class FinalizeOwnerImmortalPrefilter(Prefilter):
    code = "RL202"

    triggers = ("finalize",)

    scans = True

    @classmethod
    def scan(cls, nodes: FileNodes) -> bool:
        """Does a `weakref.finalize` call have a callback or argument that may keep the
        owner alive: the owner itself, one of its attributes, a lambda naming it, a
        `functools.partial` or a call made from one of these, or a local of the function that is assigned or defined
        there (when the owner is a name)?"""
        calls = finalize_calls(nodes)
        if not calls:
            return False
        values = Values(nodes)
        for call, positional, keywords in calls:
            owner = positional[0]
            try:
                if any(_may_pin(values, call, arg, owner)
                       for arg in (positional[1], *positional[2:], *keywords)):
                    return True
            except RecursionError:  # `ast.dump` of an absurdly deep expression
                return True
        return False

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        summary = getattr(data, "summary", None)
        if summary is None:
            return b"finalize" in data
        return bool(summary.scans.get(cls.code))
