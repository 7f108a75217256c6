"""Import probes, whose frames are import machinery: a `try` of only imports, a handler
for `ImportError` / `ModuleNotFoundError` alone."""

from __future__ import annotations

import libcst as cst

_IMPORT_ERRORS = frozenset(
    {"ImportError", "ModuleNotFoundError", "builtins.ImportError", "builtins.ModuleNotFoundError"}
)


def _only_imports(body) -> bool:
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for stmt in statements:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        if not all(isinstance(s, (cst.Import, cst.ImportFrom, cst.Pass)) for s in stmt.body):
            return False
    return True


def _import_error_only(ctx, handler: cst.ExceptHandler) -> bool:
    kind = handler.type
    if kind is None:
        return False
    kinds = [e.value for e in kind.elements] if isinstance(kind, cst.Tuple) else [kind]
    return all(ctx.qualname(k) in _IMPORT_ERRORS for k in kinds)
