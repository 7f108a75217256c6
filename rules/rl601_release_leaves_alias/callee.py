"""RL601: does a project callee keep what it is handed (store it on an object, return
it, capture it in a closure, hand it to a method of another object)? Read from the
callee's source with `ast`."""

from __future__ import annotations

import ast
import os
import sys
from typing import Optional

from retainlint.project.index import qualified_in
from retainlint.rules.prefilters.rl601 import READ_ONLY_METHODS, SCALAR_CALLS, scalar_name

# Attribute names that are methods on any model-like object.
METHOD_NAMES = frozenset({"forward", "__call__"})


# (The project index records no data flow, so the callee's source is read with `ast`,
# once per file and only for calls that hand over a released attribute.)
_MAX_CALLEE_DEPTH = 4


def _function_node(index, summary) -> Optional[ast.AST]:
    found = index.source(summary.path)
    if found is None:
        return None
    tree = found[0]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == summary.line \
                and node.col_offset + 1 == summary.column:
            return node
    return None


def methods_named(index, name: str) -> list:
    """Every project method called `name` (asked of the index as one project-wide question)."""
    return index.ask(_all_methods_named, name)


def _all_methods_named(index, name: str) -> list:
    return index.memo("rl601 methods by name", lambda: _methods_by_name(index)).get(name, [])


def _methods_by_name(index) -> dict[str, list]:
    table: dict[str, list] = {}
    for q, f in index.functions.items():
        if f.is_method:
            table.setdefault(q.rsplit(".", 1)[1], []).append(f)
    return table


def from_inner_root(index, qualified: Optional[str], importer: Optional[str]) -> Optional[str]:
    """`core.patience.f` imported by `app.core.run`, a project run with `app/` itself on
    `sys.path` (its modules import each other without the `app.` prefix): the project's
    `app.core.patience.f`, looked for under the importer's own packages, innermost first.
    None when there is none (a name of the standard library never is one)."""
    if not qualified or not importer or qualified.split(".", 1)[0] in sys.stdlib_module_names:
        return None
    packages = importer.split(".")[:-1]
    for end in range(len(packages), 0, -1):
        found = index.resolve(".".join(packages[:end]) + "." + qualified)
        if found in index.classes or found in index.functions:
            return found
    return None


def _ast_root(node: ast.AST) -> Optional[ast.AST]:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


class Escape:
    """Does parameter `param` of a project function escape it (stored on an object,
    returned, captured by a closure, handed to a method of another object)?"""

    def __init__(self, index) -> None:
        self.index = index
        self.known: dict[tuple, bool] = index.memo("rl601 escapes", dict)
        self.active: dict[tuple, int] = {}  # functions being judged -> depth on that stack
        self.low = 1 << 30  # the shallowest of them the current judgement went back to

    def callee_keeps(self, qualified: Optional[str], position: Optional[int],
                     keyword: Optional[str], depth: int = 0, importer: Optional[str] = None) -> bool:
        """Does calling project function/class `qualified` (named in module `importer`)
        keep the argument? True when unknown."""
        resolved = self.index.resolve(qualified)
        if resolved not in self.index.classes and resolved not in self.index.functions:
            resolved = from_inner_root(self.index, qualified, importer) or resolved
        if not resolved:
            return True
        cls = self.index.classes.get(resolved)
        if cls is not None:
            seen = 0
            while cls is not None and "__init__" not in cls.methods and seen < 6:
                seen += 1
                bases = [self.index.resolve(b) for b in cls.bases]
                cls = next((self.index.classes[b] for b in bases if b in self.index.classes), None)
            if cls is None:
                return True
            return self.keeps(cls.methods["__init__"], position, keyword, True, depth)
        function = self.index.functions.get(resolved)
        if function is None:
            return True
        return self.keeps(function, position, keyword, function.is_method, depth)

    def keeps(self, summary, position, keyword, skip_first: bool, depth: int,
              returns: bool = True) -> bool:
        """With `returns` False: does the call leave a reference behind, on its receiver
        or anything it reaches? What the call returns is the caller's to judge where the
        result goes (`self.lease = self.pool.lease(size=n)` holds `n` in the lease, not
        in the pool)."""
        key = (summary.qualname, summary.path, position, keyword, returns)
        if key in self.known:
            return self.known[key]
        if key in self.active:
            # A cycle (`send_parts` handing on to another object's `send_parts`): going
            # round it adds no store, so it counts for nothing; what was judged under that
            # assumption is only remembered once the cycle's first function has its answer.
            self.low = min(self.low, self.active[key])
            return False
        mine, outer = len(self.active), self.low
        self.active[key] = mine
        self.low = mine
        result = self._keeps(summary, position, keyword, skip_first, depth, returns)
        del self.active[key]
        if result or self.low >= mine:
            self.known[key] = result
        self.low = min(outer, self.low)
        return result

    def _keeps(self, summary, position, keyword, skip_first, depth, returns) -> bool:
        if depth > _MAX_CALLEE_DEPTH:
            return True
        fn = _function_node(self.index, summary)
        if fn is None:
            return True
        args = fn.args
        positional = [*args.posonlyargs, *args.args]
        if skip_first and positional:
            positional = positional[1:]
        if keyword is not None:
            names = [a.arg for a in (*positional, *args.kwonlyargs)]
            if keyword not in names:
                return args.kwarg is not None
            param = keyword
        elif position is not None:
            if position >= len(positional):
                return args.vararg is not None
            param = positional[position].arg
        else:
            return True
        file = self.index.files.get(os.path.abspath(summary.path))
        tracked = {param}
        body = list(ast.walk(ast.Module(body=fn.body, type_ignores=[])))
        for _ in range(3):  # locals derived from the parameter
            for node in body:
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if self.holds(file, node.value, tracked, depth):
                        for t in targets:
                            for n in ast.walk(t):
                                if isinstance(n, (ast.Attribute, ast.Subscript)):
                                    break
                                if isinstance(n, ast.Name) and n.id != "self":
                                    tracked.add(n.id)
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    if self.holds(file, node.iter, tracked, depth) or (
                            isinstance(node.iter, ast.Call) and any(
                                isinstance(a, ast.Name) and a.id in tracked for a in node.iter.args)):
                        for n in ast.walk(node.target):
                            if isinstance(n, ast.Name) and n.id != "self":
                                tracked.add(n.id)
        for node in body:
            if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) and node.value is not None:
                if returns and self.holds(file, node.value, tracked, depth):
                    return True
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets) and \
                        self.holds(file, node.value, tracked, depth):
                    return True
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node is not fn:
                if any(isinstance(n, ast.Name) and n.id in tracked for n in ast.walk(node)):
                    return True
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in READ_ONLY_METHODS:
                    continue
                root = _ast_root(node.func.value)
                if isinstance(root, ast.Name) and root.id in tracked:
                    continue  # a method of the argument itself
                if isinstance(root, ast.Name) and file is not None and root.id in file.imports:
                    continue  # a module function: judged where its result goes
                if isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name) \
                        and node.func.value.func.id == "super":
                    if any(self.holds(file, a, tracked, depth) for a in node.args) or any(
                            self.holds(file, k.value, tracked, depth) for k in node.keywords):
                        return True
                    continue
                # what the method returns is judged where it goes: an assignment or a
                # `return` above, an argument of a call (`holds`)
                for i, a in enumerate(node.args):
                    if self.holds(file, a, tracked, depth):
                        methods = methods_named(self.index, node.func.attr)
                        if not methods or any(self.keeps(m, i, None, True, depth + 1, False) for m in methods):
                            return True
                for k in node.keywords:
                    if self.holds(file, k.value, tracked, depth):
                        methods = methods_named(self.index, node.func.attr)
                        if not methods or any(self.keeps(m, None, k.arg, True, depth + 1, False)
                                              for m in methods):
                            return True
        return False

    def holds(self, file, expr: ast.AST, tracked: set, depth: int) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in tracked
        if isinstance(expr, ast.Attribute):
            return isinstance(expr.value, ast.Name) and expr.value.id in tracked and \
                expr.attr in METHOD_NAMES
        if isinstance(expr, ast.Starred):
            return self.holds(file, expr.value, tracked, depth)
        if isinstance(expr, ast.Await):
            return self.holds(file, expr.value, tracked, depth)
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            return any(self.holds(file, e, tracked, depth) for e in expr.elts)
        if isinstance(expr, ast.Dict):
            return any(self.holds(file, e, tracked, depth) for e in (*expr.keys, *expr.values) if e is not None)
        if isinstance(expr, ast.IfExp):
            return self.holds(file, expr.body, tracked, depth) or self.holds(file, expr.orelse, tracked, depth)
        if isinstance(expr, ast.BoolOp):
            return any(self.holds(file, e, tracked, depth) for e in expr.values)
        if isinstance(expr, ast.NamedExpr):
            return self.holds(file, expr.value, tracked, depth)
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            inner = set(tracked)
            for gen in expr.generators:
                if isinstance(gen.iter, ast.Name) and gen.iter.id in tracked:
                    inner |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
            return self.holds(file, expr.elt, inner, depth)
        if isinstance(expr, ast.Call):
            q = qualified_in(file, expr.func)
            importer = file.module if file is not None else None
            if q in SCALAR_CALLS or scalar_name(q):
                return False
            if isinstance(expr.func, ast.Attribute):
                root = _ast_root(expr.func.value)
                if isinstance(root, ast.Name) and root.id in tracked:
                    return False  # a value computed by the argument's method
            for i, a in enumerate(expr.args):
                if self.holds(file, a, tracked, depth):
                    if isinstance(a, ast.Starred):
                        return True
                    if self.callee_keeps(q, i, None, depth + 1, importer):
                        return True
            for k in expr.keywords:
                if self.holds(file, k.value, tracked, depth):
                    if k.arg is None or self.callee_keeps(q, None, k.arg, depth + 1, importer):
                        return True
            return False
        return False
