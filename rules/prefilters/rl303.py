"""RL303's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl303_heavy_singleton_never_reset.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast
import bisect
from typing import Callable

from retainlint.project.container_scan import (
    Evidence,
    innermost_function,
    might_be_heavy,
    names_heavy_type,
)
from retainlint.project.nodes import dotted as ast_dotted
from retainlint.project.prefilter import Prefilter


def used_anywhere(index, name: str) -> bool:
    """Does any project function call, or any file import, something named `name`? (A
    reset function whose name is in none of them, nor used in its own file, is dead code.)"""
    return name in index.memo("names used anywhere", lambda: _used_names(index))


def _used_names(index) -> frozenset[str]:
    """Simple names of everything any project function calls or any file imports."""
    found: set[str] = set()
    for f in index.functions.values():
        found.update(c.rsplit(".", 1)[-1] for c in f.calls)
    for summary in index.files.values():
        found.update(v.rsplit(".", 1)[-1] for v in summary.imports.values())
    return frozenset(found)


def imported_as_module(index, key: tuple[str, str]) -> bool:
    """Does another project file bind `module` itself (`from pkg import mod`,
    `import pkg.mod as m`), so that it could write `mod.X = None`? (A plain
    `import pkg.mod` is recorded as binding `pkg` only, like every `import pkg.other`:
    not counted, or every public global of a package would be exempt.)"""
    module, here = key
    for path, summary in index.files.items():
        if summary.module == here:
            continue
        if module in summary.imports.values():
            return True
    return False



def _covering(spans: set[tuple[int, int]]) -> "Callable[[int], bool]":
    """Is a line inside one of `spans` (first, last line)? The spans merged and searched
    by bisection: a test per span took a time of their number for each assignment."""
    merged: list[list[int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    starts = [first for first, _ in merged]

    def covered(line: int) -> bool:
        at = bisect.bisect_right(starts, line) - 1
        return at >= 0 and line <= merged[at][1]
    return covered

class HeavySingletonNeverResetPrefilter(Prefilter):
    code = "RL303"

    # `global _x` in a function; `@functools.cache` / `@lru_cache` on a module-level one
    triggers = ("global ", "cache")

    scans = True

    @classmethod
    def scan(cls, nodes):
        """Per name a function declares `global`: its assignments there (the function,
        and the names that would make the value heavy: see `Evidence`), and the resets
        `leave_Module` counts (`del X`, `X, Y = ...`, `X.clear()`). Resets through
        `globals()` are left out: fewer resets only let more files through."""
        cached = _cached_returns(nodes)
        declared: dict[int, set[str]] = {}
        spans = set()
        for node in nodes.of(ast.Global):
            fn, _ = innermost_function(nodes, node)
            if fn is not None:
                declared.setdefault(id(fn), set()).update(node.names)
                spans.add((fn.lineno, fn.end_lineno))
        if not declared:
            return ((), frozenset(), cached) if cached else None
        evidence = Evidence(nodes)
        top = evidence.functions
        assigns: dict[str, list] = {}
        resets: dict[str, list] = {}

        def where(fn) -> tuple:
            # the function, and its name if it is a module-level one (a reset elsewhere,
            # in a method or a nested function, is assumed to run)
            return (fn.lineno, fn.col_offset), (fn.name if fn.name in top else None)

        def reset(target, fn, names) -> None:
            if isinstance(target, ast.Name):
                if target.id in names:
                    resets.setdefault(target.id, []).append(where(fn))
            elif isinstance(target, (ast.Tuple, ast.List)):
                for element in target.elts:
                    reset(element, fn, names)
            elif isinstance(target, ast.Starred):
                reset(target.value, fn, names)

        covered = _covering(spans)
        for node in nodes.of(ast.Assign, ast.AnnAssign, ast.Delete):
            if not covered(node.lineno):
                continue
            fn, method_class = innermost_function(nodes, node)
            names = declared.get(id(fn)) if fn is not None else None
            if not names:
                continue
            if type(node) is ast.Delete:
                for target in node.targets:
                    reset(target, fn, names)
                continue
            if node.value is None:
                continue
            for target in (node.targets if type(node) is ast.Assign else (node.target,)):
                if isinstance(target, ast.Name):
                    if target.id in names:
                        found = evidence.fresh()
                        found.value(node.value, fn, method_class)
                        assigns.setdefault(target.id, []).append(
                            (*where(fn), found.result()))
                else:
                    reset(target, fn, names)
        if not assigns:
            return ((), frozenset(), cached) if cached else None
        resetters = {top_name for entries in (*assigns.values(), *resets.values())
                     for _, top_name, *_ in entries if top_name}
        used: set[str] = set()
        for node in nodes.of(ast.Call):
            func = node.func
            if type(func) is ast.Attribute and func.attr == "clear" \
                    and type(func.value) is ast.Name and func.value.id in assigns:
                fn, _ = innermost_function(nodes, node)
                if fn is not None:
                    resets.setdefault(func.value.id, []).append(where(fn))
            if resetters:
                # names this file uses (an under-count of `_name_uses`: calls, arguments)
                for part in (func, *node.args, *(k.value for k in node.keywords)):
                    name = part.id if type(part) is ast.Name else (
                        part.attr if type(part) is ast.Attribute else None)
                    if name in resetters:
                        used.add(name)
        return tuple(sorted((name, tuple(entries), tuple(resets.get(name, ())))
                            for name, entries in assigns.items())), frozenset(used), cached

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """A global a function assigns something that may be heavy, with no reset that
        surely runs (in another function: a method, a nested function, or a module-level
        one called or imported somewhere)."""
        summary = getattr(data, "summary", None)
        if summary is None:
            return ((b"global " in data or b"cache" in data) and names_heavy_type(
                data, ("torch", "transformers"), settings, index)) or (
                b"cache" in data and b"open(" in data and (b"np." in data or b"numpy." in data))
        found = summary.scans.get(cls.code)
        if not found:
            return False
        entries, used, *more = found
        if more and any(names == ARRAY_TABLE or might_be_heavy(names, summary, settings, index)
                        for names in more[0]):
            return True  # a cached function that may return something heavy
        for name, assigns, resets in entries:
            heavy = {fn for fn, _, names in assigns if might_be_heavy(names, summary, settings, index)}
            if not heavy:
                continue
            # the other assignments are resets; none counts in a function that assigns
            # something heavy
            others = [(fn, top) for fn, top, _ in assigns]
            if any(top is None or top in used or index.ask(used_anywhere, top)
                   for fn, top in (*resets, *others) if fn not in heavy):
                continue
            if not name.startswith("_") and index.ask(
                    imported_as_module, (summary.module, summary.module)):
                continue
            return True
        return False


# decorators that memoize a function's results for the life of the process
CACHE_DECORATORS = frozenset({"cache", "lru_cache"})
# methods that hand back the object they are called on (`model.eval()`), or a copy of
# it as heavy as itself (`t.to(device)`)
SAME_OBJECT_METHODS = frozenset(
    {"eval", "train", "to", "cuda", "cpu", "half", "float", "bfloat16", "requires_grad_",
     "share_memory", "contiguous"}
)


def _cached_returns(nodes) -> tuple:
    """For each module-level function decorated `@cache` / `@lru_cache(...)`: the names
    that would make one of its returned values heavy (`Evidence.result`)."""
    found = []
    for fn in nodes.tree.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not any(
                _cache_decorator(d) for d in fn.decorator_list):
            continue
        evidence = Evidence(nodes)
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                while (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                       and value.func.attr in SAME_OBJECT_METHODS):
                    value = value.func.value
                evidence.value(value, fn, None)
        result = evidence.result()
        if result is not None:
            found.append(result)
        elif _may_load_array_table(fn):
            found.append(ARRAY_TABLE)
    return tuple(found)


# `_cached_returns`' entry for a cached loader that may fill a table of arrays from a file
ARRAY_TABLE = "array table"
_ARRAY_MODULES = ("np", "numpy", "torch")


def _may_load_array_table(fn: ast.AST) -> bool:
    """A superset of the rule's `loads_array_table`: the function opens something and
    calls a numpy/torch function inside a loop."""
    opens = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "open"
                for n in ast.walk(fn))
    if not opens:
        return False
    for loop in ast.walk(fn):
        if isinstance(loop, (ast.For, ast.While)):
            for n in ast.walk(loop):
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                        and isinstance(n.func.value, ast.Name) and n.func.value.id in _ARRAY_MODULES):
                    return True
    return False


def _cache_decorator(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        node = node.func
    name = ast_dotted(node)
    return name is not None and name.rpartition(".")[2] in CACHE_DECORATORS
