"""RL102's singletons: classes whose only instance lives for the whole process, so a
cache on their methods keeps nothing longer than it lives anyway - counting the calls
that make a class in a module, and the `ProjectIndex.ask` questions over the whole
project: a class and its subclasses, and whether their instances are only ever made
to fill a module-global singleton slot."""

from __future__ import annotations

import ast
import weakref
from typing import Any

import libcst as cst

from retainlint.project.class_family import class_family, member_of


class _Instantiations(cst.CSTVisitor):
    """Calls of bare names (`Foo(...)`) anywhere in a module."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self.calls[node.func.value] = self.calls.get(node.func.value, 0) + 1


# -- process-wide singletons, across the project (`ProjectIndex.ask` questions) ------------


def process_singleton(index, key: tuple[str, str, frozenset[str]]) -> bool:
    """Are the instances of project class `qualified` (and of its project subclasses) only
    ever made by functions that publish them in a module-global singleton slot (`global
    _x; _x = X()`, or a slot typed with the class filled through a class chosen at run
    time), anywhere in the project? Made by no other function, test modules aside: a
    test's throwaway instances say nothing about how many the program makes. `key`: the
    class, the file being linted and its slot fillers (read from the file as linted)."""
    qualified, here, own = key
    family = class_family(index, qualified)
    fillers = set(own) | _slot_fillers(index, family, here)
    if not fillers:
        return False
    calls = _calls_by_name(index)
    for name in {q.rpartition(".")[2] for q in family}:
        for function, call in calls.get(name, ()):
            if function not in fillers and member_of(index, call, family):
                return False
    return True


_CALLS_BY_NAME: "weakref.WeakKeyDictionary[Any, dict[str, list[tuple[str, str]]]]" = \
    weakref.WeakKeyDictionary()


def _calls_by_name(index) -> dict[str, list[tuple[str, str]]]:
    """Last name of a callee -> (function, the callee as it spells it) for every call in
    the project's functions outside test modules: read once per index, not once per class."""
    found = _CALLS_BY_NAME.get(index)
    if found is None:
        found = {}
        for function in index.functions.values():
            if _test_module(index.module_of(function.path)):
                continue
            for call in function.calls:
                found.setdefault(call.rpartition(".")[2], []).append((function.qualname, call))
        _CALLS_BY_NAME[index] = found
    return found


def _slot_fillers(index, family: frozenset[str], here: str) -> set[str]:
    """The slot fillers (`_fillers_in`) of the project's files other than `here`; only the
    files that define or import a class of `family` are read."""
    fillers: set[str] = set()
    for summary in index.files.values():
        if summary.path != here and _local_names(index, summary, family):
            source = index.source(summary.path)
            if source is not None:
                fillers |= _fillers_in(index, summary, source[0], family)
    return fillers


def _local_names(index, summary, family: frozenset[str]) -> set[str]:
    """The names a file knows the classes of `family` by (defined or imported)."""
    names = {q.rpartition(".")[2] for q in family}
    defined = _defined_names(index, summary)
    local = {n for q in family for n in defined.get(q, ())}
    return local | {n for n, target in summary.imports.items()
                    if target.rpartition(".")[2] in names and member_of(index, target, family)}


def _fillers_in(index, summary, tree: ast.Module, family: frozenset[str]) -> set[str]:
    """Qualified names of the file's module-level functions that publish an instance of
    a class of `family` in a module global (`global _x` then `_x = ...`): a global typed
    with one of the classes, or assigned a call of one."""
    local = _local_names(index, summary, family)
    if not local:
        return set()
    by_mention, by_global, by_made = _slots_of(tree)
    typed = {name for mention in local for name in by_mention.get(mention, ())}
    fillers = {fn for made in local for fn in by_made.get(made, ())}
    fillers.update(fn for name in typed for fn in by_global.get(name, ()))
    return {f"{summary.module}.{fn}" for fn in fillers}


_SLOTS = "_retainlint_slots"  # where `_slots_of` keeps its answer: on the tree, dying with it


def _slots_of(tree: ast.Module) -> tuple[dict[str, set[str]], dict[str, set[str]],
                                         dict[str, set[str]]]:
    """Read once per tree (a file with many classes asks once per class): a name an
    annotation of a module global mentions -> those globals; a global -> the module-level
    functions assigning it under `global`; a name called (`X()`) in such an assignment ->
    those functions."""
    kept = getattr(tree, _SLOTS, None)
    if kept is not None:
        return kept  # type: ignore[no-any-return]
    by_mention: dict[str, set[str]] = {}
    for s in tree.body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
            for mention in _names(s.annotation):
                by_mention.setdefault(mention, set()).add(s.target.id)
    by_global: dict[str, set[str]] = {}
    by_made: dict[str, set[str]] = {}
    for fn in tree.body:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for name, value in _global_writes(fn):
                by_global.setdefault(name, set()).add(fn.name)
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                    by_made.setdefault(value.func.id, set()).add(fn.name)
    setattr(tree, _SLOTS, (by_mention, by_global, by_made))
    return by_mention, by_global, by_made


# index -> path -> (a file summary, qualified name -> the names the file defines it by)
_DEFINED: "weakref.WeakKeyDictionary[Any, dict[str, tuple[Any, dict[str, list[str]]]]]" = \
    weakref.WeakKeyDictionary()


def _defined_names(index, summary) -> dict[str, list[str]]:
    """Qualified name -> the names a file's summary defines that class by, read once."""
    files = _DEFINED.get(index)
    if files is None:
        files = _DEFINED[index] = {}
    kept = files.get(summary.path)
    if kept is not None and kept[0] is summary:
        return kept[1]
    found: dict[str, list[str]] = {}
    for n, c in summary.classes.items():
        found.setdefault(c.qualname, []).append(n)
    files[summary.path] = (summary, found)
    return found


def _global_writes(fn: ast.AST) -> list[tuple[str, ast.AST]]:
    """The (name, value) of each assignment in `fn` to a name it declares `global`."""
    declared = {n for node in ast.walk(fn) if isinstance(node, ast.Global) for n in node.names}
    if not declared:
        return []
    return [(target.id, node.value) for node in ast.walk(fn) if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name) and target.id in declared]


def _names(annotation: ast.AST) -> set[str]:
    """Names an annotation mentions (`Platform | None`, `Optional["Platform"]`)."""
    found = set()
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                found |= _names(ast.parse(node.value, mode="eval"))
            except (SyntaxError, ValueError):
                pass
    return found


def _test_module(module: str) -> bool:
    """`pkg.tests.test_x`, `test_x`, `x_test`, `conftest`: a test module."""
    parts = module.split(".")
    last = parts[-1]
    return (any(p in ("test", "tests") for p in parts) or last.startswith("test_")
            or last.endswith("_test") or last == "conftest")
