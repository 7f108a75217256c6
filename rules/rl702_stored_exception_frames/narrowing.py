"""`isinstance` tests that rule the exception out: `if isinstance(v, Exception): raise v`
narrows `v` after it, when the test covers every type the handler catches."""

from __future__ import annotations

from typing import Optional

import libcst as cst


def _exception_test(ctx, test: cst.BaseExpression, names: set,
                    handler: cst.ExceptHandler) -> Optional[tuple[str, bool]]:
    """`isinstance(n, T)` -> (n, True), `not isinstance(n, T)` -> (n, False), for a name
    `n` among `names` and types `T` that cover everything `handler` catches."""
    positive = True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, positive = test.expression, False
    if not (
        isinstance(test, cst.Call) and ctx.qualname(test.func) in ("isinstance", "builtins.isinstance")
        and len(test.args) == 2 and isinstance(test.args[0].value, cst.Name)
        and test.args[0].value.value in names
    ):
        return None
    if not _covers(_type_names(test.args[1].value), _type_names(handler.type)):
        return None
    return test.args[0].value.value, positive


def _type_names(kind: Optional[cst.BaseExpression]) -> Optional[set]:
    """The last parts of the names in an exception type or tuple of them (None: a bare
    `except:` or a type not spelled as names)."""
    if kind is None:
        return None
    kinds = [e.value for e in kind.elements] if isinstance(kind, cst.Tuple) else [kind]
    found = set()
    for k in kinds:
        if isinstance(k, cst.Name):
            found.add(k.value)
        elif isinstance(k, cst.Attribute):
            found.add(k.attr.value)
        else:
            return None
    return found


def _covers(checked: Optional[set], caught: Optional[set]) -> bool:
    """Does an `isinstance` check against `checked` match every exception a handler for
    `caught` binds? `BaseException` covers all; `Exception` all but what a bare `except:`
    or a handler for `BaseException` (or `KeyboardInterrupt`, ...) binds; otherwise each
    caught type must be checked."""
    if not checked:
        return False
    if "BaseException" in checked:
        return True
    if caught is None or caught & _NOT_EXCEPTIONS:
        return False
    return "Exception" in checked or caught <= checked


# What a handler may bind that is not an `Exception`.
_NOT_EXCEPTIONS = frozenset(
    {"BaseException", "BaseExceptionGroup", "KeyboardInterrupt", "SystemExit", "GeneratorExit"}
)
