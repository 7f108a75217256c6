"""A fast read-only CST traversal.

libcst's own `node.visit(visitor)` rebuilds every node on the way back up (validation
included), which costs several times the parse on real code. Read-only analysis does
not need that: this walks node fields directly, skipping whitespace and punctuation,
and drives any `libcst.CSTVisitor` (its `visit_<Node>` / `leave_<Node>` methods; a
`visit_*` returning False prunes the subtree). Children come in dataclass field order,
which is not always source order."""

from __future__ import annotations

import dataclasses

import libcst as cst

# Fields that only hold whitespace, punctuation and operators: never worth a visit.
_SKIPPED_FIELDS = ("whitespace", "lpar", "rpar", "lbrace", "rbrace", "lbracket", "rbracket",
                   "comma", "leading_lines", "semicolon", "colon", "first_colon", "second_colon",
                   "header", "footer", "lines_after_decorators", "equal", "dot", "operator",
                   "trailing_whitespace", "default_indent", "default_newline", "encoding")
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(node_type: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(node_type)
    if names is None:
        names = _CHILD_FIELDS[node_type] = tuple(
            f.name for f in dataclasses.fields(node_type)
            if not f.name.startswith(_SKIPPED_FIELDS)
        )
    return names


_IS_NODE: dict[type, bool] = {}


def is_node(value) -> bool:
    """isinstance(value, CSTNode) without the ABC machinery (a hot path)."""
    t = type(value)
    known = _IS_NODE.get(t)
    if known is None:
        known = _IS_NODE[t] = isinstance(value, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    found = []
    for name in _CHILD_FIELDS.get(type(node)) or child_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            found.extend(value)  # libcst's sequence fields hold nodes only
        elif _IS_NODE.get(kind) or is_node(value):
            found.append(value)
    return found


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """`node.visit(visitor)` for read-only visitors, without rebuilding the tree."""
    if visitor.on_visit(node) is not False:
        for child in children(node):
            visit(child, visitor)
    visitor.on_leave(node)
