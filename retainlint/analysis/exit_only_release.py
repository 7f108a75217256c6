"""Release methods that are only process-exit or finalizer cleanup for the release checks (RL610, RL611): called from
`__del__` or registered with `atexit` / `weakref.finalize` and never on a live instance
(`_only_at_exit`), with the project-wide questions it asks (`called_on_instance`,
`released_last`: calls of the release on what can be told is an instance)."""

from __future__ import annotations

import ast
import os

import libcst as cst

from retainlint.analysis.cstutil import body_functions, is_self
from retainlint.analysis.walk import visit
from retainlint.project.index import qualified_in
from retainlint.analysis.owned_parts import _DUNDER_RELEASE


def _only_at_exit(ctx, cls: cst.ClassDef, fn: cst.FunctionDef) -> bool:
    """Is the release method process-exit or finalizer cleanup: called from `__del__`,
    or registered with `atexit` / `weakref.finalize`, and never called (nor handed
    on) while an instance lives on - by the class, a subclass of this file, or code
    that can be told holds an instance (`self.comm = Comm(...)` then
    `self.comm.close()`; `store = Store(path)` then `store.close()`)? Then no owner
    keeps the object after its release, and what it leaves on `self` goes with it."""
    name = fn.name.value
    if name in _DUNDER_RELEASE:
        return False
    uses = _ReleaseUses(ctx, name)
    for klass in (cls, *_local_subclasses(ctx, cls)):
        uses.scan(klass)
    if uses.live:
        return False
    qualified = f"{ctx.module_name}.{cls.name.value}"
    if not (uses.at_exit or _registered_for_exit(ctx, cls, name)):
        # `recipe = Recipe(cfg); recipe.train(); recipe.cleanup()` and the function
        # returns: the instance goes the moment its release does.
        return bool(ctx.index.ask(released_last, (qualified, name)))
    return not ctx.index.ask(called_on_instance, (qualified, name))


def _local_subclasses(ctx, cls: cst.ClassDef) -> list[cst.ClassDef]:
    return [c for c in ctx.classes.values()
            if c is not cls and any(ctx.qualname(b.value) == cls.name.value for b in c.bases)]


def _registered_for_exit(ctx, cls: cst.ClassDef, name: str) -> bool:
    """Does a function of this file register `v.<name>` with `atexit` or
    `weakref.finalize` (`atexit.register(store.close)`), `v` a local or parameter that
    may be an instance of `cls` (bound to `cls(...)`, or handed in: not bound to
    another call such as `handler = logging.FileHandler(...)`)?"""

    def may_be_instance(variable: str, fn: cst.FunctionDef) -> bool:
        for value, _ in ctx.heavy.local_assignments(fn).get(variable, ()):
            if value is not None and not (
                    isinstance(value, cst.Call) and ctx.qualname(value.func) == cls.name.value):
                return False
        return True

    class _Registrations(cst.CSTVisitor):
        found = False

        def __init__(self) -> None:
            self.functions: list[cst.FunctionDef] = []

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.functions.append(node)

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.functions.pop()

        def visit_Call(self, node: cst.Call) -> None:
            if not self.functions or ctx.qualname(node.func) not in _EXIT_REGISTRIES:
                return
            for arg in node.args:
                bound = arg.value
                if isinstance(bound, cst.Attribute) and bound.attr.value == name \
                        and isinstance(bound.value, cst.Name) and bound.value.value != "self" \
                        and may_be_instance(bound.value.value, self.functions[-1]):
                    self.found = True

    finder = _Registrations()
    visit(ctx.module, finder)
    return finder.found


# Registries whose callbacks run when the process exits or the object is collected.
_EXIT_REGISTRIES = frozenset({"atexit.register", "weakref.finalize"})


class _ReleaseUses(cst.CSTVisitor):
    """How a class's methods use its release method `name` through `self` (or
    `super()`): called from `__del__` or registered for exit (`at_exit`), or called or
    handed on anywhere else (`live`: it may run while the object lives on)."""

    def __init__(self, ctx, name: str) -> None:
        self.ctx = ctx
        self.name = name
        self.at_exit = False
        self.live = False
        self._method = ""
        self._judged: set[int] = set()

    def scan(self, cls: cst.ClassDef) -> None:
        for method in body_functions(cls):
            self._method = method.name.value
            visit(method.body, self)

    def _names_release(self, expr) -> bool:
        return isinstance(expr, cst.Attribute) and expr.attr.value == self.name and (
            is_self(expr.value) or (isinstance(expr.value, cst.Call) and isinstance(expr.value.func, cst.Name)
                                    and expr.value.func.value == "super"))

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) in _EXIT_REGISTRIES:
            for arg in node.args:
                if self._names_release(arg.value):
                    self._judged.add(id(arg.value))
                    self.at_exit = True
        elif self._names_release(node.func):
            self._judged.add(id(node.func))
            if self._method == "__del__":
                self.at_exit = True
            else:
                self.live = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if id(node) not in self._judged and self._names_release(node):
            self.live = True  # handed on (`signal.signal(SIGTERM, self.close)`)


def _instance_calls(index, qualified: str, name: str):
    """(function, receiver) of each call anywhere in the project of method `name` on what can
    be told is an instance of the class `qualified`: `v.name()` where the function binds
    `v = Cls(...)` or annotates `v: Cls` (receiver `v`), or `<...>.x.name()` where a class
    assigns `self.x = Cls(...)` (receiver None: an instance that class keeps). Other
    receivers are unknown and left out; `self.name()` is the class's own business."""
    holders = _attributes_built(index).get(qualified, set())
    for function, call in _method_calls(index, name):
        receiver = call[:-len(name) - 1]
        head, _, last = receiver.rpartition(".")
        if head and last in holders:
            yield function, None
        elif not head and receiver not in ("self", "cls") and _binds_instance(index, function, receiver, qualified):
            yield function, receiver


def _method_calls(index, name: str) -> list:
    """(function, call) of every `receiver.name(...)` call in the project but those on `self`
    or `cls`, found once per method name: the questions above are asked for many classes
    with the same few release names."""
    suffix = "." + name

    def make() -> list:
        return [(function, call) for function in index.functions.values() for call in function.calls
                if call.endswith(suffix) and call[:-len(suffix)] not in ("", "self", "cls")]
    return index.memo(f"calls of .{name}()", make)


def _attributes_built(index) -> dict[str, set[str]]:
    """Class -> the attributes some class assigns an instance of it (`self.x = Cls(...)`, or
    a function annotated to return one), made once per index."""
    def make() -> dict[str, set[str]]:
        table: dict[str, set[str]] = {}
        for summary in index.classes.values():
            for attr, makers in summary.attributes.items():
                for maker in makers:
                    for built in _built_by(index, maker):
                        table.setdefault(built, set()).add(attr)
        return table
    return index.memo("attributes built", make)


def called_on_instance(index, key: tuple[str, str]) -> bool:
    """Does code anywhere in the project call method `name` of the class `qualified` on
    what it can be told is an instance (see `_instance_calls`)? A question for
    `ProjectIndex.ask`."""
    qualified, name = key
    return next(_instance_calls(index, qualified, name), None) is not None


def released_last(index, key: tuple[str, str]) -> bool:
    """Is method `name` of the class `qualified` called on instances only as the last
    statement of the function that made the instance a local (`v = Cls(...)` ...
    `v.name()`), the local not handed on nor returned? Then nothing keeps the instance
    after its release. False when no such call is seen, or when any call may be on an
    instance that lives on (`self.x.name()` where a class keeps one). For `ProjectIndex.ask`."""
    qualified, name = key
    seen = False
    for function, receiver in _instance_calls(index, qualified, name):
        if receiver is None or not _ends_with_release(index, function, receiver, name):
            return False
        seen = True
    return seen


def _ends_with_release(index, function, variable: str, name: str) -> bool:
    """Is `variable.name()` the last statement of `function`, and is `variable` only ever
    read for its attributes (`v.train()`, `v.model`) - never handed on, stored or returned?"""
    node = _function_node(index, function)
    if node is None or not node.body:
        return False
    arguments = node.args
    if variable in {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}:
        return False  # the caller's instance: it lives on
    last = node.body[-1]
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            and isinstance(last.value.func, ast.Attribute) and last.value.func.attr == name
            and isinstance(last.value.func.value, ast.Name) and last.value.func.value.id == variable):
        return False
    read_for_attributes = {id(n.value) for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    return all(id(n) in read_for_attributes for n in ast.walk(node)
               if isinstance(n, ast.Name) and n.id == variable and isinstance(n.ctx, ast.Load))


def _function_node(index, function):
    parsed = index.tree(function.path)
    if parsed is None:
        return None
    return next((n for n in ast.walk(parsed) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.lineno == function.line), None)


def _built_by(index, maker: str) -> set[str]:
    """The classes calling `maker` gives an instance of: the class itself, or what a
    function is annotated to return."""
    resolved = index.resolve(maker) or maker
    function = index.functions.get(resolved) if "." in resolved else None
    returns = {index.resolve(r) for r in function.returns} if function is not None else set()
    return {resolved, *(r for r in returns if r)}


def _builds(index, maker: str, qualified: str) -> bool:
    """Does calling `maker` give an instance of `qualified`?"""
    return qualified in _built_by(index, maker)


def _binds_instance(index, function, variable: str, qualified: str) -> bool:
    """Does `function` bind the local `variable` to an instance of `qualified`
    (`v = Cls(...)`, `v: Cls`, a parameter annotated `Cls`)? Read with `ast`."""
    file = index.files.get(os.path.abspath(function.path))
    node = _function_node(index, function) if file is not None else None
    if node is None:
        return False

    def names_class(expr) -> bool:
        return expr is not None and any(
            isinstance(n, (ast.Name, ast.Attribute)) and index.resolve(qualified_in(file, n)) == qualified
            for n in ast.walk(expr))

    arguments = node.args
    for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        if arg.arg == variable and names_class(arg.annotation):
            return True
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and any(
                isinstance(t, ast.Name) and t.id == variable for t in n.targets):
            maker = qualified_in(file, n.value.func)
            if maker and _builds(index, maker, qualified):
                return True
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == variable \
                and names_class(n.annotation):
            return True
    return False
