"""Is this object heavy (a model, a tensor, a configured heavy type)?

Decided from qualified names and annotations, never by importing anything: the
checked code's own classes that derive from `torch.nn.Module` (through other classes
of the file), parameters and attributes annotated heavy, values built by heavy
constructors, tensor factories or functions annotated to return a heavy type.
Lookups are lazy: nothing here runs unless a rule asks about a candidate node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor, annotation_expression, body_functions, body_statements, is_self
from retainlint.analysis.walk import children, visit
from retainlint.project.names import HEAVY_TYPES, LOADERS, TENSOR_FACTORIES, TENSOR_TYPES, UNION_WRAPPERS

if TYPE_CHECKING:
    from retainlint.analysis.context import FileContext

_MAX_DEPTH = 6


class HeavyOracle:
    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx
        self._configured = frozenset(ctx.settings.heavy_types)
        # A configured `pkg.mod.Engine` defined in this very file (pkg/mod.py) is spelled
        # `Engine` here.
        path = ctx.path.replace("\\", "/").removesuffix(".pyi").removesuffix(".py")
        self._configured_here = frozenset(
            t.rsplit(".", 1)[1] for t in self._configured
            if "." in t and (path == t.rsplit(".", 1)[0].replace(".", "/")
                             or path.endswith("/" + t.rsplit(".", 1)[0].replace(".", "/")))
        )
        self._local_classes: Optional[set[str]] = None
        self._assignments: dict[int, dict[str, list]] = {}

    # -- types ---------------------------------------------------------------------
    def is_heavy_qualname(self, qualified: Optional[str]) -> bool:
        if not qualified:
            return False
        if qualified in HEAVY_TYPES or qualified in self._configured or qualified in self._configured_here:
            return True
        if qualified.startswith("torch.nn.") and qualified.count(".") == 2:
            last = qualified.rsplit(".", 1)[1]
            return last[:1].isupper()  # nn.Linear, nn.Sequential, nn.ModuleList, ...
        if qualified in self.local_heavy_classes:
            return True
        return self.ctx.index.is_heavy_class(self.ctx.absolute(qualified))

    @property
    def local_heavy_classes(self) -> set[str]:
        """Classes of this file deriving from a heavy type, directly or through each other,
        or holding heavy attributes (the project index knows those)."""
        if self._local_classes is None:
            heavy: set[str] = set()
            self._local_classes = heavy
            changed = True
            while changed:
                changed = False
                for name, cls in self.ctx.classes.items():
                    if name in heavy:
                        continue
                    if self.ctx.index.is_heavy_class(f"{self.ctx.module_name}.{name}") or any(
                            self.is_heavy_qualname(self.ctx.qualname(b.value)) for b in cls.bases):
                        heavy.add(name)
                        changed = True
        return self._local_classes

    def is_heavy_class(self, cls: Optional[cst.ClassDef]) -> bool:
        return cls is not None and cls.name.value in self.local_heavy_classes

    def is_tensor_annotation(self, ann: Optional[cst.BaseExpression]) -> bool:
        """Is the annotation a tensor type (`torch.Tensor`, `Optional[Tensor]`) and no model?
        Heavy, but what one tensor weighs is unknown (a scalar or a [b, L, L] mask)."""
        pending: list[cst.CSTNode] = [n for n in (annotation_expression(ann),) if n is not None]
        names: set[str] = set()
        while pending:
            node = pending.pop()
            if isinstance(node, (cst.Name, cst.Attribute)):
                names.add(self.ctx.qualname(node) or "")
            pending.extend(children(node))
        return bool(names & TENSOR_TYPES) and not any(
            self.is_heavy_qualname(q) for q in names - TENSOR_TYPES if q)

    def is_heavy_annotation(self, ann: Optional[cst.BaseExpression]) -> bool:
        ann = annotation_expression(ann)
        if ann is None:
            return False
        if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
            return self.is_heavy_annotation(ann.left) or self.is_heavy_annotation(ann.right)
        if isinstance(ann, cst.Subscript):
            if self.ctx.qualname(ann.value) in UNION_WRAPPERS:
                return any(
                    isinstance(e.slice, cst.Index) and self.is_heavy_annotation(e.slice.value)
                    for e in ann.slice
                )
            return False
        return self.is_heavy_qualname(self.ctx.qualname(ann))

    # -- values --------------------------------------------------------------------
    def is_heavy_value(
        self,
        expr: cst.BaseExpression,
        function: Optional[cst.FunctionDef],
        cls: Optional[cst.ClassDef],
        _depth: int = 0,
    ) -> bool:
        """Is `expr`, evaluated inside `function` (a method of `cls`, if any), heavy?"""
        if _depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Name):
            if expr.value == "self" and cls is not None and function is not None:
                return self.is_heavy_class(cls)
            if function is None:
                return False
            param = find_param(function, expr.value)
            if param is not None:
                return self.is_heavy_annotation(param.annotation)
            return any(
                self.is_heavy_annotation(ann) or (
                    value is not None and self.is_heavy_value(value, function, cls, _depth + 1)
                )
                for value, ann in self.local_assignments(function).get(expr.value, ())
            )
        if isinstance(expr, cst.Call):
            return self._is_heavy_call(expr, function, cls, _depth)
        if isinstance(expr, cst.Attribute) and cls is not None:
            if is_self(expr.value):
                return self._is_heavy_attribute(cls, expr.attr.value, _depth)
        return False

    def _is_heavy_call(self, call, function, cls, depth) -> bool:
        qualified = self.ctx.qualname(call.func)
        if qualified in TENSOR_FACTORIES or self.is_heavy_qualname(qualified):
            return True
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in LOADERS \
                and self.is_heavy_qualname(self.ctx.qualname(call.func.value)):
            return True  # `Pipeline.from_pretrained(...)`: a heavy class's own loader
        target = self._callee(call.func, cls)
        if target is not None:
            return self.is_heavy_annotation(target.returns.annotation if target.returns else None)
        return self.ctx.index.returns_heavy(self.ctx.absolute(qualified))

    def _callee(self, func: cst.BaseExpression, cls) -> Optional[cst.FunctionDef]:
        """A function or method of this file that `func` names, if any."""
        if isinstance(func, cst.Name):
            return self.ctx.functions.get(func.value)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            owner = func.value.value
            target_cls = cls if owner in ("self", "cls") else self.ctx.classes.get(owner)
            if target_cls is not None:
                return self.ctx.methods(target_cls).get(func.attr.value)
        return None

    def _is_heavy_attribute(self, cls: cst.ClassDef, attr: str, depth: int) -> bool:
        for stmt in body_statements(cls):  # class-level `model: nn.Module`
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if (
                        isinstance(small, cst.AnnAssign)
                        and isinstance(small.target, cst.Name)
                        and small.target.value == attr
                        and self.is_heavy_annotation(small.annotation)
                    ):
                        return True
        for method in body_functions(cls):
            for value, ann in self.local_assignments(method).get(f"self.{attr}", ()):
                if self.is_heavy_annotation(ann):
                    return True
                if value is not None and self.is_heavy_value(value, method, cls, depth + 1):
                    return True
        return False

    def local_assignments(self, function: cst.FunctionDef) -> dict[str, list]:
        """name (or `self.attr`) -> [(value or None, annotation or None)] in `function`."""
        key = id(function)
        if key not in self._assignments:
            collector = _AssignmentCollector()
            visit(function.body, collector)
            self._assignments[key] = collector.found
        return self._assignments[key]


def find_param(function: cst.FunctionDef, name: str) -> Optional[cst.Param]:
    params = function.params
    for p in (*params.posonly_params, *params.params, *params.kwonly_params):
        if p.name.value == name:
            return p
    return None


def target_key(target: cst.BaseExpression) -> Optional[str]:
    if isinstance(target, cst.Name):
        return target.value
    if (
        isinstance(target, cst.Attribute)
        and is_self(target.value)
    ):
        return f"self.{target.attr.value}"
    return None


class _AssignmentCollector(OwnScopeVisitor):
    """Assignments in one function body, not descending into nested scopes."""

    def __init__(self) -> None:
        self.found: dict[str, list] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            key = target_key(t.target)
            if key:
                self.found.setdefault(key, []).append((node.value, None))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        key = target_key(node.target)
        if key:
            self.found.setdefault(key, []).append((node.value, node.annotation))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        key = target_key(node.target)
        if key:
            self.found.setdefault(key, []).append((node.value, None))
