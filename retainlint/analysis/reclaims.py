"""Calls that reclaim memory (`gc.collect()`, `torch.cuda.empty_cache()`, a project's
`free_memory()`): a deletion right before one, or a cleanup that calls one, shows that
something was expected to be freed there (RL604, RL607, RL608, RL609)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.project.release_scan import RECLAIM_CALLS, RECLAIM_NAMES

if TYPE_CHECKING:
    from retainlint.analysis.context import FileContext


def reclaims(ctx: "FileContext", call: cst.Call) -> bool:
    q = ctx.qualname(call.func)
    if q in RECLAIM_CALLS:
        return True
    return (q or "").rsplit(".", 1)[-1] in RECLAIM_NAMES


def reclaims_in(ctx: "FileContext", node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Call) and reclaims(ctx, n) for n in iter_nodes(node))
