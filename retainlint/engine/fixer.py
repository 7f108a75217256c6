"""Apply fixes as CST edits: non-overlapping ones together, the rest in the next round."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Sequence, Union

import libcst as cst
from libcst.metadata import CodeRange

from retainlint.core.finding import Fix, Position
from retainlint.analysis.imports import collect_module_imports
from retainlint.engine.positions import ranges_of

if TYPE_CHECKING:
    from retainlint.core.finding import Replacement

MAX_ROUNDS = 10


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: dict[cst.CSTNode, Replacement]) -> None:
        self.replacements = replacements

    def on_leave(self, original_node: cst.CSTNodeT, updated_node: cst.CSTNodeT
                 ) -> Union[cst.CSTNodeT, cst.RemovalSentinel, cst.FlattenSentinel[cst.CSTNodeT]]:
        # libcst's annotation has a node replaced by one of its own type; a fix may put
        # another kind of node in its place (a call for a name), which libcst accepts
        # wherever the parent's field does, and checks at run time.
        return self.replacements.get(original_node, updated_node)  # type: ignore[return-value]


def _overlaps(a: CodeRange, b: CodeRange) -> bool:
    return (a.start.line, a.start.column) < (b.end.line, b.end.column) and (
        b.start.line, b.start.column) < (a.end.line, a.end.column)


def apply(module: cst.Module, fixes: Sequence[Fix]) -> tuple[cst.Module, list[Fix]]:
    """Apply every fix that does not overlap one applied before it."""
    positions = ranges_of(module, [node for fix in fixes for node in fix.replacements])
    taken: list[CodeRange] = []
    merged: dict[cst.CSTNode, Replacement] = {}
    imports: set[str] = set()
    applied: list[Fix] = []
    for fix in fixes:
        ranges = [positions[node] for node in fix.replacements]
        if any(_overlaps(r, t) for r in ranges for t in taken):
            continue
        taken.extend(ranges)
        merged.update(fix.replacements)
        imports.update(fix.imports)
        applied.append(fix)
    if not applied:
        return module, []
    new = module.visit(_Replace(merged))
    return add_imports(new, imports), applied


def add_imports(module: cst.Module, modules: set[str]) -> cst.Module:
    bound = collect_module_imports(module).names
    missing = sorted(m for m in modules if bound.get(m) != m)
    if not missing:
        return module
    # Imported here: libcst.codemod pulls in libcst.matchers, most of a second of start-up.
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    context = CodemodContext()
    for name in missing:
        AddImportsVisitor.add_needed_import(context, name)
    return AddImportsVisitor(context).transform_module(module)


def edits_of(module: cst.Module, fix: Fix) -> list[tuple[Position, Position, str]]:
    """The fix as line edits (for JSON and SARIF): what replaces which lines."""
    new_module, applied = apply(module, [fix])
    if not applied:
        return []
    old = module.code.splitlines(keepends=True)
    new = new_module.code.splitlines(keepends=True)
    edits: list[tuple[Position, Position, str]] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            edits.append((Position(i1 + 1, 1), Position(i2 + 1, 1), "".join(new[j1:j2])))
    return edits
