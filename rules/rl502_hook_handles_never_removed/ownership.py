"""RL502's exemptions for handles removed through the instance or owned by the hooked
model: a module-level hook function that removes the instance's handles itself; the
parameters of `__init__` a hooked object is taken from; and the `ProjectIndex.ask`
question whether every instance of the helper is handed its owner's own submodules
(read with `ast`)."""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from retainlint.analysis.hook_exprs import iter_nodes, names_in, target_names
from retainlint.project.index import qualified_in


def _removes_instance_handles(fn: cst.FunctionDef, class_name: str, attr: str) -> bool:
    """Does `fn` call `.remove()` on the handles in `<x>.<attr>` (directly, or on the loop
    variable over them), where `x` is a local obtained through the class (`Cls(...)`,
    `Cls.get_instance()`, `Cls._instance`)?"""
    instances = {name for name, values in _bindings(fn).items()
                 if any(class_name in names_in(v) for v in values)}
    if not instances:
        return False

    def of_instance(expr: cst.CSTNode) -> bool:
        return any(isinstance(n, cst.Attribute) and n.attr.value == attr and isinstance(n.value, cst.Name)
                   and n.value.value in instances for n in iter_nodes(expr))

    loop_vars = {name for node in iter_nodes(fn.body) if isinstance(node, cst.For) and of_instance(node.iter)
                 for name in target_names(node.target)}
    for node in iter_nodes(fn.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value == "remove" and not node.args:
            handle = node.func.value
            if (isinstance(handle, cst.Name) and handle.value in loop_vars) or of_instance(handle):
                return True
    return False


def _bindings(fn: cst.FunctionDef) -> dict[str, list[cst.CSTNode]]:
    """Local name -> the expressions it is bound to in `fn` (assignments, loop and
    comprehension targets: the iterable), nested functions included."""
    found: dict[str, list[cst.CSTNode]] = {}
    for node in iter_nodes(fn.body):
        pairs = []
        if isinstance(node, cst.Assign):
            pairs = [(t.target, node.value) for t in node.targets]
        elif isinstance(node, (cst.AnnAssign, cst.NamedExpr)) and node.value is not None:
            pairs = [(node.target, node.value)]
        elif isinstance(node, (cst.For, cst.CompFor)):
            pairs = [(node.target, node.iter)]
        for target, value in pairs:
            for name in target_names(target):
                found.setdefault(name, []).append(value)
    return found


def _parameters_feeding(method: cst.FunctionDef, expr: cst.BaseExpression) -> Optional[set[str]]:
    """The parameters of `method` an object is taken from (through locals; the keys it is
    looked up with aside), or None when it also reads something else (`self`, a global)."""
    params = method.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    names.discard("self")
    bindings = _bindings(method)
    seen: set[str] = set()

    def feeding(node: cst.CSTNode, depth: int) -> Optional[set[str]]:
        if depth > 6:
            return None
        while isinstance(node, cst.Subscript):  # `modules[name]`: the object, not the key
            node = node.value
        used = names_in(node)
        if "self" in used:
            return None
        found: set[str] = set()
        for name in used:
            if name in names:
                found.add(name)
            elif name in bindings and name not in seen:
                seen.add(name)
                for value in bindings[name]:
                    sub = feeding(value, depth + 1)
                    if sub is None:
                        return None
                    found |= sub
            elif name not in bindings and name not in _BUILTIN_CALLS:
                return None  # a global: not handed in
        return found

    return feeding(expr, 0)


# builtins that only repackage what they are handed (`dict(named_modules)`)
_BUILTIN_CALLS = frozenset({"dict", "list", "tuple", "iter", "enumerate", "zip", "sorted", "reversed",
                            "getattr", "isinstance", "str", "int", "len", "range"})


def owned_by_hooked_module(index, key: tuple[str, tuple[tuple[str, int], ...]]) -> bool:
    """Is every project instantiation of class `qualified` (key[0]) stored on `self` by a
    method of a heavy class (a module) that hands it, for each parameter in key[1] (name,
    position after `self`; -1: keyword only), something of its own (`self.named_modules()`,
    `self.blocks`, `self`)? A `ProjectIndex.ask` question, read with `ast`."""
    qualified, params = key
    name = qualified.rpartition(".")[2]
    makers = [f for f in index.functions.values()
              if any(c.rpartition(".")[2] == name and (index.resolve(c) or c) == qualified for c in f.calls)]
    if not makers:
        return False
    for maker in makers:
        owner = maker.qualname.rpartition(".")[0]
        if not maker.is_method or not index.is_heavy_class(owner):
            return False
        summary = index.files.get(maker.path)
        source = index.source(maker.path)
        fn = next((n for n in ast.walk(source[0]) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and n.lineno == maker.line), None) if source is not None else None
        if fn is None or not _hands_own_modules(index, summary, fn, qualified, params):
            return False
    return True


def _hands_own_modules(index, summary, fn: ast.AST, qualified: str, params) -> bool:
    """In `fn`, is every call of `qualified` stored on `self` and handed the owner's own
    modules for `params`?"""
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)
             and (index.resolve(qualified_in(summary, n.func)) or qualified_in(summary, n.func)) == qualified]
    stored = {id(n.value) for n in ast.walk(fn) if isinstance(n, ast.Assign)
              and all(_on_self(t) for t in n.targets)}
    for call in calls:
        if id(call) not in stored:
            return False
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        for name, position in params:
            arg = keywords.get(name)
            if arg is None and 0 <= position < len(call.args):
                arg = call.args[position]
            if arg is None or not _rooted_at_self(arg):
                return False
    return True


def _on_self(target: ast.AST) -> bool:
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"


def _rooted_at_self(expr: ast.AST) -> bool:
    """`self`, `self.blocks`, `self.named_modules()`, `self.layers[0]`."""
    while isinstance(expr, (ast.Attribute, ast.Call, ast.Subscript)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return isinstance(expr, ast.Name) and expr.id == "self"
