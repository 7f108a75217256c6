"""A light per-module import table: local name -> qualified name.

This answers "what does `wr.finalize` / `memo` / `nn.Module` mean here" without
libcst's full scope analysis, which costs about ten times the parse on real code.
Imports anywhere in the module count (function-local imports are common in the code
we check); a name bound by two different imports keeps the first one seen.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.project.names import absolute_import, standard_module  # noqa: F401 - re-exported


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` for Name/Attribute chains, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


class ImportTable:
    """`module`/`is_package` (when known) make relative imports absolute."""

    def __init__(self, module: str = "", is_package: bool = False) -> None:
        self.names: dict[str, str] = {}
        self.module = module
        self.is_package = is_package

    def uses(self, tops: frozenset[str]) -> bool:
        """Does the file import anything from one of these top-level modules?"""
        return any(q.partition(".")[0] in tops for q in self.names.values())

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted_name(alias.name)
                if full is None:
                    continue
                if alias.asname is not None:
                    local = dotted_name(alias.asname.name)
                    if local:
                        self.names.setdefault(local, standard_module(full))
                else:
                    # `import torch.nn` binds `torch`; `torch.nn.X` then resolves as written.
                    head = full.split(".")[0]
                    self.names.setdefault(head, head)
            return
        if isinstance(node.names, cst.ImportStar):
            return
        target = dotted_name(node.module) if node.module is not None else None
        level = len(node.relative)
        if level and self.module:
            base = absolute_import(self.module, self.is_package, level, target)
        else:
            base = "." * level + standard_module(target or "")
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            local = dotted_name(alias.asname.name) if alias.asname is not None else name
            if local:
                sep = "" if not base or base.endswith(".") else "."
                self.names.setdefault(local, f"{base}{sep}{name}")

    def resolve(self, node: cst.BaseExpression) -> Optional[str]:
        """Qualified name of a Name/Attribute chain; unimported names resolve to
        themselves (a class or function of this module)."""
        name = dotted_name(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        target = self.names.get(head)
        if target is None:
            return name
        return f"{target}.{rest}" if rest else target

    def local_name_for(self, qualified: str) -> Optional[str]:
        """The local spelling of an imported module or object, e.g. `wr` for weakref."""
        for local, target in self.names.items():
            if target == qualified:
                return local
        return None


def collect_module_imports(module: cst.Module, deep: bool = False, name: str = "",
                           is_package: bool = False) -> ImportTable:
    """Imports reachable without entering functions or classes (top level, and inside
    top-level if/try/with blocks such as `if TYPE_CHECKING:`); with `deep`, also those
    inside functions and classes. Only statements are walked, never expressions, so
    this costs a small fraction of a full traversal."""
    table = ImportTable(name, is_package)

    def walk(statements) -> None:
        for stmt in statements:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        table.add(small)
            elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                if deep and isinstance(stmt.body, cst.IndentedBlock):
                    walk(stmt.body.body)
            elif isinstance(stmt, cst.BaseCompoundStatement):
                for block in compound_blocks(stmt):
                    walk(block)

    walk(module.body)
    return table


def compound_blocks(stmt: cst.BaseCompoundStatement):
    """The statement lists inside if/for/while/try/with/match (an `elif` as a list of its `If`)."""
    body = getattr(stmt, "body", None)
    if isinstance(body, cst.IndentedBlock):
        yield body.body
    for name in ("orelse", "finalbody"):
        part = getattr(stmt, name, None)
        if isinstance(part, cst.If):
            yield [part]
        elif part is not None and isinstance(getattr(part, "body", None), cst.IndentedBlock):
            yield part.body.body
    for handler in getattr(stmt, "handlers", ()):
        if isinstance(handler.body, cst.IndentedBlock):
            yield handler.body.body
    for case in getattr(stmt, "cases", ()):
        if isinstance(case.body, cst.IndentedBlock):
            yield case.body.body
