"""The release checks' reading of code in source order and of `self` attributes: the statements,
calls and indented blocks of a function as they run (nested functions left out), a move
off the device in place, `self.x` and the attribute a `self.x[...]` chain starts from."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.analysis.walk import children


def ordered(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Everything below `node` in source order, nested functions, classes and lambdas
    left out (they run at another time)."""
    for child in children(node):
        if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        yield child
        yield from ordered(child)


def ordered_calls(node: cst.CSTNode) -> list[cst.Call]:
    return [n for n in (node, *ordered(node)) if isinstance(n, cst.Call)]


def statement_blocks(fn: cst.FunctionDef) -> list[list[cst.CSTNode]]:
    """Every sequence of statements in `fn` (its body, each indented block), nested
    functions left out."""
    blocks = [list(fn.body.body)] if isinstance(fn.body, cst.IndentedBlock) else []
    blocks += [list(n.body) for n in ordered(fn.body) if isinstance(n, cst.IndentedBlock)]
    return blocks


def moves_off_device(call: cst.Call) -> bool:
    """`x.cpu()`, `x.to("cpu")`, `x.to(device="meta")`: storage moved in place."""
    if not isinstance(call.func, cst.Attribute):
        return False
    if call.func.attr.value == "cpu" and not call.args:
        return True
    return call.func.attr.value == "to" and any(
        isinstance(a.value, cst.SimpleString) and a.value.value.strip("\"'") in ("cpu", "meta") for a in call.args)


def is_attr(expr: cst.CSTNode, attr: str) -> bool:
    return isinstance(expr, cst.Attribute) and is_self(expr.value) and expr.attr.value == attr


def self_root(expr: cst.CSTNode) -> Optional[str]:
    """`b` for `self.b`, `self.b.c`, `self.b[0]`."""
    node = expr
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Attribute) and is_self(node.value):
            return node.attr.value
        node = node.value
    return None
