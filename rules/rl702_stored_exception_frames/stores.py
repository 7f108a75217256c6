"""Where a handler's exception goes: the handler and its stores (`_Handler`, `_Store`), the
visitor that finds them (`_StoreFinder`: assignments, container adds, returns, aliases,
narrowing by `isinstance`), and what drops the traceback first (`_DropsTraceback`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor
from retainlint.analysis.holding import ctx_code, reaches
from retainlint.analysis.walk import visit
from retainlint.rules.prefilters.rl702 import ADDERS
from retainlint.rules.rl702_stored_exception_frames.blocks import _terminates
from retainlint.rules.rl702_stored_exception_frames.narrowing import _exception_test

if TYPE_CHECKING:
    from retainlint.rules.rl702_stored_exception_frames import StoredExceptionFrames

_DROP_WORDS = ("clear", "detach", "strip", "drop", "remove", "del")


@dataclass
class _Store:
    node: cst.CSTNode  # what is reported
    value: cst.BaseExpression
    holder: str  # how the message names the holder
    kind: str  # "self" | "global" | "class" | "param" | "return"
    attr: Optional[str]  # `x` of `self.x...`, for the hand-off check
    statement: Optional[cst.CSTNode]
    exc: str  # the exception's name (or its alias) in the stored value
    slot: Optional[tuple] = None  # what a consumer reads it back through (`_slot`)


@dataclass
class _Handler:
    name: str
    node: cst.ExceptHandler
    function: cst.FunctionDef
    cls: Optional[cst.ClassDef]  # the class of the method whose `self` is in reach
    self_owner: Optional[cst.FunctionDef]  # that method (the function itself, or an enclosing one)
    stores: list = field(default_factory=list)
    aliases: set = field(default_factory=set)  # locals holding the exception
    containers: set = field(default_factory=set)  # of those, local containers
    dropped: bool = False
    reraised: bool = False  # an alias is raised after the handler
    assigned: dict = field(default_factory=dict)  # alias -> its assignment in the handler


def _adds(node: cst.CSTNode) -> bool:
    """Is the store a call adding to a container (`append`, `add`, `put`...)?"""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ADDERS


def _slot(target: cst.BaseExpression) -> tuple:
    """How code elsewhere reads a store's holder back: ("a", attr) for the attribute
    nearest the value (`self._results[k]` -> `_results`, `self.state.error` -> `error`),
    ("g", name) for a bare module global or its items."""
    node = target
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Attribute):
            return ("a", node.attr.value)
        node = node.value
    return ("g", node.value if isinstance(node, cst.Name) else "")


class _DropsTraceback(OwnScopeVisitor):
    """`x.__traceback__ = None`, `del x.__traceback__`, `x.with_traceback(None)`,
    `traceback.clear_frames(...)` anywhere in a body."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.found = False

    def visit_Assign(self, node: cst.Assign) -> None:
        if ctx_code(self.ctx, node.value) == "None" and any(
                isinstance(t.target, cst.Attribute) and t.target.attr.value == "__traceback__"
                for t in node.targets):
            self.found = True

    def visit_Del(self, node: cst.Del) -> None:
        if isinstance(node.target, cst.Attribute) and node.target.attr.value == "__traceback__":
            self.found = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "with_traceback" and node.args \
                and ctx_code(self.ctx, node.args[0].value) == "None":
            self.found = True
        elif self.ctx.qualname(func) == "traceback.clear_frames":
            self.found = True


class _StoreFinder(OwnScopeVisitor):
    """Stores of the exception names in one handler body (or, for aliases, in the rest of
    the function), not entering nested scopes."""

    def __init__(self, rule: StoredExceptionFrames, h: _Handler, names: set,
                 skip: Optional[cst.CSTNode] = None) -> None:
        self.rule = rule
        self.ctx = rule.ctx
        self.h = h
        self.names = names
        self.skip = skip
        # the alias pass only looks after the handler (before it, the name held something else)
        self.active = skip is None
        self.line: Optional[cst.CSTNode] = None
        # names known not to hold an exception in the block being visited, one set per
        # enclosing block (`if isinstance(v, Exception): raise v` narrows `v` after it)
        self.narrowed: list[set] = []
        self._narrow_in: dict[int, str] = {}  # id(block) -> a name narrowed inside it

    # scopes and statements
    def visit_ExceptHandler(self, node) -> bool:
        if node is self.skip:
            self.active = True
            return False
        # a nested handler that rebinds the name is judged on its own
        return not (node.name is not None and isinstance(node.name.name, cst.Name)
                    and node.name.name.value in self.names)

    def visit_SimpleStatementLine(self, node) -> None:
        self.line = node

    # `isinstance` guards: a name that is not an exception where a store runs
    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        name = self._narrow_in.pop(id(node), None)
        self.narrowed.append({name} if name else set())

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.narrowed.pop()

    def visit_If(self, node: cst.If) -> None:
        if not self.active:
            return  # before the handler, the name held something else
        test = _exception_test(self.ctx, node.test, self.names, self.h.node)
        if test is None:
            return
        name, positive = test
        if not positive:
            self._narrow_in[id(node.body)] = name
        elif isinstance(node.orelse, cst.Else):
            self._narrow_in[id(node.orelse.body)] = name

    def leave_If(self, node: cst.If) -> None:
        if not self.active or not self.narrowed:
            return
        test = _exception_test(self.ctx, node.test, self.names, self.h.node)
        if test is None:
            return
        name, positive = test
        branch = node.body if positive else node.orelse
        if branch is not None and _terminates(branch):
            self.narrowed[-1].add(name)  # the rest of the enclosing block

    def _is_narrowed(self, name: str) -> bool:
        return any(name in block for block in self.narrowed)

    def _widen(self, name: str) -> None:
        """`name` is assigned again: what it holds is no longer known."""
        for block in self.narrowed:
            block.discard(name)

    # what holds the exception
    def holds(self, value: Optional[cst.BaseExpression]) -> Optional[str]:
        if value is None or not self.active:
            return None
        for n in self.names:
            if self._is_narrowed(n):
                continue
            key = cst.Name(n)
            if isinstance(value, cst.Attribute) and value.attr.value == "__traceback__" and (
                isinstance(value.value, cst.Name) and value.value.value == n
            ):
                return n
            if _reaches_exc(self.ctx, value, key, self.h.function) and not self._wrapper_drops(value):
                return n
        return None

    def _wrapper_drops(self, value) -> bool:
        """`_RemoteError(e, e.__traceback__)` where the class (of this file) clears the
        traceback of what it keeps in its `__init__` (`self.exc.__traceback__ = None`)."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
            return False
        cls = self.ctx.classes.get(value.func.value)
        init = self.ctx.methods(cls).get("__init__") if cls is not None else None
        if init is None:
            return False
        drops = _DropsTraceback(self.ctx)
        visit(init.body, drops)
        return drops.found

    def _store(self, node, value, target, exc) -> None:
        if not self.active:
            return
        where = self.rule.classify(target, self.h)
        if where is None:
            return
        kind, holder, attr = where
        self.h.stores.append(_Store(node, value, holder, kind, attr, self.line, exc, _slot(target)))

    def visit_Assign(self, node: cst.Assign) -> None:
        exc = self.holds(node.value)
        if exc is None:
            return
        for t in node.targets:
            if isinstance(t.target, cst.Name):
                self._widen(t.target.value)
            target = t.target
            if isinstance(target, cst.Name):
                where = self.rule.classify(target, self.h)
                if where is not None:
                    self._store(node, node.value, target, exc)
                elif self.skip is None:
                    self.h.aliases.add(target.value)
                    self.h.assigned.setdefault(target.value, (node, self.line))
                    if not isinstance(node.value, cst.Name):
                        self.h.containers.add(target.value)
            else:
                self._store(node, node.value, target, exc)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        exc = self.holds(node.value)
        if exc is None:
            return
        if isinstance(node.target, cst.Name):
            if self.rule.classify(node.target, self.h) is not None:
                self._store(node, node.value, node.target, exc)
            elif self.skip is None:
                self.h.aliases.add(node.target.value)
                if not isinstance(node.value, cst.Name):
                    self.h.containers.add(node.target.value)
        else:
            self._store(node, node.value, node.target, exc)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        exc = self.holds(node.value)
        if exc is not None:
            self._store(node, node.value, node.target, exc)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = func.value
            # traceback dropped
            if method == "with_traceback" and node.args and ctx_code(self.ctx, node.args[0].value) == "None":
                if isinstance(receiver, cst.Name) and receiver.value in self.names and self.active:
                    self.h.dropped = True
            if method in ADDERS:
                for arg in node.args:
                    exc = self.holds(arg.value)
                    if exc is None:
                        continue
                    if isinstance(receiver, cst.Name) and self.rule.classify(receiver, self.h) is None:
                        if self.skip is None:
                            # a local container: reported if it escapes the function
                            self.h.aliases.add(receiver.value)
                            self.h.containers.add(receiver.value)
                        break
                    self._store(node, arg.value, receiver, exc)
                    break
        if self.active and self._drops_traceback(node):
            self.h.dropped = True

    def _drops_traceback(self, node: cst.Call) -> bool:
        """`traceback.clear_frames(e.__traceback__)`, or a helper named for it
        (`_detach_tracebacks(e)`, `clear_traceback(err)`) given the exception."""
        qualified = self.ctx.qualname(node.func) or ""
        if qualified == "traceback.clear_frames":
            return True
        last = qualified.rsplit(".", 1)[-1].lower()
        if "traceback" not in last or not any(w in last for w in _DROP_WORDS):
            if not self._helper_drops(node):
                return False
        for arg in node.args:
            v = arg.value
            if isinstance(v, cst.Attribute):
                v = v.value
            if isinstance(v, cst.Name) and v.value in self.names:
                return True
        return False

    def _helper_drops(self, node: cst.Call) -> bool:
        """A function of this file that clears its parameter's traceback
        (`def _sanitize(error): error.__traceback__ = None`)."""
        helper = self.ctx.functions.get(node.func.value) if isinstance(node.func, cst.Name) else None
        if helper is None:
            return False
        drops = _DropsTraceback(self.ctx)
        visit(helper.body, drops)
        return drops.found

    def visit_Return(self, node: cst.Return) -> None:
        value = node.value
        if value is None:
            return
        # a container, or an instance of a class of this file built around the exception
        # (`return ServerDescription(address, error=e)`: `holds` follows its `__init__`)
        wrapper = isinstance(value, cst.Call) and isinstance(value.func, cst.Name) \
            and value.func.value in self.ctx.classes
        if wrapper or isinstance(value, (cst.Tuple, cst.List, cst.Dict, cst.Set)) or (
            isinstance(value, cst.Name) and value.value in self.h.containers
        ):
            exc = self.holds(value)
            if exc is not None:
                holder = (f"the returned local `{value.value}`" if isinstance(value, cst.Name)
                          else f"the returned `{value.func.value}`" if wrapper
                          else "the returned container")
                self.h.stores.append(_Store(node, value, holder, "return", None, self.line, exc))

    def visit_Raise(self, node: cst.Raise) -> None:
        exc = node.exc
        if self.active and self.skip is not None and isinstance(exc, cst.Name) and (
            exc.value in self.names and exc.value not in self.h.containers
        ):
            self.h.reraised = True

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        # `e.__traceback__ = None`
        target = node.target
        if (
            self.active
            and isinstance(target, cst.Attribute)
            and target.attr.value == "__traceback__"
            and isinstance(target.value, cst.Name)
            and target.value.value in self.names
        ):
            self.h.dropped = True

    def visit_Del(self, node: cst.Del) -> None:
        target = node.target
        if self.active and isinstance(target, cst.Attribute) and target.attr.value == "__traceback__":
            self.h.dropped = True


def _reaches_exc(ctx, value, key: cst.Name, function) -> bool:
    """`reaches` without following local assignments (aliases are tracked explicitly)."""
    if isinstance(value, cst.Name):
        return value.value == key.value
    return reaches(ctx, value, key, None) is not None
