"""How the file makes instances of its classes (at module level, as a singleton, once by
an entry point, one per key in a module dict, otherwise), and which functions are the
process's entry points: collected during the traversal, for the lifetime judgement."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import decorator_names
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.rules.rl203_global_callback_pins_instance.facts import FileFacts


class Instantiation:
    """Records, for each call of a class of the file, how it makes its instance."""

    def __init__(self, ctx, facts: FileFacts) -> None:
        self.ctx = ctx
        self.facts = facts

    def record(self, name: str, call: cst.Call) -> None:
        scope = self.ctx.scope
        fn = scope.function
        if fn is None:
            kind = "module" if not scope.classes else "other"
        elif self._cached(fn) or self._assigns_global(fn):
            kind = "singleton"
        else:
            registry = self._kept_in_registry(fn, call)
            if registry is not None:
                kind = f"registry:{registry}"
            elif len(scope.functions) == 1 and not scope.classes and not self._in_loop(call):
                kind = f"entry:{fn.name.value}"  # once per call of a module-level function
            else:
                kind = "other"
        self.facts.instantiated.setdefault(name, set()).add(kind)

    def _in_loop(self, call: cst.Call) -> bool:
        """Is `call` in a loop (or a comprehension) of the innermost function?"""
        statements = self.ctx.scope.statements
        fn = self.ctx.scope.function
        inner = statements[statements.index(fn) + 1:] if fn in statements else statements
        if any(isinstance(s, (cst.For, cst.While)) for s in inner):
            return True
        statement = self.ctx.scope.statement
        return statement is not None and any(
            isinstance(n, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp))
            and any(m is call for m in iter_nodes(n))
            for n in iter_nodes(statement))

    def _kept_in_registry(self, fn: cst.FunctionDef, call: cst.Call) -> Optional[str]:
        """The module dict the new instance is stored in by the function that makes it:
        `_R[key] = Cls(...)`, `x = Cls(...)` then `_R[key] = x`, `_R.setdefault(key, x)`."""
        statement = self.ctx.scope.statement
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        names: set[str] = set()
        for small in statement.body:
            if isinstance(small, cst.Assign) and small.value is call:
                for t in small.targets:
                    registry = self._registry_item(fn, t.target)
                    if registry is not None:
                        return registry
                    if isinstance(t.target, cst.Name):
                        names.add(t.target.value)
        for node in iter_nodes(fn.body):
            if isinstance(node, cst.Assign) and _is_value(node.value, call, names):
                for t in node.targets:
                    registry = self._registry_item(fn, t.target)
                    if registry is not None:
                        return registry
            elif (
                isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "setdefault" and len(node.args) == 2
                and _is_value(node.args[1].value, call, names)
            ):
                registry = node.func.value
                if isinstance(registry, cst.Name) and self._module_registry(registry.value, fn):
                    return registry.value
        return None

    def _registry_item(self, fn: cst.FunctionDef, target: cst.BaseExpression) -> Optional[str]:
        """`_R[key]` for a module dict `_R`: its name."""
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                and self._module_registry(target.value.value, fn):
            return target.value.value
        return None

    def _module_registry(self, name: str, fn: cst.FunctionDef) -> bool:
        return name in self.facts.registries and not self.facts.local(name, fn)

    def _cached(self, fn: cst.FunctionDef) -> bool:
        return any(self.ctx.index.is_cache_decorator(d) for d in decorator_names(self.ctx, fn))

    def _assigns_global(self, fn: cst.FunctionDef) -> bool:
        """`global _x` then `_x = Cls(...)` in this statement."""
        statement = self.ctx.scope.statement
        names = self.facts.global_names.get(id(fn), set())
        if not names or not isinstance(statement, cst.SimpleStatementLine):
            return False
        return any(
            isinstance(small, cst.Assign)
            and any(isinstance(t.target, cst.Name) and t.target.value in names for t in small.targets)
            for small in statement.body
        )


def is_main_guard(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    return any(isinstance(x, cst.Name) and x.value == "__name__" for x in sides) and any(
        isinstance(x, cst.SimpleString) and x.evaluated_value == "__main__" for x in sides)


def called_names(node: cst.CSTNode) -> set[str]:
    """Functions called by bare name anywhere under `node`."""
    return {n.func.value for n in iter_nodes(node) if isinstance(n, cst.Call) and isinstance(n.func, cst.Name)}


def process_target(call: cst.Call) -> Optional[str]:
    """`Process(target=run)`, `ctx.Process(target=run, ...)`: the function a new process runs."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if name != "Process":
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "target" and isinstance(arg.value, cst.Name):
            return arg.value.value
    return None


def _is_value(value: cst.BaseExpression, call: cst.Call, names: set[str]) -> bool:
    """Is `value` the instance `call` makes: the call itself or a name it was bound to?"""
    return value is call or (isinstance(value, cst.Name) and value.value in names)
