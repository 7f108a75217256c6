"""Everything a rule may ask about the file it is looking at."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions
from retainlint.analysis.heavy import HeavyOracle
from retainlint.analysis.imports import ImportTable, collect_module_imports
from retainlint.analysis.release import ReleasePaths

if TYPE_CHECKING:
    from retainlint.core.config import Settings
    from retainlint.project.index import ProjectIndex
    from retainlint.analysis.rule import LocatedReport, Report


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


class FileContext:
    def __init__(self, path: str, module: cst.Module, source: str, settings: "Settings",
                 index: "ProjectIndex") -> None:
        self.path = path
        self.module = module
        self.source = source  # the file's text (the module's code, without generating it)
        self.settings = settings
        self.index = index
        index.offer_source(path, source.encode("utf-8", "surrogateescape"))
        self.module_name = index.module_of(path)
        is_package = os.path.basename(path).startswith("__init__.")
        # All imports (function-local ones included: common in the code we check) for
        # resolving names; module-level ones for spelling the names a fix adds.
        self.imports: ImportTable = collect_module_imports(
            module, deep=True, name=self.module_name, is_package=is_package)
        self.module_imports: ImportTable = collect_module_imports(
            module, name=self.module_name, is_package=is_package)
        self.scope = ScopeState()
        self.reports: list[Report] = []
        self.located: list[LocatedReport] = []
        self.classes: dict[str, cst.ClassDef] = {}
        self.functions: dict[str, cst.FunctionDef] = {}
        for stmt in module.body:
            if isinstance(stmt, cst.ClassDef):
                self.classes[stmt.name.value] = stmt
            elif isinstance(stmt, cst.FunctionDef):
                self.functions[stmt.name.value] = stmt
        self.heavy: HeavyOracle = HeavyOracle(self)
        self._release: Optional[ReleasePaths] = None
        self._memo: dict[str, Any] = {}

    def close(self) -> None:
        """The lint is done: drop the links back to this context (see `lint_module`)."""
        self.heavy = None  # type: ignore[assignment]
        self._release = None
        self._memo = {}
        self.reports = []
        self.located = []

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """`compute()`, once per file: what several checks ask of the same file."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @property
    def release(self) -> ReleasePaths:
        """Release paths of this file's classes (`analysis/release.py`), made on first use."""
        if self._release is None:
            self._release = ReleasePaths(self)
        return self._release

    def qualname(self, node: cst.BaseExpression) -> Optional[str]:
        """The dotted name as imported (`nn.Module` -> `torch.nn.Module`); names defined
        in this file stay bare (`Model`), builtins too (`dict`)."""
        return self.imports.resolve(node)

    def absolute(self, qualified: Optional[str]) -> Optional[str]:
        """Project-wide name: a bare name defined in this module gets the module prefix."""
        if not qualified:
            return qualified
        head = qualified.split(".", 1)[0]
        if head in self.classes or head in self.functions:
            return f"{self.module_name}.{qualified}"
        return qualified

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def methods(self, cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
        return {f.name.value: f for f in body_functions(cls)}


