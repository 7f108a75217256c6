"""The names a function binds and declares `global` or `nonlocal`, nested scopes not
entered (`FunctionNames`, `function_bindings`; `retainlint.analysis.module_caches` offers them)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from retainlint.analysis.walk import visit


@dataclass
class FunctionNames:
    bound: set = field(default_factory=set)
    globals: set = field(default_factory=set)
    nonlocals: set = field(default_factory=set)


class _NameCollector(cst.CSTVisitor):
    """Names a function binds and declares global, not entering nested scopes."""

    def __init__(self) -> None:
        self.found = FunctionNames()

    def _bind(self, target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self.found.bound.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value)

    def visit_FunctionDef(self, node) -> bool:
        self.found.bound.add(node.name.value)
        return False

    def visit_ClassDef(self, node) -> bool:
        self.found.bound.add(node.name.value)
        return False

    def visit_Lambda(self, node) -> bool:
        return False

    def visit_Global(self, node: cst.Global) -> None:
        self.found.globals.update(n.name.value for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.found.nonlocals.update(n.name.value for n in node.names)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._bind(t.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind(node.name.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        name = node.asname.name if node.asname is not None else node.name
        while isinstance(name, cst.Attribute):
            name = name.value
        self._bind(name)


def function_bindings(fn: cst.FunctionDef) -> FunctionNames:
    """The names `fn` binds and declares global/nonlocal (nested scopes not entered)."""
    collector = _NameCollector()
    visit(fn.body, collector)
    return collector.found
