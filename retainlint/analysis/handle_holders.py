"""What holds the handle(s) of one hook registration inside a function - locals,
attributes, containers (`_Handle`) - and whether a statement removes them; with what a
function binds (`_bindings`) and its nested functions (`nested_function`), which
`retainlint.analysis.hooks` asks too."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from retainlint.analysis.context import FileContext
from retainlint.analysis.exit_paths import _test_key
from retainlint.analysis.handle_facts import _CONTAINER_ADD, _MAPPING_ADD, _REMOVING_WORDS
from retainlint.analysis.hook_exprs import _value_parts, iter_nodes, target_names
from retainlint.analysis.walk import children


class _Handle:
    """What holds the handle(s) of one registration in a function: local names, and
    attributes or containers written as code (`self._handle`, `self._hooks`)."""

    _METHODS = frozenset({"pop", "popitem", "values", "items", "copy"})  # hand its handles out

    def __init__(self, ctx: FileContext, scope: cst.FunctionDef, call: cst.Call) -> None:
        self.ctx = ctx
        self.call = call
        self.names: set[str] = set()
        self.attrs: set[str] = set()
        bindings = list(_bindings(scope))
        for _ in range(4):  # a few rounds: chains of locals
            before = len(self.names) + len(self.attrs)
            for targets, value in bindings:
                if self.held(value):
                    for target in targets:
                        self._add(target)
            if len(self.names) + len(self.attrs) == before:
                break

    def _add(self, target: cst.CSTNode) -> None:
        if isinstance(target, cst.Subscript):  # `handles[key] = ...`: the container holds it
            target = target.value
        if isinstance(target, cst.Attribute):
            self.attrs.add(_test_key(self.ctx, target))
        else:
            self.names |= target_names(target)

    def held(self, expr: cst.CSTNode) -> bool:
        """Does `expr` evaluate to (or hold) the handle?"""
        if expr is self.call:
            return True
        if isinstance(expr, cst.Name):
            return expr.value in self.names
        if isinstance(expr, cst.Attribute):
            return bool(self.attrs) and _test_key(self.ctx, expr) in self.attrs
        if isinstance(expr, cst.Subscript):
            return self.held(expr.value)
        if isinstance(expr, cst.Call):
            func = expr.func
            return isinstance(func, cst.Attribute) and func.attr.value in self._METHODS and self.held(func.value)
        return any(self.held(part) for part in _value_parts(expr))

    def removed_in(self, node: cst.CSTNode) -> bool:
        """Does `node` call `.remove()` on the handle, or hand it to a function that
        removes it (`remove_hooks(handles)`)? Lambdas, which may never run, do not count."""
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Lambda):
                continue
            if isinstance(current, cst.Call) and self._removes(current):
                return True
            stack.extend(children(current))
        return False

    def _removes(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "remove" and not call.args:
            return self.held(func.value)
        callee = func.attr.value if isinstance(func, cst.Attribute) else (
            func.value if isinstance(func, cst.Name) else "")
        return any(w in callee.lower() for w in _REMOVING_WORDS) and any(
            self.held(arg.value) for arg in call.args)

    def undoes(self, statement: cst.CSTNode) -> bool:
        """Does running `statement` remove the handle (a loop over the handles removing
        each, `with handle:`, a statement that removes it)?"""
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return self.removed_in(statement)
        if isinstance(statement, cst.For):
            return self.held(statement.iter) and self.removed_in(statement.body)
        if isinstance(statement, cst.With):
            return any(self.held(item.item) for item in statement.items)
        return False

    def truth(self, test: cst.BaseExpression) -> Optional[bool]:
        """`if handle:` / `if handle is not None:` hold wherever the handle was made."""
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            target = test.comparisons[0]
            if isinstance(target.comparator, cst.Name) and target.comparator.value == "None" \
                    and self.held(test.left):
                if isinstance(target.operator, cst.IsNot):
                    return True
                if isinstance(target.operator, cst.Is):
                    return False
            return None
        return True if self.held(test) else None


def _bindings(scope: cst.CSTNode) -> Iterator[tuple[list[cst.CSTNode], cst.CSTNode]]:
    """(targets, value) for what the function (its nested functions included) binds or
    stores: assignments, loop targets, `with ... as`, and `x.append(v)`-style adds."""
    for node in iter_nodes(scope):
        if isinstance(node, cst.Assign):
            yield [t.target for t in node.targets], node.value
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)) and node.value is not None:
            yield [node.target], node.value
        elif isinstance(node, cst.NamedExpr):
            yield [node.target], node.value
        elif isinstance(node, (cst.For, cst.CompFor)):
            yield [node.target], node.iter
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            yield [node.asname.name], node.item
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value in _CONTAINER_ADD | _MAPPING_ADD:
            for arg in node.args:
                yield [node.func.value], arg.value


def nested_function(scope: cst.CSTNode, name: str) -> Optional[cst.FunctionDef]:
    """The first function named `name` defined anywhere inside `scope` (not `scope` itself)."""
    for node in iter_nodes(scope):
        if isinstance(node, cst.FunctionDef) and node is not scope and node.name.value == name:
            return node
    return None
