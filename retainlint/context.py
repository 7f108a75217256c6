"""Everything a rule may ask about the file it is looking at."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from retainlint.imports import ImportTable, collect_module_imports

if TYPE_CHECKING:
    from retainlint.config import Settings
    from retainlint.heavy import HeavyOracle
    from retainlint.rule import Report


@dataclass
class ScopeState:
    """Where the traversal is: maintained by the engine for all rules at once."""

    classes: list[cst.ClassDef] = field(default_factory=list)
    functions: list[cst.FunctionDef] = field(default_factory=list)
    # Innermost statement first-line holder (SimpleStatementLine or compound statement).
    statements: list[cst.CSTNode] = field(default_factory=list)

    @property
    def statement(self) -> Optional[cst.CSTNode]:
        return self.statements[-1] if self.statements else None

    @property
    def function(self) -> Optional[cst.FunctionDef]:
        return self.functions[-1] if self.functions else None

    @property
    def method_class(self) -> Optional[cst.ClassDef]:
        """The class whose method body we are directly in (not a nested function's)."""
        if not self.classes or not self.functions:
            return None
        cls, fn = self.classes[-1], self.functions[-1]
        return cls if fn in body_functions(cls) else None


def body_statements(block) -> list:
    body = getattr(block, "body", block)
    return list(body.body) if isinstance(body, cst.IndentedBlock) else []


def body_functions(cls: cst.ClassDef) -> list[cst.FunctionDef]:
    return [s for s in body_statements(cls) if isinstance(s, cst.FunctionDef)]


def small_statements(block) -> Iterator[cst.BaseSmallStatement]:
    for stmt in body_statements(block):
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body


class FileContext:
    def __init__(self, path: str, module: cst.Module, settings: "Settings") -> None:
        from retainlint.heavy import HeavyOracle

        self.path = path
        self.module = module
        self.settings = settings
        # All imports (function-local ones included: common in the code we check) for
        # resolving names; module-level ones for spelling the names a fix adds.
        self.imports: ImportTable = collect_module_imports(module, deep=True)
        self.module_imports: ImportTable = collect_module_imports(module)
        self.scope = ScopeState()
        self.reports: list[Report] = []
        self.classes: dict[str, cst.ClassDef] = {}
        self.functions: dict[str, cst.FunctionDef] = {}
        for stmt in module.body:
            if isinstance(stmt, cst.ClassDef):
                self.classes[stmt.name.value] = stmt
            elif isinstance(stmt, cst.FunctionDef):
                self.functions[stmt.name.value] = stmt
        self.heavy: HeavyOracle = HeavyOracle(self)

    def qualname(self, node: cst.BaseExpression) -> Optional[str]:
        return self.imports.resolve(node)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def methods(self, cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
        return {f.name.value: f for f in body_functions(cls)}

    def release_method(self, cls: cst.ClassDef) -> Optional[cst.FunctionDef]:
        """The first configured release method (`shutdown`, `close`, ...) the class defines."""
        methods = self.methods(cls)
        for name in self.settings.release_methods:
            if name in methods:
                return methods[name]
        return None

    def is_release_method(self, fn: cst.FunctionDef) -> bool:
        return fn.name.value in self.settings.release_methods

    def local_module_alias(self, module_name: str) -> Optional[str]:
        """How this file spells an imported module at module level (`wr` after
        `import weakref as wr`); an import inside some function is not visible elsewhere."""
        return self.module_imports.local_name_for(module_name)
