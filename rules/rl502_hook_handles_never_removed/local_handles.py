"""RL502's reading of handles a function keeps in its own locals: the nodes of its own
code (nested functions left out), the locals it calls `.remove()` on, and whether a
hooked object is rooted in what the caller handed in."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.hook_exprs import target_names


def _removed_names(nodes) -> set[str]:
    """Locals `x` with an `x.remove()` among `nodes`, and lists `xs` of them
    (`for h in xs: h.remove()`)."""
    nodes = list(nodes)
    removed = {n.func.value.value for n in nodes
               if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "remove"
               and not n.args and isinstance(n.func.value, cst.Name)}
    return removed | {n.iter.value for n in nodes if isinstance(n, cst.For) and isinstance(n.iter, cst.Name)
                      and target_names(n.target) & removed}


def _rooted_in(expr: Optional[cst.BaseExpression], params: set[str]) -> bool:
    """`layer`, `model.encoder`, `model.blocks[3]`, `model.modules()` for a parameter
    `layer` / `model`."""
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(expr, cst.Call):
            if not isinstance(expr.func, cst.Attribute):
                return False
            expr = expr.func
        expr = expr.value
    return isinstance(expr, cst.Name) and expr.value in params
