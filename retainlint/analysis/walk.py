"""A fast read-only CST traversal.

libcst's own `node.visit(visitor)` rebuilds every node on the way back up (validation
included), which costs several times the parse on real code. Read-only analysis does
not need that: this walks node fields directly, skipping whitespace and punctuation,
and drives any `libcst.CSTVisitor` through its `visit_<Node>` / `leave_<Node>` methods
(a `visit_*` returning False prunes the subtree; `on_visit`/`on_leave` are not used).
Children come in dataclass field order, which is not always source order."""

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
    _visit(node, visitor, _handlers(type(visitor)))


# visitor class -> node type -> (its visit_<Node>, its leave_<Node>): libcst's
# `on_visit` looks the method up by name at every node. Only classes of a module's top
# level are kept: a class defined in a function is a new class at each call, and its
# methods' closures hold what that call was given (a file's context and tree).
_HANDLERS: dict[type, dict[type, tuple]] = {}


def _handlers(visitor_type: type) -> dict[type, tuple]:
    table = _HANDLERS.get(visitor_type)
    if table is None:
        if (visitor_type.on_visit is not cst.CSTVisitor.on_visit
                or visitor_type.on_leave is not cst.CSTVisitor.on_leave):
            raise TypeError(f"{visitor_type.__name__}: write visit_<Node>/leave_<Node> methods")
        table = {}
        if "<locals>" not in visitor_type.__qualname__:
            _HANDLERS[visitor_type] = table
    return table


def _visit(node: cst.CSTNode, visitor: cst.CSTVisitor, table: dict[type, tuple]) -> None:
    kind = type(node)
    methods = table.get(kind)
    if methods is None:
        cls, name = type(visitor), kind.__name__
        methods = table[kind] = (getattr(cls, f"visit_{name}", None),
                                 getattr(cls, f"leave_{name}", None))
    enter, leave = methods
    if enter is None or enter(visitor, node) is not False:
        for child in children(node):
            _visit(child, visitor, table)
    if leave is not None:
        leave(visitor, node)
