"""What RL102 reads from a cached method's parameters and from what a class stores: a
cache key with one value per device or dtype, a parameter that holds a plain value, and
a container made on the instance."""

from __future__ import annotations

import libcst as cst
import libcst.helpers

from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.project.retention_shapes import CONTAINER_CALLS


def _per_device(ctx, param: cst.Param) -> bool:
    """A key parameter with one value per device or dtype (`device`, `device_str`,
    `dtype`, or annotated `torch.device`/`torch.dtype`)."""
    words = param.name.value.lower().split("_")
    if "device" in words or "dtype" in words:
        return True
    annotation = param.annotation
    return annotation is not None and any(
        t in ctx.code(annotation.annotation) for t in ("torch.device", "torch.dtype"))


# Numbers and flags, alone or in small shapes (`list[int]` of axes); not `str` or `bytes`,
# which may hold a whole file (pytest's assertion rewriter kept every module's source).
_SCALARS = {"int", "float", "bool", "complex", "None", "Optional", "Literal", "Union", "list", "tuple",
            "Sequence", "torch", "dtype", "device"}  # `torch.dtype`, `torch.device` too


def _scalar(param: cst.Param) -> bool:
    """A parameter that holds a plain value: annotated with numbers only (`dim: int`,
    `theta: float = 1e4`, `axes: list[int]`), or unannotated with a number, string or bool
    default. What a rotary embedding keeps of its arguments weighs nothing."""
    if param.annotation is not None:
        names = {n.value for n in iter_nodes(param.annotation.annotation) if isinstance(n, cst.Name)}
        return bool(names) and names <= _SCALARS
    default = param.default
    return isinstance(default, (cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(default, cst.Name) and default.value in ("True", "False"))


def _container(value: cst.BaseExpression) -> bool:
    """An empty or literal dict, list or set, or a call making one (`defaultdict(list)`)."""
    if isinstance(value, (cst.Dict, cst.List, cst.Set, cst.DictComp, cst.ListComp, cst.SetComp)):
        return True
    return isinstance(value, cst.Call) and \
        (cst.helpers.get_full_name_for_node(value.func) or "").rpartition(".")[2] in CONTAINER_CALLS
