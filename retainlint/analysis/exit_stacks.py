"""`ExitStack`s and what closes them: the stacks a class assigns (`self._stack =
ExitStack()`), the cleanup registered on them and their other uses in the class, what
closes them in the file, and attributes closed by a project subclass in another file
(`subclasses_elsewhere`). RL614 reports stacks nothing closes, RL615 asks which subclasses
close a part, and a release path runs what is registered on a stack it closes."""

from __future__ import annotations

import ast
import os
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions, self_attribute


_STACK_TYPES = frozenset({"contextlib.ExitStack", "contextlib.AsyncExitStack"})
_STACK_REGISTRATIONS = frozenset(
    {"callback", "push", "enter_context", "push_async_callback", "push_async_exit", "enter_async_context"}
)
_STACK_CLOSERS = frozenset({"close", "aclose", "__exit__", "__aexit__", "pop_all"})


def _exit_stacks(ctx, cls: cst.ClassDef) -> list[str]:
    """Attributes a method of `cls` assigns a new `ExitStack()` / `AsyncExitStack()`."""
    found: list[str] = []
    for fn in body_functions(cls):
        for key, entries in ctx.heavy.local_assignments(fn).items():
            if not key.startswith("self.") or key[5:] in found:
                continue
            if any(isinstance(value, cst.Call) and ctx.qualname(value.func) in _STACK_TYPES
                   for value, _ in entries):
                found.append(key[5:])
    return found


class _StackUses(cst.CSTVisitor):
    """How the class uses each stack attribute: registrations (`self.s.callback(...)`),
    and any other use (closed, entered with `with`, handed on, returned)."""

    def __init__(self, attrs: set[str]) -> None:
        self.attrs = attrs
        self.registrations: dict[str, list[tuple[cst.Call, cst.CSTNode]]] = {}  # (call, statement)
        self.other: set[str] = set()
        self._seen: set[int] = set()  # `self.s` nodes accounted for
        self._statement: Optional[cst.CSTNode] = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statement = node

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _STACK_REGISTRATIONS:
            attr = self_attribute(func.value)
            if attr in self.attrs:
                self.registrations.setdefault(attr, []).append((node, self._statement or node))
                self._seen.add(id(func.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if self_attribute(t.target) in self.attrs:
                self._seen.add(id(t.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self_attribute(node.target) in self.attrs:
            self._seen.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = self_attribute(node)
        if attr in self.attrs and id(node) not in self._seen:
            self.other.add(attr)


class _StackClosers(cst.CSTVisitor):
    """Stack attributes something in the file closes: `<anything>.s.close` (called or
    handed on, as to `weakref.finalize`)."""

    def __init__(self, attrs: set[str]) -> None:
        self.attrs = attrs
        self.closed: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _STACK_CLOSERS and isinstance(node.value, cst.Attribute) \
                and node.value.attr.value in self.attrs:
            self.closed.add(node.value.attr.value)


def _closed_by_subclasses_elsewhere(ctx, cls: cst.ClassDef, attrs: set[str],
                                    closers: Optional[frozenset] = None) -> set[str]:
    """Attributes closed (`.s.close`, ...; `closers`) in a file of another module
    that holds a project subclass of `cls`."""
    closers = closers or _STACK_CLOSERS
    qualified = f"{ctx.module_name}.{cls.name.value}"
    index = ctx.index
    here = os.path.abspath(ctx.path)
    closed: set[str] = set()
    # looked up one by one, so that a cached result depends on those files' contents
    found = (index.classes.get(name) for name in index.ask(subclasses_elsewhere, (qualified, here)))
    for path in sorted({c.path for c in found if c is not None}):
        parsed = index.tree(path)
        if parsed is None:
            closed |= attrs  # unreadable: it may close them
            continue
        for node in ast.walk(parsed):
            if isinstance(node, ast.Attribute) and node.attr in closers \
                    and isinstance(node.value, ast.Attribute) and node.value.attr in attrs:
                closed.add(node.value.attr)
    return closed


def subclasses_elsewhere(index, key: tuple[str, str]) -> tuple[str, ...]:
    """The project classes deriving directly from `qualified` in files other than
    `here`. A question for `ProjectIndex.ask` (it reads every class summary)."""
    qualified, here = key
    return tuple(sorted(name for name, c in index.classes.items()
                        if os.path.abspath(c.path) != here
                        and any(index.resolve(b) == qualified for b in c.bases)))
