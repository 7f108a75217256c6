"""Frames that keep their own traceback: the retention model's facts about exceptions.

A caught exception's traceback starts at the frame that caught it, and a raised one's
gains the frame that raised it. A local of that frame holding the exception, its
traceback or `sys.exc_info()` closes a cycle - frame -> local -> exception -> traceback
-> frame - so the frame and every local of it (and every frame below it in the
traceback, with theirs) waits for the cyclic collector instead of being freed on return.
The interpreter deletes the `except ... as e` name at the end of its handler for exactly
this reason; a copy of it, a container it was put in, or `sys.exc_info()` escapes that.

Read from the node table the project index already made (`FileNodes`): no walk of its
own except inside the few functions that hold a candidate."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from retainlint.project.nodes import TRY_STAR, FileNodes, dotted

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_STORES = frozenset({"append", "add", "insert", "appendleft", "setdefault", "extend"})


@dataclass(frozen=True)
class FrameCycle:
    """A function's frame keeping an exception or traceback that leads back to it."""

    function: str  # `Class.method` or `function`
    name: str  # the local (or the object's attribute) that keeps it
    how: str  # "exc_info", "exception" (`sys.exception()`), "traceback", "collected", "raised", "stored"
    shown: str  # the statement's code, one line
    carries: bool  # it keeps a caught exception's traceback: the frames below, with their locals
    # the function runs per request or message (its name, its class serving requests): each
    # such cycle is made again and again (filled in by the retention model)
    per_call: bool
    site: object  # `retention.Site`


def _names(target: ast.AST) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _names(element.value if isinstance(element, ast.Starred) else element)


def _exc_info(node: ast.AST) -> Optional[str]:
    """"all", "exception", "traceback" or "type" for `sys.exc_info()` and its parts, and
    "exception" for `sys.exception()`."""
    if isinstance(node, ast.Call) and not node.args:
        called = dotted(node.func) or ""
        if called.rpartition(".")[2] == "exc_info":
            return "all"
        if called == "sys.exception":
            return "exception"
    if isinstance(node, ast.Subscript) and _exc_info(node.value) == "all":
        index = node.slice
        if isinstance(index, ast.Constant) and isinstance(index.value, int):
            return {0: "type", 1: "exception", 2: "traceback", -1: "traceback"}.get(index.value, "all")
        if isinstance(index, ast.Slice):
            lower = index.lower
            return "traceback" if isinstance(lower, ast.Constant) and lower.value == 2 else "all"
    return None


def _traceback_read(node: ast.AST) -> bool:
    """`e.__traceback__`, `tb.tb_next`, `e.__traceback__.tb_next`..."""
    return isinstance(node, ast.Attribute) and node.attr in ("__traceback__", "tb_next", "tb_frame")


class _Scope:
    """One function: its locals, and the names it lets go of (`del x`, `x = None`,
    `traceback.clear_frames(x)`), where, and where it calls what may raise first."""

    def __init__(self, node: ast.AST) -> None:
        assert isinstance(node, _FUNCTIONS)
        self.node = node
        args = node.args
        self.params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                       *([args.vararg] if args.vararg else []),
                                       *([args.kwarg] if args.kwarg else [])]}
        self.stored: set[str] = set()
        self.outer: set[str] = set()  # declared global or nonlocal
        self.released: set[str] = set()
        self.releases: list[tuple[int, str]] = []  # (line, name) of each `del x` / `x = None`
        self.cleared: set[str] = set()  # `traceback.clear_frames(x)`, `x.clear()`
        self.finally_lines: list[tuple[int, int]] = []
        self.handler_lines: list[tuple[int, int]] = []
        self.call_lines: list[int] = []
        for sub in own_nodes(node):
            if isinstance(sub, ast.Call):
                self.call_lines.append(sub.lineno)
            elif isinstance(sub, (ast.Try, *TRY_STAR)) and sub.finalbody:  # type: ignore[attr-defined]
                final = sub.finalbody  # type: ignore[attr-defined]
                self.finally_lines.append((final[0].lineno, final[-1].end_lineno or final[-1].lineno))
            elif isinstance(sub, ast.ExceptHandler):
                self.handler_lines.append((sub.lineno, sub.end_lineno or sub.lineno))
            if isinstance(sub, (ast.Global, ast.Nonlocal)):
                self.outer.update(sub.names)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                self.stored.add(sub.id)
            elif isinstance(sub, ast.Delete) or (isinstance(sub, ast.Assign) and isinstance(
                    sub.value, ast.Constant) and sub.value.value is None):
                for t in sub.targets:
                    for name in _names(t):
                        self.released.add(name)
                        self.releases.append((sub.lineno, name))
            elif isinstance(sub, ast.Call) and (dotted(sub.func) or "").endswith("clear_frames"):
                for a in sub.args:
                    self.cleared.update(_names(a))
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                    and sub.func.attr == "clear" and isinstance(sub.func.value, ast.Name):
                self.cleared.add(sub.func.value.id)  # `errors.clear()`: what it collected goes
        self.released |= self.cleared

    def lets_go(self, names: list[str], bound: ast.AST) -> bool:
        """Does the function let go of one of `names`, bound by `bound`, on every path: in a
        `finally`, or before anything that may raise runs (a reset after a call is skipped
        when the call raises, and the cycle stays: `self.gen.throw(*exc_info); exc_info =
        None`)? `clear_frames(x)`, `x.clear()` count wherever they are."""
        after = getattr(bound, "end_lineno", None) or getattr(bound, "lineno")
        for line, name in self.releases:
            if name not in names:
                continue
            if self.in_finally(line):
                return True
            if line > after and not any(after < call < line for call in self.call_lines):
                return True
        return not self.cleared.isdisjoint(names)

    def in_finally(self, line: int) -> bool:
        return any(start <= line <= end for start, end in self.finally_lines)

    def in_handler(self, line: int) -> bool:
        """Inside an `except` block: the exception being handled is `sys.exc_info()`'s, and
        becomes the `__context__` of one raised there, traceback and all."""
        return any(start <= line <= end for start, end in self.handler_lines)

    def local(self, name: str) -> bool:
        return name in self.stored and name not in self.outer and name not in self.params


def own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not of the functions, classes or lambdas in it."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        sub = stack.pop()
        yield sub
        if not isinstance(sub, (*_FUNCTIONS, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(sub))


def frame_cycles(nodes: FileNodes, site: Callable[[ast.AST], object]) -> list[FrameCycle]:
    """Every frame of the module that keeps its own traceback (see the module's doc)."""
    source = nodes.source
    if b"exc_info" not in source and b"except" not in source and b"__traceback__" not in source:
        return []
    scopes: dict[int, _Scope] = {}
    found: list[FrameCycle] = []

    def scope_of(node: ast.AST) -> Optional[_Scope]:
        owner = nodes.owner_of.get(id(node))
        if not isinstance(owner, _FUNCTIONS):
            return None
        if id(owner) not in scopes:
            scopes[id(owner)] = _Scope(owner)
        return scopes[id(owner)]

    def name_of(scope: _Scope) -> str:
        cls = nodes.owner_of.get(id(scope.node))
        fname = getattr(scope.node, "name")
        return f"{cls.name}.{fname}" if isinstance(cls, ast.ClassDef) else fname

    def note(scope: _Scope, stmt: ast.AST, name: str, how: str, carries: bool) -> None:
        if how not in ("exc_info", "exception", "traceback") and name in scope.released:
            return  # let go of before the frame ends (`del errors`, `errors.clear()`); a
            # binding of the traceback is judged by `lets_go`, which needs every path
        shown = ast.unparse(stmt).splitlines()[0]
        found.append(FrameCycle(name_of(scope), name, how, shown, carries, False, site(stmt)))

    for assign in nodes.of(ast.Assign, ast.AnnAssign):
        value = getattr(assign, "value")
        if value is None:
            continue
        part = _exc_info(value)
        if part is None and not _traceback_read(value):
            continue
        scope = scope_of(assign)
        if scope is None or (part is None and not _caught_here(scope, value)):
            continue  # a traceback handed in (`tb = tb.tb_next`) need not lead back to this frame
        line = getattr(assign, "lineno")
        if part is not None and not (scope.in_handler(line) or scope.in_finally(line)):
            continue  # a helper the handler calls: the traceback starts below its frame
        targets = getattr(assign, "targets", None) or [getattr(assign, "target")]
        for target in targets:
            names = list(_names(target))
            if part in ("all", None) and isinstance(target, (ast.Tuple, ast.List)) \
                    and isinstance(value, ast.Call) and len(names) == 3:
                names = names[1:]  # `exc_type, exc, tb = sys.exc_info()`: the type keeps nothing
            if part == "type" or scope.lets_go(names, assign):
                continue  # the type keeps nothing; a part let go of: the author broke the cycle
            for name in sorted(names, key=lambda n: n == "_"):  # `_, _, tb`: name `tb`
                if scope.local(name):
                    how = "traceback" if part is None else "exception" if isinstance(value, ast.Call) \
                        and dotted(value.func) == "sys.exception" else "exc_info"
                    note(scope, assign, name, how, True)
                    break
    for handler in nodes.of(ast.ExceptHandler):
        caught = getattr(handler, "name")
        scope = scope_of(handler)
        if caught is None or scope is None:
            continue
        for stmt in _handler_statements(handler):
            _caught_kept(scope, stmt, caught, nodes, note)
    for call in nodes.of(ast.Call):
        func = getattr(call, "func")
        if isinstance(func, ast.Attribute) and func.attr in _STORES \
                and (dotted(func.value) or "").startswith("self.") \
                and any(_exc_info(sub) in ("all", "exception", "traceback")
                        for a in getattr(call, "args") for sub in ast.walk(a)):
            scope = scope_of(call)
            if scope is not None:
                note(scope, call, ast.unparse(func.value), "stored", True)
    for raise_ in nodes.of(ast.Raise):
        exc = getattr(raise_, "exc")
        if not isinstance(exc, ast.Name):
            continue
        scope = scope_of(raise_)
        if scope is None or not scope.local(exc.id) or _bound_by_handler(scope, exc.id, raise_):
            continue
        bound = _binding(scope, exc.id)
        chained = getattr(raise_, "cause") is not None and not (
            isinstance(getattr(raise_, "cause"), ast.Constant))
        # Only when the raised exception drags another traceback along: one raised while
        # another is handled or chained to it, or one kept elsewhere and raised again (its
        # traceback grows by this frame each time). A fresh exception raised from a local
        # cycles through this frame alone, whose locals are the caller's arguments: the
        # collector's ordinary work, not reported.
        if chained or scope.in_handler(getattr(raise_, "lineno")) or isinstance(bound, ast.Attribute):
            note(scope, raise_, exc.id, "raised", True)
    return found


def _handler_statements(handler: ast.AST) -> Iterator[ast.AST]:
    stack = list(getattr(handler, "body"))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
            continue
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            stack.extend(getattr(stmt, field, None) or ())
        for inner in getattr(stmt, "handlers", ()):
            stack.extend(inner.body)


def _caught_kept(scope: _Scope, stmt: ast.AST, caught: str, nodes: FileNodes,
                 note: Callable[..., None]) -> None:
    """`errors.append(e)`, `errors[k] = e`: caught exceptions collected past their handler
    in a local of this function or of one around it (a closure's cell). (A single copy,
    `last = e`, is one collectable cycle of this frame: not reported.)"""
    def holds(value: Optional[ast.AST]) -> bool:
        if isinstance(value, ast.Name):
            return value.id == caught
        return isinstance(value, (ast.Tuple, ast.List)) and any(holds(e) for e in value.elts)

    def enclosing_local(name: str) -> bool:
        if scope.local(name):
            return True
        if name in scope.stored or name in scope.params:
            return False
        owner = nodes.owner_of.get(id(scope.node))
        while isinstance(owner, _FUNCTIONS):
            outer = _Scope(owner)
            if outer.local(name):
                return name not in outer.released
            owner = nodes.owner_of.get(id(owner))
        return False

    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        if isinstance(call.func, ast.Attribute) and call.func.attr in _STORES \
                and isinstance(call.func.value, ast.Name) and any(holds(a) for a in call.args) \
                and enclosing_local(call.func.value.id):
            note(scope, stmt, call.func.value.id, "collected", True)
    elif isinstance(stmt, ast.Assign) and holds(stmt.value):
        for target in stmt.targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                    and enclosing_local(target.value.id):
                note(scope, stmt, target.value.id, "collected", True)


def _caught_here(scope: _Scope, value: ast.AST) -> bool:
    """`e.__traceback__...` for an `e` this function catches: its frames lead back here."""
    while isinstance(value, ast.Attribute):
        value = value.value
    return isinstance(value, ast.Name) and _bound_by_handler(scope, value.id)


def _bound_by_handler(scope: _Scope, name: str, within: Optional[ast.AST] = None) -> bool:
    """Does a handler of the function bind `name` (`except E as name:`) - the one around
    `within` when given? Python unbinds the name when the handler ends, so a `raise name`
    after it raises whatever the name was bound to next, not the exception caught."""
    line = getattr(within, "lineno", None)
    return any(isinstance(sub, ast.ExceptHandler) and sub.name == name
               and (line is None or sub.lineno <= line <= (sub.end_lineno or sub.lineno))
               for sub in own_nodes(scope.node))


def _binding(scope: _Scope, name: str) -> Optional[ast.AST]:
    """The value last assigned to `name` in the function (by line), if a plain assignment."""
    best: Optional[tuple[int, ast.AST]] = None
    for sub in own_nodes(scope.node):
        if isinstance(sub, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in sub.targets):
            if best is None or sub.lineno > best[0]:
                best = (sub.lineno, sub.value)
    return best[1] if best else None

