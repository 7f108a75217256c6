"""RL901 per-call-value-kept-on-self."""

from __future__ import annotations

import ast
import os
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import FinallyWrites, OwnScopeVisitor, body_functions, is_self
from retainlint.analysis.heavy import find_param
from retainlint.analysis.rule import Example, Rule
from retainlint.analysis.walk import visit
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl901 import TAKERS, PerCallValueKeptOnSelfPrefilter


class PerCallValueKeptOnSelf(Rule):
    prefilter = PerCallValueKeptOnSelfPrefilter
    name = "per-call-value-kept-on-self"
    summary = "A method keeps what one call was handed on a private attribute nothing reads back"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports a method (not `__init__`) that stores what one call was handed - an item it took
out of a container (`self._args = args = self._queue.pop(0)`, `.popleft()`), or a
parameter annotated as heavy (`batch: torch.Tensor`) - on a private attribute of `self`
that nothing in the file reads back outside an exception handler (no getter, no later
call uses it: the attribute only serves error reports or debugging) and that no
`finally` resets.

Not reported: attributes the file reads (state: the next call or a getter uses them),
attributes a project class the class derives from reads, in its own module (its methods
run on the same object), attributes reset or deleted in a `finally`, plain (not heavy)
parameters, and whatever `__init__` keeps.

An error when the value is a heavy argument, a warning otherwise.

## Why it leaks
The call is over, but the object still holds what it was handed: the last item taken
out of the queue, the last batch - and everything they reference - stays alive for as
long as the object, which is often long-lived (a signal, a model wrapper, a server).
Nothing needs it, since nothing reads it back.

## Example
```python
class Signal:
    def _run(self):
        self._args = args = self._queue.pop(0)  # RL901: the last emitted args stay alive
        for slot in self._slots:
            try:
                slot(*args)
            except Exception as e:
                raise RuntimeError(f"slot failed with {self._args!r}") from e
```

## Fix (suggestion only)
Keep the value in a local, or reset the attribute in a `finally` around the work
(`try: ... finally: self._args = ()`).
"""

    valid = [
        """
class Signal:
    def emit(self):
        try:
            self._run()
        finally:
            self._args = ()

    def _run(self):
        self._args = args = self._queue.pop(0)
        for slot in self._slots:
            slot(*args)

class Collector:
    def next(self):
        self._output = self._backlog.pop(0)
        return self._output
""",
    ]
    invalid = [
        Example(
            """
import torch

class Signal:
    def _run(self):
        self._args = args = self._queue.pop(0)
        for slot in self._slots:
            slot(*args)

class Stepper:
    def step(self, batch: torch.Tensor):
        self._last_batch = batch
        return self.model(batch)
""",
            lines=[6, 12],
        ),
    ]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        stores = []
        for method in body_functions(node):
            if method.name.value == "__init__":
                continue
            found = _PerCallStores(self, method)
            visit(method.body, found)
            stores.extend(found.stores)
        if not stores:
            return
        writes = FinallyWrites()
        visit(node, writes)
        reset = {t.attr.value for t, _ in writes.writes if isinstance(t, cst.Attribute)
                 and is_self(t.value)}
        for line, assign, attr, method, heavy, what in stores:
            if attr in reset or _read_back(self.ctx.module, attr) or self._read_by_base(node, attr):
                continue
            self.report(
                assign,
                f"`self.{attr}` keeps {what} one call of `{method.name.value}()` was handed after "
                f"the call: nothing in this file reads it back (outside error handlers) and no "
                f"`finally` resets it, so the last call's value stays alive as long as the "
                f"object; keep it in a local, or reset it in a `finally`",
                severity=Severity.ERROR if heavy else Severity.WARNING,
                statement=line,
                # one value, replaced by the next call's: no growth
                consequence=Consequence(f"{what} the last `{method.name.value}()` call was handed",
                                        f"`self.{attr}`", f"as long as the `{node.name.value}` instance"),
            )

    def _read_by_base(self, cls: cst.ClassDef, attr: str) -> bool:
        """Does a project class this one derives from, in another file, read `.attr`
        (outside exception handlers)? The base's methods run on this object too."""
        ctx = self.ctx
        index = ctx.index
        if index is None:
            return False
        here = os.path.abspath(ctx.path)
        bases = [ctx.absolute(ctx.qualname(b.value) or ctx.code(b.value)) for b in cls.bases]
        return any(summary.path != here and index.ask(_class_reads, (summary.path, summary.line, attr))
                   for summary in index.ancestors(bases))


def _class_reads(index, key: tuple[str, int, str]) -> bool:
    """Does the class defined at `path:line` read `.attr` outside its exception handlers
    (or name it in a string, for `getattr`)? A question for `ProjectIndex.ask`."""
    path, line, attr = key
    parsed = index.source(path)
    if parsed is None:
        return False
    cls = next((n for n in ast.walk(parsed[0]) if isinstance(n, ast.ClassDef) and n.lineno == line), None)
    if cls is None:
        return False
    handlers = {id(n) for h in ast.walk(cls) if isinstance(h, ast.ExceptHandler) for n in ast.walk(h)}
    return any(id(n) not in handlers and (
        isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ast.Load)
        or isinstance(n, ast.Constant) and n.value == attr) for n in ast.walk(cls))


class _PerCallStores(OwnScopeVisitor):
    """`self._x = <taken out of a container | heavy parameter>` in one method:
    (statement, assignment, attr, method, heavy, what the message calls it)."""

    def __init__(self, rule: PerCallValueKeptOnSelf, method: cst.FunctionDef) -> None:
        self.rule = rule
        self.method = method
        self.stores: list[tuple] = []
        self._line: Optional[cst.CSTNode] = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._line = node

    def visit_Assign(self, node: cst.Assign) -> None:
        kind = self._per_call(node.value)
        if kind is None:
            return
        heavy, what = kind
        for t in node.targets:
            target = t.target
            if isinstance(target, cst.Attribute) and is_self(target.value) and _private(target.attr.value):
                self.stores.append((self._line, node, target.attr.value, self.method, heavy, what))

    def _per_call(self, value: cst.BaseExpression) -> Optional[tuple[bool, str]]:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value in TAKERS:
            return False, "the item"
        if isinstance(value, cst.Name):
            param = find_param(self.method, value.value)
            if param is not None and self.rule.ctx.heavy.is_heavy_annotation(param.annotation):
                return True, f"the heavy argument `{value.value}`"
        return None


def _private(attr: str) -> bool:
    return attr.startswith("_") and not attr.startswith("__")


def _read_back(module: cst.Module, attr: str) -> bool:
    reads = _Reads(attr)
    visit(module, reads)
    return reads.found


class _Reads(cst.CSTVisitor):
    """Is `<x>.<attr>` read anywhere outside an exception handler (or named in a string,
    as `getattr(self, "attr")` does)?"""

    def __init__(self, attr: str) -> None:
        self.attr = attr
        self.found = False

    def visit_ExceptHandler(self, node) -> bool:
        return False  # error reports: not a use that needs the value kept

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        # `self.attr = ...` writes it; `self.attr[k] = ...` reads it
        target = node.target
        return not (isinstance(target, cst.Attribute) and target.attr.value == self.attr)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == self.attr:
            self.found = True

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.value.strip("\"'") == self.attr:
            self.found = True
