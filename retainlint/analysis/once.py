"""Does a method run once per process? The start-up of the one instance of a class:
a method that runs at most once per instance (`__init__`, a method that refuses or skips
a second call, or one only such methods call), of a class whose only instance is built
at module level or by the process's entry point (a function only module-level code, such
as `if __name__ == "__main__":`, calls). What such a method registers (a logging handler,
an exit hook) is registered once, not per instance or per call."""

from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions, is_self
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.walk import visit
from retainlint.project.index import instantiated_in_functions

_MAX_DEPTH = 4


def once_per_process(ctx, cls: cst.ClassDef, fn: cst.FunctionDef) -> bool:
    return runs_once_per_instance(ctx, cls, fn) and one_instance_per_process(ctx, cls)


def guarding_flag(ctx, node: cst.CSTNode, inside: Optional[cst.FunctionDef] = None) -> Optional[str]:
    """The flag of an `if` around `node` (in its body, not its `else`) whose test reads a
    flag that the same body sets: `if not X._registered: ...; X._registered = True`, `if not
    getattr(p, "_hooked", False): ...; p._hooked = True`. Such a branch runs once per holder
    of the flag, however often the code around it runs. The flag as the code spells it
    (`X._registered`, `p._hooked`), or None. `inside`: only the `if`s within that function."""
    statements = ctx.scope.statements
    if inside is not None and inside in statements:
        statements = statements[statements.index(inside) + 1:]
    code = ctx.code
    for stmt in reversed(statements):
        if not isinstance(stmt, cst.If) or not any(n is node for n in iter_nodes(stmt.body)):
            continue
        tested = {code(n) for n in iter_nodes(stmt.test) if isinstance(n, (cst.Name, cst.Attribute))}
        for n in iter_nodes(stmt.test):  # `getattr(p, "_hooked", False)`, `hasattr(p, "_hooked")`
            if isinstance(n, cst.Call) and ctx.qualname(n.func) in ("getattr", "hasattr") and len(n.args) >= 2 \
                    and isinstance(n.args[1].value, cst.SimpleString) \
                    and isinstance(flag := n.args[1].value.evaluated_value, str):
                tested.add(f"{code(n.args[0].value)}.{flag}")
        for n in iter_nodes(stmt.body):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else (
                [n.target] if isinstance(n, (cst.AugAssign, cst.AnnAssign)) else [])
            for t in targets:
                if code(t) in tested:
                    return code(t)
    return None


# -- once per instance -----------------------------------------------------------------


def runs_once_per_instance(ctx, cls: cst.ClassDef, fn: cst.FunctionDef, depth: int = 0) -> bool:
    if depth > _MAX_DEPTH or not any(f is fn for f in body_functions(cls)):
        return False
    if fn.name.value == "__init__" or _one_shot(fn):
        return True
    name = fn.name.value
    if ctx.index is not None and ctx.index.ask(_method_called_outside, (name, _here(ctx))):
        return False
    calls = _Calls(name)
    visit(ctx.module, calls)
    if not calls.found or any(caller is None for caller in calls.found):
        return False  # unused, or called other than as `self.name()` from a method
    methods = list(body_functions(cls))
    for caller in calls.found:
        if not any(m is caller for m in methods):
            return False  # a method of another class, or a nested function
        if not runs_once_per_instance(ctx, cls, caller, depth + 1):
            return False
    return True


def _one_shot(fn: cst.FunctionDef) -> bool:
    """`if self._started: return` (or `raise`) at the top of the body, and the body sets
    `self._started`: a second call does nothing."""
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    flags: set[str] = set()
    set_later: set[str] = set()
    for stmt in body:
        if isinstance(stmt, cst.If) and _exits(stmt.body):
            flags |= _self_attributes(stmt.test)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else (
                    [small.target] if isinstance(small, cst.AnnAssign) else [])
                set_later |= {t.attr.value for t in targets
                              if isinstance(t, cst.Attribute) and is_self(t.value)}
    return bool(flags & set_later)


def _exits(block: cst.BaseSuite) -> bool:
    statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = statements[-1] if statements else None
    smalls = last.body if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else ()
    return any(isinstance(s, (cst.Return, cst.Raise)) for s in smalls)


def _self_attributes(test: cst.BaseExpression) -> set[str]:
    found: set[str] = set()

    class _Finder(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if is_self(node.value):
                found.add(node.attr.value)

    visit(test, _Finder())
    return found


class _Calls(cst.CSTVisitor):
    """Every call of `.name(...)` in the file: the method that calls it as `self.name()`,
    or None when it is called on anything else or outside a function."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.functions: list[cst.FunctionDef] = []
        self.found: list[Optional[cst.FunctionDef]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # a reference counts too: a bound method handed out can be called any number of times
        if node.attr.value == self.name:
            own = is_self(node.value) and self.functions
            self.found.append(self.functions[-1] if own else None)


def _here(ctx) -> str:
    return os.path.abspath(ctx.path)


def _method_called_outside(index, key: tuple[str, str]) -> bool:
    """Does a function of another file call a method of this name? A question for
    `ProjectIndex.ask`."""
    name, here = key
    return any(c.rpartition(".")[2] == name for f in index.functions.values()
               if f.path != here for c in f.calls)


# -- one instance per process -----------------------------------------------------------


def one_instance_per_process(ctx, cls: cst.ClassDef) -> bool:
    """Every instantiation of the class is at module level or in an entry point, not in
    a loop, no class of the file derives from it and no other file builds one."""
    name = cls.name.value
    if ctx.classes.get(name) is not cls:
        return False
    if any(ctx.code(b.value) == name for c in ctx.classes.values() for b in c.bases):
        return False
    if made_in_another_file(ctx, f"{ctx.module_name}.{name}"):
        return False
    places, in_loop = instantiations(ctx, name)
    if not places or in_loop:
        return False
    return all(place is None or _entry_point(ctx, place) for place in places)


def instantiations(ctx, name: str) -> tuple[list[Optional[cst.FunctionDef]], bool]:
    """Where the file calls `name(...)`: the function each call is in (None at module
    level), and whether one sits in a loop, a comprehension or a lambda."""
    made = _Instantiations(name)
    visit(ctx.module, made)
    return made.places, made.in_loop


def made_in_another_file(ctx, qualified: str) -> bool:
    """Does a function of another file of the project make `qualified`?"""
    return ctx.index is not None and bool(ctx.index.ask(_called_outside, (qualified, _here(ctx))))


def _entry_point(ctx, fn: cst.FunctionDef) -> bool:
    """A module-level function called only from module-level code of its file (`main()`
    under `if __name__ == "__main__":`), once, and by no function of the project."""
    if not any(s is fn for s in ctx.module.body):
        return False
    made = _Instantiations(fn.name.value)
    visit(ctx.module, made)
    if made.in_loop or made.places != [None]:
        return False  # never called here (a framework calls it), called twice, or by a function
    return ctx.index is None or not ctx.index.ask(
        _called_outside, (f"{ctx.module_name}.{fn.name.value}", _here(ctx)))


def _called_outside(index, key: tuple[str, str]) -> bool:
    qualified, here = key
    return instantiated_in_functions(index, qualified, here)


class _Instantiations(cst.CSTVisitor):
    """Calls of `name(...)`: the function each is in (None at module level), and whether
    one sits in a loop or a comprehension."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.functions: list[cst.FunctionDef] = []
        self.loops = 0
        self.places: list[Optional[cst.FunctionDef]] = []
        self.in_loop = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

    def visit_For(self, node: cst.For) -> None:
        self.loops += 1

    def leave_For(self, original_node: cst.For) -> None:
        self.loops -= 1

    def visit_While(self, node: cst.While) -> None:
        self.loops += 1

    def leave_While(self, original_node: cst.While) -> None:
        self.loops -= 1

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.loops += 1

    def leave_CompFor(self, original_node: cst.CompFor) -> None:
        self.loops -= 1

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.loops += 1  # may be called any number of times

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.loops -= 1

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == self.name:
            self.places.append(self.functions[-1] if self.functions else None)
            self.in_loop = self.in_loop or self.loops > 0
