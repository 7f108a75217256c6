"""RL907 shared-exception-raised: one exception instance, made at module or class level,
raised by name in a function: each raise adds that call's frames to the instance's
traceback, and the module keeps the instance."""

from __future__ import annotations

import builtins
from typing import Optional

import libcst as cst

from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.rule import Example, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl907 import SharedExceptionRaisedPrefilter

_EXCEPTION_ENDINGS = ("Error", "Exception", "Exit", "Failure", "Interrupt")
_BUILTIN_EXCEPTIONS = frozenset(n for n, v in vars(builtins).items()
                                if isinstance(v, type) and issubclass(v, BaseException))
# Raised where the caller misused an API: once per defect in the calling code, not once per
# request, so the frames it gathers stay few.
_MISUSE = frozenset({"TypeError", "RuntimeError", "NotImplementedError", "AssertionError",
                     "AttributeError"})


def _last(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


class SharedExceptionRaised(Rule):
    prefilter = SharedExceptionRaisedPrefilter
    name = "shared-exception-raised"
    summary = ("One exception instance made at module or class level is raised in a function: every raise "
               "adds its frames (and their locals) to the traceback the instance keeps")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports `raise NAME` (or `raise self.NAME`, `raise cls.NAME`, `raise Class.NAME`) in a
function, where `NAME` is one exception instance made once at module or class level
(`NOT_FOUND = NotFoundError("no such user")`) and not bound afresh in the function.

Severity: a warning; info for `TypeError`, `RuntimeError`, `NotImplementedError`,
`AssertionError` and `AttributeError`, and for an instance kept on a class (its own error
constants: "this canvas has been finalized"), which say the caller misused an API or an
object - raised once per defect in the calling code rather than once per request.

## Why it leaks
Raising an exception sets its `__traceback__`; raising the same instance again adds the new
frames to the traceback it already has (two entries per raise from a function's caller).
The instance lives as long as its module, so it keeps the frames of every raise - and
every local of those frames (the request, the session, the user, a model) - for the life
of the process. The traceback a handler logs
grows with them.

## Example
```python
class UnauthorizedError(Exception):
    pass


credentials_error = UnauthorizedError("invalid credentials")


async def current_user(request, session):
    user = await lookup(session, request.headers.get("authorization"))
    if user is None:
        raise credentials_error  # RL907: the frames of every failed login stay
    return user
```

## Fix
None automatic: raise a fresh instance each time - a function or a class that makes it
(`raise credentials_error()` with `def credentials_error(): return UnauthorizedError(...)`).
"""

    valid = [
        # a fresh instance per raise
        """
class NotFound(Exception):
    pass

def not_found():
    return NotFound("no such user")

def get(users, name):
    if name not in users:
        raise not_found()
    return users[name]
""",
        # a class, not an instance
        """
NotFound = LookupError

def get(users, name):
    if name not in users:
        raise NotFound
    return users[name]
""",
        # raised once, at import
        """
ERROR = ImportError("no backend")
try:
    import backend
except ImportError:
    raise ERROR
""",
    ]
    invalid = [
        Example(
            """
class UnauthorizedError(Exception):
    pass

credentials_error = UnauthorizedError("invalid credentials")

async def current_user(request, session):
    user = await session.get(request.token)
    if user is None:
        raise credentials_error
    return user
""",
            lines=[10],
        ),
        Example(
            """
class Client:
    CLOSED = ConnectionError("the client is closed")

    def send(self, data):
        if self.closed:
            raise self.CLOSED
        self.socket.send(data)
""",
            lines=[7],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._module: dict[str, str] = {}  # name -> the exception class it is an instance of
        self._classes: dict[str, dict[str, str]] = {}  # class -> its attributes of that kind
        self._exception_classes: set[str] = set()
        self._class_stack: list[str] = []
        self._functions: list[cst.FunctionDef] = []

    def visit_Module(self, node: cst.Module) -> None:
        for stmt in node.body:
            if isinstance(stmt, cst.ClassDef) and any(self._is_exception_class(b.value) for b in stmt.bases):
                self._exception_classes.add(stmt.name.value)
        self._module = self._instances(node.body)
        for stmt in node.body:
            if isinstance(stmt, cst.ClassDef):
                body = stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else []
                self._classes[stmt.name.value] = self._instances(body)

    def _is_exception_class(self, node: cst.BaseExpression) -> bool:
        name = _last(node)
        return name is not None and (name in _BUILTIN_EXCEPTIONS or name in self._exception_classes
                                     or name.endswith(_EXCEPTION_ENDINGS))

    def _instances(self, body) -> dict[str, str]:
        """Names bound, in this block, to one exception instance: `X = SomeError(...)`."""
        found: dict[str, str] = {}
        for stmt in body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) \
                        and self._is_exception_class(small.value.func):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            found[target.target.value] = _last(small.value.func) or ""
        return found

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._class_stack.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._class_stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions.pop()

    def visit_Raise(self, node: cst.Raise) -> None:
        if not self._functions or node.exc is None:
            return
        found = self._shared(node.exc)
        if found is None:
            return
        name, kind, owner, on_class = found
        if self._rebound(name):
            return
        # A class's own error constants (`_finalized_error`, `CLOSED`) say its object was
        # misused, as the builtin misuse errors do: raised once per defect, not per request.
        severity = Severity.INFO if kind in _MISUSE or on_class else Severity.WARNING
        shown = self.ctx.code(node.exc)
        self.report(node, f"`{shown}` is one `{kind}` instance, made {owner} and raised again by each call that gets here: each "
                          f"raise adds this call's frames (and their locals) to the traceback it keeps, so "
                          f"it holds the frames of every raise for the life of the process; raise a fresh instance "
                          f"(a function that makes it)",
                    severity=severity,
                    consequence=Consequence("the frames, and their locals, of every raise",
                                            f"`{shown}`'s traceback ({owner})", "the process",
                                            "one traceback entry per frame, per raise"))

    def _shared(self, exc: cst.BaseExpression) -> Optional[tuple[str, str, str, bool]]:
        """(name, class, where it was made, made on a class) when `exc` is a module- or
        class-level instance."""
        if isinstance(exc, cst.Name) and exc.value in self._module:
            return exc.value, self._module[exc.value], "at module level", False
        if isinstance(exc, cst.Attribute) and isinstance(exc.value, cst.Name):
            owner = exc.value.value
            cls = self._class_stack[-1] if owner in ("self", "cls") and self._class_stack else owner
            kinds = self._classes.get(cls, {})
            if exc.attr.value in kinds:
                return exc.attr.value, kinds[exc.attr.value], f"on the class `{cls}`", True
        return None

    def _rebound(self, name: str) -> bool:
        """Does the raising function (or one around it) bind the name itself (a local, or a
        `global` it assigns afresh before raising, or `self.NAME = ...`)?"""
        for fn in self._functions:
            for node in iter_nodes(fn.body):
                if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                    if any(_last(t) == name for t in targets):
                        return True
        return False
