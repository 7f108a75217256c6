"""RL302 strong-module-valued-cache."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self, proven_module_ref
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.analysis.heavy import find_param
from retainlint.analysis.module_caches import (
    Candidate, ContainerTracker, Event, annotation_text, builds_own, per_object_key,
)
from retainlint.analysis.cache_ownership import reads_container
from retainlint.analysis.weight import substantial_value
from retainlint.project.consequence import key_per_request
from retainlint.project.names import TENSOR_FACTORIES
from retainlint.rules.prefilters.rl302 import StrongModuleValuedCachePrefilter
from retainlint.analysis.rule import Example, RelatedNode, Rule

# Values a `WeakValueDictionary` cannot hold (no weak references to them).
_NOT_WEAKREFABLE = (
    cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float,
    cst.Imaginary, cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.SetComp,
    cst.DictComp, cst.GeneratorExp, cst.Comparison, cst.BooleanOperation,
)
_CONSTANT_NAMES = frozenset({"None", "True", "False"})


class StrongModuleValuedCache(ContainerTracker, Rule):
    prefilter = StrongModuleValuedCachePrefilter
    name = "strong-module-valued-cache"
    summary = "A module-level dict whose values are models or tensors keeps them alive forever"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    _scopes = ("module",)

    def applies(self) -> bool:
        return self.has_candidates()

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._discarded: set[int] = set()  # calls whose result is thrown away

    def visit_Expr(self, node: cst.Expr) -> None:
        if isinstance(node.value, cst.Call):
            self._discarded.add(id(node.value))

    docs = """
## What it does
Reports a module-level `dict` (also `defaultdict`, `OrderedDict`) whose *values* are heavy
objects (models, tensors, configured heavy types), when nothing in the project ever takes
entries out of it. The values are known to be heavy when:

- the dict is annotated so: `_cache: dict[tuple, RotaryEmbedding] = {}` where
  `RotaryEmbedding` derives from `nn.Module` (in this file or any other),
  `dict[str, nn.Module]()`, `Dict[...]`, `Mapping[...]`, string annotations, `Final[...]`;
  or
- a heavy value is written into it anywhere in the file: `_cache[key] = model` where
  `model` is annotated or inferred heavy, `_cache[key] = torch.empty(...)`,
  `_cache.setdefault(key, Layer(...))`, `_cache.update({key: layer})`.

A table filled at import time only (`ACT_FNS = {"relu": nn.ReLU()}`, or entries written
at module level) is not reported: its values are created once and live as long as the
process anyway; what leaks is what functions add at run time.

A per-device or per-shape memo is not reported either: when every value functions store
is one the writing function allocates itself from plain inputs - a tensor
(`_ones[device] = torch.ones(1, device=device)`, `torch.tensor(LEVELS).to(device)`), a
table it computes, a workspace object whose class holds no layer (`_Workspace(device)`) -
and the key is a device, dtype, stream or shape rather than an object's identity. Such a
dict keeps a few constants or a fixed scratch meant to live as long as the process, and
grows only with the devices and static shapes the process uses. Under an identity key
(`id(model)`, `t.data_ptr()`) it grows with every object, so it is still reported unless
its values are tables of a few literal elements (a pointer table built from a list).
A value handed in (a parameter, an attribute), a layer, or an object built around a heavy
argument is never such a value.

A registry whose own entries are classes or functions (`dict(basic=BasicBlock)`), or
whose annotation says its values are classes (`dict[str, type[nn.Module]]`,
`Dict[str, Type[X]]`), holds classes: an `nn.Module` annotation on the dict, or on the
parameter a function stores into it (`def register(name, block_fn: nn.Module)`), is
taken as loose.

A dict is not reported when the file removes entries from it (`del d[k]`, `.pop`,
`.popitem`, `.clear`, `-=`), rebinds it from a function (`global d; d = {}`), or hands it
to other code that might (`x = d`, `return d`, `prune(d)`), nor when a function or
method in another file of the project removes entries from it
(`from pkg.layers import _CACHE` then `_CACHE.clear()`, `layers._CACHE.pop(k)`). Dicts of
plain values (strings, numbers, classes, functions) are never reported; neither are
local variables. A dict keyed by heavy objects is RL301's.

Dicts of models, layers and objects holding them, keyed per request or per object, are
errors: they gain a model with every key. Dicts whose values are only known to be tensors
are warnings (a caller's tensor kept by name, buffers kept per object: GPU memory that
outlives an engine, but rarely a whole model), and so are dicts whose every key names the
deployment or the code - a rank, a world size, a model name, a dtype (vLLM's per-rank
all-reduce workspaces, `_workspace_cache[(rank, world_size, comm_size)]`): one value per
member or configuration, bounded, costly only where the project releases what they keep.

## Why it leaks
A module global is a GC root: its values live until the interpreter exits. A cache of
layers or tensors built for one model keeps them - and their GPU memory - after the
engine that built the model has shut down, and keeps growing with every model built in
the process.

## Incident
vLLM's `get_rope()` cached every rotary-embedding layer it built in
`_ROPE_DICT: dict[tuple[Any, ...], RotaryEmbedding] = {}` (`RotaryEmbedding` is an
`nn.Module`, with cos/sin cache tensors on the GPU). After `engine.shutdown()` every
layer of every model built in the process was still referenced. The fix cleared the
dict on shutdown.

## Example
```python
from typing import Any
from torch import nn

class RotaryEmbedding(nn.Module):
    ...

_ROPE_DICT: dict[tuple[Any, ...], RotaryEmbedding] = {}  # RL302

def get_rope(head_size, base):
    key = (head_size, base)
    if key not in _ROPE_DICT:
        _ROPE_DICT[key] = RotaryEmbedding(head_size, base)
    return _ROPE_DICT[key]
```

## Fix (unsafe)
`weakref.WeakValueDictionary()`, keeping the annotation's types
(`_c: dict[K, V] = {}` becomes
`_c: weakref.WeakValueDictionary[K, V] = weakref.WeakValueDictionary()`), adding
`import weakref` when needed: an entry then vanishes once nothing else uses its value.
Unsafe because the cache changes behaviour: a value that only the cache referenced is
dropped at once (the next lookup misses and rebuilds it), and `if k in d: return d[k]`
can raise `KeyError` if the value dies in between - use `d.get(k)`. The alternative is to
clear the dict from the release path (`shutdown()`). No fix is offered (the finding is
still reported) when the dict is a `defaultdict` or an `OrderedDict`, starts non-empty,
some written value cannot be weakly referenced (`None`, numbers, strings, tuples, lists),
a value is stored as it is created (`d[k] = Layer()`: nothing but the dict would
reference it, so it would vanish at once and `return d[k]` would fail), or the values
are not known to be models or layers: tensors (a cached tensor is usually referenced by
the cache alone, so a weak dict would only defeat the cache), configured heavy types,
values whose kind is unknown. Nor when each instance stores itself under its name
(`_layers[prefix] = self` in a method): one slot per name, which the next instance of that
name takes over, each value also held by the model that built it - bounded, so a warning,
and a weak dict would free a layer only between its model's release and the next build.
"""

    valid = [
        # plain values; heavy keys are RL301's
        """
import torch.nn as nn

_sizes: dict[str, int] = {}
_names: dict[nn.Module, str] = {}
_classes: dict[str, type[nn.Module]] = {}

def register(name: str, model: nn.Module, cls: type[nn.Module]):
    _sizes[name] = 1
    _names[model] = name
    _classes[name] = cls
""",
        # cleared somewhere in the file
        """
import torch

_buffers: dict[str, torch.Tensor] = {}

def get_buffer(name: str, n: int) -> torch.Tensor:
    if name not in _buffers:
        _buffers[name] = torch.empty(n)
    return _buffers[name]

def reset():
    _buffers.clear()
""",
        # a per-device memo of what the function allocates; a registry of classes
        """
import torch
from torch import nn

_ones: dict[torch.device, torch.Tensor] = {}
_blocks = dict(linear=nn.Linear, conv=nn.Conv2d)

def ones(device: torch.device) -> torch.Tensor:
    t = _ones.get(device)
    if t is None:
        t = _ones[device] = torch.ones(1, device=device)
    return t

def register_block(name: str, block_fn: nn.Module):
    _blocks[name] = block_fn
""",
        # already weak; a local dict
        """
import weakref
import torch.nn as nn

_live: weakref.WeakValueDictionary[str, nn.Module] = weakref.WeakValueDictionary()

def build(model: nn.Module):
    cache = {}
    cache["m"] = model
    _live["m"] = model
    return cache
""",
    ]
    invalid = [
        Example(
            """
from typing import Any

from torch import nn

class RotaryEmbedding(nn.Module):
    def __init__(self, head_size: int, base: float):
        super().__init__()

_ROPE_DICT: dict[tuple[Any, ...], RotaryEmbedding] = {}

def get_rope(head_size: int, base: float) -> RotaryEmbedding:
    key = (head_size, base)
    if key in _ROPE_DICT:
        return _ROPE_DICT[key]
    rotary_emb = RotaryEmbedding(head_size, base)
    _ROPE_DICT[key] = rotary_emb
    return rotary_emb
""",
            lines=[10],
            fixed="""
from typing import Any

from torch import nn
import weakref

class RotaryEmbedding(nn.Module):
    def __init__(self, head_size: int, base: float):
        super().__init__()

_ROPE_DICT: weakref.WeakValueDictionary[tuple[Any, ...], RotaryEmbedding] = weakref.WeakValueDictionary()

def get_rope(head_size: int, base: float) -> RotaryEmbedding:
    key = (head_size, base)
    if key in _ROPE_DICT:
        return _ROPE_DICT[key]
    rotary_emb = RotaryEmbedding(head_size, base)
    _ROPE_DICT[key] = rotary_emb
    return rotary_emb
""",
        ),
        # inferred from writes (a tensor factory under an identity key, an annotated
        # parameter); aliased weakref; no fix where a fresh object is stored (the dict
        # alone would hold it)
        Example(
            """
import weakref as wr

import torch

_buffers = {}
_models = dict()

def buffer_for(owner, n: int):
    _buffers[id(owner)] = torch.zeros(n)
    return _buffers[id(owner)]

def remember(name: str, model: torch.nn.Module):
    _models.setdefault(name, model)
""",
            lines=[6, 7],
            fixed="""
import weakref as wr

import torch

_buffers = {}
_models = wr.WeakValueDictionary()

def buffer_for(owner, n: int):
    _buffers[id(owner)] = torch.zeros(n)
    return _buffers[id(owner)]

def remember(name: str, model: torch.nn.Module):
    _models.setdefault(name, model)
""",
        ),
        # report only: a defaultdict; a None sentinel stored too
        Example(
            """
import collections
import torch.nn as nn

_by_rank: "collections.defaultdict[int, nn.Module]" = collections.defaultdict(nn.Identity)
_loaded: dict[str, nn.Module | None] = {}

def load(name: str, model: nn.Module):
    _loaded[name] = None
    _loaded[name] = model
""",
            lines=[5, 6],
        ),
    ]

    # -- decision ------------------------------------------------------------------
    def _judge(self, c: Candidate, events: list[Event]) -> None:
        if c.container == "set":
            return
        if any(e.kind in ("remove", "escape") for e in events):
            return
        if self._removed_elsewhere(c):
            return
        writes = [e for e in events if e.kind == "write" and e.value is not None]
        runtime = [e for e in writes if e.function is not None]
        if not runtime and (_starts_filled(c) or writes):
            # a table filled at import time (`ACT_FNS = {"relu": nn.ReLU()}`): its values
            # are created once and live as long as the process anyway
            return
        # A registry whose own entries are classes (`dict(basic=BasicBlock)`), or whose
        # annotation says so (`dict[str, type[nn.Module]]`), holds classes: a loose
        # `nn.Module` annotation, on the dict or on the parameter a function stores
        # (`register(name, block_fn: nn.Module)`), does not make its values instances.
        value_ann = self._value_annotation(c)
        of_classes = self._of_classes(c, writes) or self._annotates_classes(value_ann)
        if of_classes:
            value_ann = None
        kinds: set[str] = set()
        described = None
        if value_ann is not None:
            kinds = self._ann_kinds(value_ann)
            if kinds:
                described = annotation_text(value_ann)
        heavy_writes: list[Event] = []
        for e in runtime:
            if of_classes and _stores_parameter(e):
                continue
            write_kinds = self._write_kinds(e)
            if write_kinds:
                kinds |= write_kinds
                heavy_writes.append(e)
        if isinstance(c.value, cst.Dict):  # `_c = {"identity": nn.Identity()}`
            for element in c.value.elements:
                if isinstance(element, cst.DictElement):
                    kinds |= self._value_kinds(element.value, None, None, 0)
        if not kinds:
            return
        if "module" not in kinds and self._process_memo(c, runtime):
            return
        if described is None:
            described = (
                "`nn.Module`" if kinds == {"module"}
                else "`torch.Tensor`" if kinds == {"tensor"}
                else "heavy"
            )
        else:
            described = f"`{described}`"
        message = f"`{c.name}` (module global) keeps {described} values alive: entries are never removed"
        named_slots = self._self_registered(runtime)
        if named_slots:
            # each instance stores itself under its name (`_layers[prefix] = self`): one slot
            # per name, taken over by the next instance of that name, and the model that built
            # the instance holds it too - bounded, and a weak dict frees it only between a
            # model's release and the next build
            fix, why_not = None, ("each instance stores itself under its name, a slot the next "
                                  "instance of that name takes over; clear the dict where the "
                                  "model is released")
        else:
            fix, why_not = self._fix(c, kinds, events)
        if fix is None and why_not:
            message += f" (no automatic fix: {why_not})"
        related = [RelatedNode("heavy value stored here", e.node) for e in heavy_writes[:1] if e.node]
        # Models and objects holding them first; a tensor cache is most often a bounded
        # set of workspaces or constants per device.
        severity = Severity.WARNING if kinds == {"tensor"} or named_slots or \
            self._deployment_keyed(runtime) else Severity.ERROR
        self.report(c.target, message, fix=fix, related=related, statement=c.statement,
                    severity=severity, consequence=self._consequence(c, described, runtime, named_slots))

    def _consequence(self, c: Candidate, described: str, runtime: list[Event], named_slots: bool) -> Consequence:
        """Every value stored stays for the process; the dict grows with the writes keyed
        per request or per object (a slot per name or per configuration is reused)."""
        if named_slots:
            return Consequence(f"the last {described} stored under each name", f"`{c.name}` (module global)",
                               "the process")
        fresh = [e.key for e in runtime if e.key is not None and key_per_request(self._key_text(e))]
        return Consequence(f"every {described} value stored", f"`{c.name}` (module global)", "the process",
                           f"one entry per distinct `{self.ctx.code(fresh[0]).strip()}`" if fresh else "")

    def _deployment_keyed(self, runtime: list[Event]) -> bool:
        """Is every entry keyed by what names the deployment or the code (`(rank,
        world_size, slot_bytes)`, a model name), never a request's? Then the dict holds
        one value per member or configuration - bounded, though what it keeps may weigh
        (vLLM's per-rank all-reduce workspaces)."""
        return bool(runtime) and all(e.key is not None and not key_per_request(self._key_text(e))
                                     for e in runtime)

    def _key_text(self, e: Event) -> str:
        """The key as written, or, for a local name, what it was assigned (`key = (rank,
        world_size)`)."""
        if isinstance(e.key, cst.Name) and e.function is not None:
            assigned = [v for v, _ in self.ctx.heavy.local_assignments(e.function).get(e.key.value, ())]
            if len(assigned) == 1:
                return self.ctx.code(assigned[0])
        return self.ctx.code(e.key)

    def _self_registered(self, runtime: list[Event]) -> bool:
        """Does every write store the instance itself (`self`, in a method) under a key
        that names it (a layer name, a prefix) rather than one per request?"""
        return bool(runtime) and all(
            e.value is not None and is_self(e.value) and e.cls is not None and e.key is not None
            and not key_per_request(self.ctx.code(e.key)) for e in runtime)

    def _process_memo(self, c: Candidate, runtime: list[Event]) -> bool:
        """Does every value functions store come from the cache itself - a tensor or a
        workspace object the writing function allocates from plain inputs (see
        `builds_own`) - under a key bounded by devices, dtypes or shapes, or, when the key
        is an object's identity (`t.data_ptr()`), a table of a few literal elements? Then
        the dict is a per-device / per-shape memo of constants or scratch meant to live as
        long as the process: it keeps no model, and grows with nothing but the devices
        and static shapes the process uses."""
        for e in runtime:
            if not builds_own(self.ctx, e.value, e.function, e.cls, container=c.name):
                return False
            if per_object_key(self.ctx, e.key, e.function, e.cls) and self._weighty(c, e):
                return False
        return True

    def _weighty(self, c: Candidate, e: Event) -> bool:
        """May the stored value pin more than a tensor of a few literal elements (followed
        through locals: `t = torch.tensor(ptrs); d[k] = t`)? Objects other than such
        tensors are taken to (a workspace may hold memory no tensor factory shows)."""
        origins, pending, seen = [], [e.value], set()
        while pending:
            value = pending.pop()
            if isinstance(value, cst.Name) and e.function is not None:
                if value.value in seen:
                    continue
                seen.add(value.value)
                pending.extend(
                    v for v, _ in self.ctx.heavy.local_assignments(e.function).get(value.value, ())
                    if v is not None and not reads_container(v, c.name)
                    and not (isinstance(v, cst.Name) and v.value == "None"))
            else:
                origins.append(value)
        return not origins or any(
            not self._tensor_factory(v) or substantial_value(self.ctx, v, e.function)
            for v in origins)

    def _tensor_factory(self, value: cst.BaseExpression) -> bool:
        """`torch.tensor(...)`, also through methods (`torch.tensor(ptrs).cuda()`)."""
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and isinstance(value.func.value, cst.Call):
            value = value.func.value
        return isinstance(value, cst.Call) and self.ctx.qualname(value.func) in TENSOR_FACTORIES

    def _of_classes(self, c: Candidate, writes: list[Event]) -> bool:
        """Are the dict's own entries (its literal, `dict(...)` arguments, writes at
        module level) classes or functions, and is there at least one?"""
        values: list[cst.BaseExpression] = []
        if isinstance(c.value, cst.Dict):
            values += [e.value for e in c.value.elements if isinstance(e, cst.DictElement)]
        elif isinstance(c.value, cst.Call) and c.container == "dict":
            for arg in c.value.args:
                if arg.keyword is not None:
                    values.append(arg.value)
                elif isinstance(arg.value, cst.Dict):
                    values += [e.value for e in arg.value.elements if isinstance(e, cst.DictElement)]
                else:
                    return False  # `dict(other)`: entries not seen
        values += [e.value for e in writes if e.function is None]
        return bool(values) and all(self._names_class_or_function(v) for v in values)

    def _names_class_or_function(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Lambda):
            return True
        qualified = self.ctx.qualname(value)
        if qualified is None:
            return False
        if qualified in self.ctx.classes or qualified in self.ctx.functions:
            return True
        if self.ctx.heavy.is_heavy_qualname(qualified):
            return True  # a heavy type named, not called (`nn.Linear`)
        index = self.ctx.index
        resolved = index.resolve(self.ctx.absolute(qualified)) or qualified
        return resolved in index.classes or resolved in index.functions

    def _value_annotation(self, c: Candidate) -> Optional[cst.BaseExpression]:
        if c.ctor_type is not None:
            value = self._annotation_value(c.ctor_type)
            if value is not None:
                return value
        annotation = c.annotation
        if annotation is None:
            annotation = self._bare_annotations.get((c.scope, c.name))
        return self._annotation_value(annotation) if annotation is not None else None

    def _value_kinds(self, expr, function, cls, depth: int) -> set[str]:
        """The shared inference, plus project functions of other files annotated to return
        a heavy type (`t = async_tensor_h2d(...)`)."""
        kinds = super()._value_kinds(expr, function, cls, depth)
        if not kinds and isinstance(expr, cst.Call):
            kinds = self._index_return_kinds(expr)
        return kinds

    def _write_kinds(self, e: Event) -> set[str]:
        kinds = self._value_kinds(e.value, e.function, e.cls, 0)
        if kinds:
            return kinds
        if self.ctx.heavy.is_heavy_value(e.value, e.function, e.cls):
            return {"other"}
        return set()

    def _index_return_kinds(self, call: cst.Call) -> set[str]:
        """A project function in another file annotated to return a heavy type."""
        index = self.ctx.index
        qualified = index.resolve(self.ctx.absolute(self.ctx.qualname(call.func)))
        function = index.functions.get(qualified or "")
        if function is None:
            return set()
        kinds: set[str] = set()
        for returned in function.returns:
            resolved = index.resolve(returned)
            if resolved in ("torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"):
                kinds.add("tensor")
            elif index.is_heavy_class(resolved):
                kinds.add(self._index_kind(resolved, frozenset())
                          if resolved in index.classes else "module")
        return kinds

    def _kept(self, e: Event) -> bool:
        """`x = d.setdefault(k, Model())`, `return d.setdefault(...)`: the caller keeps it."""
        node = e.node
        return (
            isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "setdefault" and id(node) not in self._discarded
        )

    # -- fix -----------------------------------------------------------------------
    def _fix(self, c: Candidate, kinds: set[str], events: list[Event]):
        if c.container in ("defaultdict", "ordered"):
            kind = "a defaultdict" if c.container == "defaultdict" else "an OrderedDict"
            return None, f"{kind} has no weak-valued equivalent; clear it on shutdown"
        if not c.empty:
            return None, "the dict starts non-empty; clear it on shutdown"
        if "tensor" in kinds:
            return None, ("cached tensors are usually held by the cache alone, so a weak dict "
                          "would drop them at once; clear the dict on shutdown")
        for e in events:
            if e.kind == "write" and e.value is not None and _not_weakrefable(e.value):
                return None, "a stored value cannot be weakly referenced; clear the dict on shutdown"
        for e in events:
            if e.kind == "write" and e.value is not None and _fresh(e.value) and not self._kept(e):
                text = self.ctx.code(e.value)
                text = text if len(text) <= 40 and "\n" not in text else text[:37].split("\n")[0] + "..."
                return None, (
                    f"`{text}` is stored as it is created, so the dict alone would hold it and "
                    "it would vanish at once; clear the dict on shutdown"
                )
        if kinds != {"module"}:
            return None, "the value type may not support weak references; clear the dict on shutdown"
        if not c.single_target:
            return None, None
        found = proven_module_ref(self.ctx, "weakref")
        if found is None:
            return None, "`weakref` is imported only conditionally, or the name means something else here"
        local, imports = found
        outer = f"{local}.WeakValueDictionary"
        new_value = self._retype_value(c.value, outer)
        if isinstance(c.small, cst.AnnAssign):
            new_ann = self._retype_annotation(c.small.annotation.annotation, outer)
            if new_ann is None:
                return None, "the annotation names another type"
            replacement = c.small.with_changes(
                annotation=c.small.annotation.with_changes(annotation=new_ann), value=new_value
            )
        else:
            replacement = c.small.with_changes(value=new_value)
        return self.fix(
            f"Use `{outer}` (entries vanish once nothing else uses their value)",
            {c.small: replacement},
            imports=imports,
        ), None


def _stores_parameter(e: Event) -> bool:
    """`d[k] = block_fn` where `block_fn` is a parameter of the writing function."""
    return (isinstance(e.value, cst.Name) and e.function is not None
            and find_param(e.function, e.value.value) is not None)


def _starts_filled(c: Candidate) -> bool:
    """Created with entries (`{"a": x}`, `dict(a=x)`, `defaultdict(list, {...})`)."""
    value = c.value
    if isinstance(value, cst.Dict):
        return bool(value.elements)
    if isinstance(value, cst.DictComp):
        return True
    if isinstance(value, cst.Call):
        return len(value.args) > (1 if c.container == "defaultdict" else 0)
    return False


def _fresh(value: cst.BaseExpression) -> bool:
    """A new object that nothing but the dict would reference (`d[k] = Model()`)."""
    if isinstance(value, cst.IfExp):
        return _fresh(value.body) or _fresh(value.orelse)
    return not isinstance(value, (cst.Name, cst.Attribute, cst.Subscript))


def _not_weakrefable(value: cst.BaseExpression) -> bool:
    if isinstance(value, _NOT_WEAKREFABLE):
        return True
    if isinstance(value, cst.UnaryOperation):
        return _not_weakrefable(value.expression)
    return isinstance(value, cst.Name) and value.value in _CONSTANT_NAMES
