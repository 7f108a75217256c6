"""The classes of the file as RL203 reads them: a class with its bases defined in the same
file, their methods, the names their bodies bind, and the class decorators."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions


class ClassLookup:
    """Questions about a class of the file and its base classes defined there."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx

    def method(self, cls: cst.ClassDef, name: str) -> Optional[cst.FunctionDef]:
        for c in self.class_chain(cls):
            method = self.ctx.methods(c).get(name)
            if method is not None:
                return method
        return None

    def class_chain(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """`cls` and its base classes defined in this file."""
        chain, pending = [], [cls]
        while pending:
            c = pending.pop(0)
            if c in chain:
                continue
            chain.append(c)
            for base in c.bases:
                if isinstance(base.value, cst.Name) and base.value.value in self.ctx.classes:
                    pending.append(self.ctx.classes[base.value.value])
        return chain

    def class_chain_methods(self, cls: cst.ClassDef) -> list[cst.FunctionDef]:
        return [m for c in self.class_chain(cls) for m in body_functions(c)]

    def class_level(self, cls: cst.ClassDef, attr: str) -> bool:
        for c in self.class_chain(cls):
            body = c.body.body if isinstance(c.body, cst.IndentedBlock) else ()
            for stmt in body:
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        targets = (
                            [t.target for t in small.targets] if isinstance(small, cst.Assign)
                            else [small.target] if isinstance(small, cst.AnnAssign) else []
                        )
                        if any(isinstance(t, cst.Name) and t.value == attr for t in targets):
                            return True
        return False

    def decorators(self, cls: cst.ClassDef) -> list[str]:
        names = []
        for d in cls.decorators:
            target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            names.append(self.ctx.qualname(target) or self.ctx.code(target))
        return names
