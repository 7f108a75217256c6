"""What the annotations and the values around a module-level container say, for
`retainlint.analysis.module_caches.ContainerTracker`, which derives from `ContainerTypes`:
the key and value types an annotation names, whether its entries are classes, what kind of
heavy object (module, tensor, other) an annotation or a value is, whether a value is built
around a key, and the container's value and annotation retyped to a weak container."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.heavy import find_param
from retainlint.project.names import HEAVY_TYPES, TENSOR_FACTORIES, TENSOR_TYPES as _TENSOR_TYPES, UNION_WRAPPERS
from retainlint.analysis.cstutil import is_self

# annotations whose outer type we replace by the weak container
_DICT_ANNS = frozenset({"dict", "builtins.dict", "typing.Dict", "typing_extensions.Dict"})
_SET_ANNS = frozenset({"set", "builtins.set", "typing.Set", "typing_extensions.Set"})
# annotations a weak container already satisfies: kept as they are
_ABSTRACT_ANNS = frozenset(
    {
        "typing.MutableMapping", "collections.abc.MutableMapping", "typing.Mapping",
        "collections.abc.Mapping", "typing.MutableSet", "collections.abc.MutableSet",
        "typing.AbstractSet", "collections.abc.Set",
    }
)
_MAPPING_ANNS = frozenset(
    {
        "typing.MutableMapping", "collections.abc.MutableMapping", "typing.Mapping",
        "collections.abc.Mapping",
    }
)
# annotations that only tell us the key type (no fix: no weak equivalent)
_OTHER_KEYED_ANNS = frozenset(
    {
        "collections.defaultdict", "typing.DefaultDict", "collections.OrderedDict",
        "typing.OrderedDict",
    }
)
_WRAPPER_ANNS = frozenset(
    {
        "typing.ClassVar", "typing.Final", "typing_extensions.Final", "typing.Annotated",
        "typing_extensions.Annotated", "ClassVar", "Final",
    }
)

_CLASS_ANNS = frozenset({"type", "builtins.type", "typing.Type", "typing_extensions.Type"})

_MAX_DEPTH = 6


def first_slice(sub: cst.Subscript) -> Optional[cst.BaseExpression]:
    if sub.slice and isinstance(sub.slice[0].slice, cst.Index):
        return sub.slice[0].slice.value
    return None


class ContainerTypes:
    """Rule mixin under `ContainerTracker`: the methods that read annotations and values
    (through `self.ctx`, the rule's file context)."""

    def _retype_value(self, value: cst.BaseExpression, outer: str) -> cst.BaseExpression:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Subscript):
            return value.with_changes(func=value.func.with_changes(value=cst.parse_expression(outer)))
        return cst.parse_expression(f"{outer}()")

    def _retype_annotation(self, ann: cst.BaseExpression, outer: str):
        if isinstance(ann, cst.SimpleString):
            try:
                inner = cst.parse_expression(ann.evaluated_value)
            except Exception:
                return None
            new = self._retype_annotation(inner, outer)
            if new is None:
                return None
            text = cst.Module(body=[]).code_for_node(new)
            if ann.quote in text:
                return None
            return ann.with_changes(value=f"{ann.prefix}{ann.quote}{text}{ann.quote}")
        if isinstance(ann, cst.Subscript):
            qualified = self.ctx.qualname(ann.value)
            if qualified in _WRAPPER_ANNS and ann.slice and isinstance(ann.slice[0].slice, cst.Index):
                inner = self._retype_annotation(ann.slice[0].slice.value, outer)
                if inner is None:
                    return None
                first = ann.slice[0].with_changes(slice=ann.slice[0].slice.with_changes(value=inner))
                return ann.with_changes(slice=[first, *ann.slice[1:]])
            if qualified in _DICT_ANNS or qualified in _SET_ANNS:
                return ann.with_changes(value=cst.parse_expression(outer))
            if qualified in _ABSTRACT_ANNS:
                return ann
            return None
        qualified = self.ctx.qualname(ann)
        if qualified in _DICT_ANNS or qualified in _SET_ANNS:
            return cst.parse_expression(outer)
        if qualified in _ABSTRACT_ANNS:
            return ann
        return None

    def _holds(self, value, key, function, cls, depth: int) -> bool:
        """Is `value` the key, or obviously built around it (so it keeps the key alive)?"""
        if depth > 3:
            return False
        code = self.ctx.code
        key_code = code(key)
        if code(value) == key_code:
            return True
        if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
            return any(self._holds(e.value, key, function, cls, depth + 1) for e in value.elements)
        if isinstance(value, cst.Dict):
            return any(
                (isinstance(e, cst.DictElement) and self._holds(e.key, key, function, cls, depth + 1))
                or self._holds(e.value, key, function, cls, depth + 1)
                for e in value.elements
            )
        if isinstance(value, cst.Call):
            return any(self._holds(a.value, key, function, cls, depth + 1) for a in value.args)
        if isinstance(value, cst.Attribute) and code(value.value) == key_code:
            # a bound method holds its instance
            attr = value.attr.value
            if attr in ("forward", "__call__"):
                return True
            return any(attr in self.ctx.methods(k) for k in self.ctx.classes.values())
        if isinstance(value, cst.Lambda) and isinstance(key, cst.Name):
            return key.value in code(value.body)  # conservative: any mention
        if isinstance(value, cst.Name) and function is not None:
            for assigned, _ in self.ctx.heavy.local_assignments(function).get(value.value, ()):
                if isinstance(assigned, (cst.Tuple, cst.List, cst.Set, cst.Dict, cst.Call, cst.Lambda)):
                    if self._holds(assigned, key, function, cls, depth + 1):
                        return True
        return False

    # -- key types -----------------------------------------------------------------
    def _annotation_key(self, ann: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """K of `dict[K, V]`, `Dict[K, V]`, `set[K]`, ... (through strings, ClassVar, Final)."""
        if isinstance(ann, cst.SimpleString):
            try:
                return self._annotation_key(cst.parse_expression(ann.evaluated_value))
            except Exception:
                return None
        if not isinstance(ann, cst.Subscript):
            return None
        qualified = self.ctx.qualname(ann.value)
        if qualified in _WRAPPER_ANNS:
            first = first_slice(ann)
            return self._annotation_key(first) if first is not None else None
        if qualified in _DICT_ANNS or qualified in _SET_ANNS or qualified in _ABSTRACT_ANNS or qualified in _OTHER_KEYED_ANNS:
            return first_slice(ann)
        return None

    def _annotation_value(self, ann: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """V of `dict[K, V]`, `Dict[K, V]`, `Mapping[K, V]`, `defaultdict[K, V]`, ...
        (through strings, ClassVar, Final)."""
        if isinstance(ann, cst.SimpleString):
            try:
                return self._annotation_value(cst.parse_expression(ann.evaluated_value))
            except Exception:
                return None
        if not isinstance(ann, cst.Subscript):
            return None
        qualified = self.ctx.qualname(ann.value)
        if qualified in _WRAPPER_ANNS:
            first = first_slice(ann)
            return self._annotation_value(first) if first is not None else None
        if (
            (qualified in _DICT_ANNS or qualified in _OTHER_KEYED_ANNS
             or qualified in _MAPPING_ANNS)
            and len(ann.slice) == 2 and isinstance(ann.slice[1].slice, cst.Index)
        ):
            return ann.slice[1].slice.value
        return None

    def _annotates_classes(self, ann: Optional[cst.BaseExpression]) -> bool:
        """Does a key or value annotation say the entries are classes (`type[nn.Module]`,
        `Type[X]`, `type`, unions of them, in strings too)? A class lives as long as its
        module: such entries pin nothing, whatever a writer's parameter annotation says."""
        if isinstance(ann, cst.SimpleString):
            try:
                return self._annotates_classes(cst.parse_expression(ann.evaluated_value))
            except Exception:
                return False
        if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
            sides = [x for x in (ann.left, ann.right) if not _is_none(x)]
            return bool(sides) and all(self._annotates_classes(x) for x in sides)
        if isinstance(ann, cst.Subscript):
            qualified = self.ctx.qualname(ann.value)
            if qualified in UNION_WRAPPERS:
                members = [e.slice.value for e in ann.slice if isinstance(e.slice, cst.Index)]
                return bool(members) and all(self._annotates_classes(m) for m in members)
            return qualified in _CLASS_ANNS
        return ann is not None and self.ctx.qualname(ann) in _CLASS_ANNS

    def _ann_kinds(self, ann) -> set[str]:
        oracle = self.ctx.heavy
        if ann is None:
            return set()
        if isinstance(ann, cst.Annotation):
            ann = ann.annotation
        if isinstance(ann, cst.SimpleString):
            try:
                return self._ann_kinds(cst.parse_expression(ann.evaluated_value))
            except Exception:
                return set()
        if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
            return self._ann_kinds(ann.left) | self._ann_kinds(ann.right)
        if isinstance(ann, cst.Subscript):
            if self.ctx.qualname(ann.value) in UNION_WRAPPERS:
                kinds: set[str] = set()
                for e in ann.slice:
                    if isinstance(e.slice, cst.Index):
                        kinds |= self._ann_kinds(e.slice.value)
                return kinds
            return set()
        qualified = self.ctx.qualname(ann)
        if oracle.is_heavy_qualname(qualified):
            return {self._qual_kind(qualified, frozenset())}
        return set()

    def _qual_kind(self, qualified: str, seen: frozenset) -> str:
        oracle = self.ctx.heavy
        if qualified in _TENSOR_TYPES:
            return "tensor"
        if qualified in self.ctx.settings.heavy_types:
            return "other"
        if qualified in HEAVY_TYPES or qualified.startswith("torch.nn."):
            return "module"
        cls = self.ctx.classes.get(qualified)
        if cls is not None and qualified not in seen:
            for base in cls.bases:
                bq = self.ctx.qualname(base.value)
                if oracle.is_heavy_qualname(bq):
                    return self._qual_kind(bq, seen | {qualified})
        return self._index_kind(self.ctx.index.resolve(self.ctx.absolute(qualified)), seen)

    def _index_kind(self, qualified: Optional[str], seen: frozenset) -> str:
        """A project class in another file: follow its bases through the index."""
        index = self.ctx.index
        summary = index.classes.get(qualified or "")
        if summary is None or qualified in seen:
            return "other"
        for base in summary.bases:
            resolved = index.resolve(base)
            if resolved in _TENSOR_TYPES:
                return "tensor"
            if resolved in HEAVY_TYPES or (resolved or "").startswith("torch.nn."):
                return "module"
            if index.is_heavy_class(resolved):
                return self._index_kind(resolved, seen | {qualified})
        return "other"

    def _value_kinds(self, expr, function, cls, depth: int) -> set[str]:
        """Mirror of `HeavyOracle.is_heavy_value` that says what kind of heavy object."""
        oracle = self.ctx.heavy
        if depth > _MAX_DEPTH:
            return set()
        if isinstance(expr, cst.Name):
            if expr.value == "self" and cls is not None and function is not None:
                if oracle.is_heavy_class(cls):
                    return {self._qual_kind(cls.name.value, frozenset())}
                return set()
            if function is None:
                return set()
            param = find_param(function, expr.value)
            if param is not None:
                return self._ann_kinds(param.annotation)
            kinds: set[str] = set()
            for value, ann in oracle.local_assignments(function).get(expr.value, ()):
                kinds |= self._ann_kinds(ann)
                if value is not None:
                    kinds |= self._value_kinds(value, function, cls, depth + 1)
            return kinds
        if isinstance(expr, cst.Call):
            qualified = self.ctx.qualname(expr.func)
            if qualified in TENSOR_FACTORIES:
                return {"tensor"}
            if oracle.is_heavy_qualname(qualified):
                return {self._qual_kind(qualified, frozenset())}
            target = oracle._callee(expr.func, cls)
            if target is not None and target.returns is not None:
                return self._ann_kinds(target.returns.annotation)
            return set()
        if (
            isinstance(expr, cst.Attribute)
            and cls is not None
            and is_self(expr.value)
        ):
            attr = expr.attr.value
            kinds = set()
            for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        if (
                            isinstance(small, cst.AnnAssign)
                            and isinstance(small.target, cst.Name)
                            and small.target.value == attr
                        ):
                            kinds |= self._ann_kinds(small.annotation)
            for method in self.ctx.methods(cls).values():
                for value, ann in oracle.local_assignments(method).get(f"self.{attr}", ()):
                    kinds |= self._ann_kinds(ann)
                    if value is not None:
                        kinds |= self._value_kinds(value, method, cls, depth + 1)
            return kinds
        return set()


def _is_none(ann: cst.BaseExpression) -> bool:
    return isinstance(ann, cst.Name) and ann.value == "None"
