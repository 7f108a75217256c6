"""What a `del` in cleanup code unbinds and means (RL604, RL607): the plain names deleted, a
parameter (`*args` included), the statement that runs next, a docstring, a local that
keeps the object, and a deletion that breaks an exception's traceback cycle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.heavy import find_param
from retainlint.analysis.statement_order import ordered


def is_parameter(fn: cst.FunctionDef, name: str) -> bool:
    """A parameter of `fn`, `*args` included."""
    star = fn.params.star_arg
    return find_param(fn, name) is not None or (isinstance(star, cst.Param) and star.name.value == name)


def breaks_traceback_cycle(fn: cst.FunctionDef, node: cst.Del) -> bool:
    """Is the `del` in an `except ... as e:` handler of `fn` that hands `e` on (stores it,
    sets it on a future, queues it)? The exception's traceback references this frame,
    whose locals reference the holder of the exception: unbinding them cuts that cycle,
    so the `del` frees what the cyclic collector would otherwise have to."""
    for handler in ordered(fn.body):
        if not isinstance(handler, cst.ExceptHandler) or handler.name is None:
            continue
        if not isinstance(handler.name.name, cst.Name):
            continue
        if not any(n is node for n in ordered(handler.body)):
            continue
        error = handler.name.name.value
        if any(isinstance(n, cst.Name) and n.value == error for n in ordered(handler.body)):
            return True
    return False


def kept_under_alias(fn: cst.FunctionDef, node: cst.Del, name: str) -> bool:
    """Does `fn` bind a local to the parameter `name` itself (`env = factory`, an arm of a
    conditional) before the `del`, and read that local after it?"""
    aliases: set[str] = set()
    passed = False
    for n in ordered(fn.body):
        if n is node:
            passed = True
        elif not passed and isinstance(n, cst.Assign) and _evaluates_to(n.value, name):
            aliases |= {t.target.value for t in n.targets if isinstance(t.target, cst.Name)}
        elif passed and isinstance(n, cst.Name) and n.value in aliases:
            return True
    return False


def _evaluates_to(expr: cst.CSTNode, name: str) -> bool:
    if isinstance(expr, cst.Name):
        return expr.value == name
    if isinstance(expr, cst.IfExp):
        return _evaluates_to(expr.body, name) or _evaluates_to(expr.orelse, name)
    if isinstance(expr, cst.BooleanOperation):
        return _evaluates_to(expr.left, name) or _evaluates_to(expr.right, name)
    return False


def bare_names(target: cst.CSTNode) -> list[cst.Name]:
    """`a` and `b` in `del a, (b, c.d)` - plain names only, not attribute targets."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in bare_names(e.value)]
    return []


def after(small: cst.CSTNode, line: cst.SimpleStatementLine, rest: list) -> Optional[cst.CSTNode]:
    """What runs right after `small`, a statement of `line`: the next one on the line
    (`del x; gc.collect()`), else the first of the statements `rest` that follow."""
    position = next(i for i, s in enumerate(line.body) if s is small)
    if position + 1 < len(line.body):
        return line.body[position + 1]
    return rest[0] if rest else None


def is_docstring(stmt) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


@dataclass(frozen=True)
class Deleted:
    """One `del` that only unbinds a function's own name: `over`, the parameter a deleted
    loop variable iterates (RL607). A rule gathers them per function (by `id`) and reports
    the function once: the fix is one, at the caller (torchtune's `cleanup_after_step()`
    deletes six parameters, each of which the caller still holds)."""
    node: cst.Del
    statement: cst.CSTNode
    name: str
    heavy: bool = False
    over: str = ""


def listed(names: list[str]) -> str:
    """`a`, `b` and `c`: each name once, in the order deleted."""
    quoted = [f"`{n}`" for n in dict.fromkeys(names)]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
