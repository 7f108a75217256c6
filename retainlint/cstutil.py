"""Small CST helpers shared by rules and their fixes."""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

import libcst as cst

from retainlint.context import FileContext, body_statements


def call_args(call: cst.Call) -> tuple[list[cst.Arg], dict[str, cst.Arg]]:
    """Positional and keyword arguments (starred ones count as neither)."""
    positional, keywords = [], {}
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is not None:
            keywords[arg.keyword.value] = arg
        else:
            positional.append(arg)
    return positional, keywords


def is_self(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "self"


def self_attribute(node: cst.CSTNode) -> Optional[str]:
    """`x` for `self.x`."""
    if isinstance(node, cst.Attribute) and is_self(node.value):
        return node.attr.value
    return None


def decorator_names(ctx: FileContext, fn: cst.FunctionDef) -> set[str]:
    names = set()
    for d in fn.decorators:
        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        q = ctx.qualname(target)
        if q:
            names.add(q)
    return names


def is_instance_method(ctx: FileContext, fn: cst.FunctionDef) -> bool:
    names = decorator_names(ctx, fn)
    if names & {"staticmethod", "classmethod", "builtins.staticmethod", "builtins.classmethod"}:
        return False
    params = fn.params.posonly_params or fn.params.params
    return bool(params) and params[0].name.value == "self"


def _with_body(fn: cst.FunctionDef, body: Sequence[cst.BaseStatement]) -> cst.FunctionDef:
    if isinstance(fn.body, cst.IndentedBlock):
        return fn.with_changes(body=fn.body.with_changes(body=body))
    return fn.with_changes(body=cst.IndentedBlock(body=body))


def _statements(fn: cst.FunctionDef) -> list[cst.BaseStatement]:
    if isinstance(fn.body, cst.IndentedBlock):
        return list(fn.body.body)
    # `def f(): pass` on one line
    return [cst.SimpleStatementLine(body=list(fn.body.body))]


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_pass(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Pass) for s in stmt.body
    )


def append_to_function(fn: cst.FunctionDef, new: Iterable[cst.BaseStatement]) -> cst.FunctionDef:
    """Add statements at the end of a function body (before a final bare `return`);
    a body that is only `pass` (or `...`) is replaced."""
    body = _statements(fn)
    body = [s for s in body if not _is_pass(s)] or []
    tail: list[cst.BaseStatement] = []
    if body and isinstance(body[-1], cst.SimpleStatementLine) and isinstance(
        body[-1].body[-1], cst.Return
    ) and body[-1].body[-1].value is None:
        tail = [body.pop()]
    return _with_body(fn, [*body, *new, *tail])


def prepend_to_function(fn: cst.FunctionDef, new: Iterable[cst.BaseStatement]) -> cst.FunctionDef:
    """Add statements at the start of a function body, after its docstring."""
    body = _statements(fn)
    head = [body.pop(0)] if body and _is_docstring(body[0]) else []
    return _with_body(fn, [*head, *new, *body])


def unique_self_attribute(ctx: FileContext, cls: cst.ClassDef, wanted: str) -> str:
    text = ctx.code(cls)
    name, n = wanted, 2
    while f"self.{name}" in text or f"{name} =" in text:
        name = f"{wanted}_{n}"
        n += 1
    return name


def in_body_of(stmt: Optional[cst.CSTNode], fn: cst.FunctionDef) -> bool:
    """Is `stmt` a statement directly in `fn`'s body (not nested in if/for/try)?"""
    return stmt is not None and any(s is stmt for s in body_statements(fn))


def module_ref(ctx: FileContext, module: str) -> tuple[str, tuple[str, ...]]:
    """How to spell `module` in a fix, and the imports the fix must add for it."""
    local = ctx.local_module_alias(module)
    if local is not None:
        return local, ()
    return module, (module,)
