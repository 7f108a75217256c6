"""RL301 strong-module-keyed-cache."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.cstutil import proven_module_ref
from retainlint.core.finding import Applicability, Severity
from retainlint.analysis.module_caches import Candidate, ContainerTracker, Event, annotation_text
from retainlint.rules.prefilters.rl301 import StrongModuleKeyedCachePrefilter
from retainlint.analysis.rule import Example, RelatedNode, Rule

# builtins whose results (str, int, tuple...) cannot be weakly referenced
_BUILTIN_VALUES = frozenset(
    name for short in ("id", "hash", "str", "repr", "int", "float", "bool", "bytes", "tuple",
                       "len", "format", "ord", "chr", "abs", "round", "sum")
    for name in (short, f"builtins.{short}")
)


class StrongModuleKeyedCache(ContainerTracker, Rule):
    prefilter = StrongModuleKeyedCachePrefilter
    name = "strong-module-keyed-cache"
    summary = "A module-level or class-level dict/set keyed by models or tensors keeps them alive forever"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    def applies(self) -> bool:
        return self.has_candidates()

    docs = """
## What it does
Reports a module-level (or class-level) `dict`, `set`, `defaultdict` or `OrderedDict`
whose keys are heavy objects (models, tensors, configured heavy types), when nothing in
the file ever takes entries out of it. The keys are known to be heavy when:

- the container is annotated so: `_cache: dict[nn.Module, X] = {}`,
  `_cache = dict[nn.Module, "X"]()`, `_seen: set[torch.Tensor] = set()`,
  `typing.Dict[...]`, string annotations, `ClassVar[...]`/`Final[...]` wrappers; or
- it is written with a heavy key anywhere in the file: `_cache[self] = ...` in a method
  of an `nn.Module` subclass, `_cache[model] = ...` where `model` is annotated or
  inferred heavy, `_cache.setdefault(model, ...)`, `_seen.add(tensor)`; for class-level
  containers also through `cls._cache`, `ClassName._cache` and `self._cache`.

A container is not reported when the file removes entries from it (`del c[k]`, `.pop`,
`.popitem`, `.clear`, `.discard`, `.remove`, `-=`), rebinds it from a function
(`global c; c = {}`, `cls.c = {}`), or hands it to other code that might
(`x = c`, `return c`, `prune(c)`). Keys that are strings, ints, `id(...)`, classes or
enums are not heavy and are never reported; neither are local variables.

## Why it leaks
A module global (or a class attribute) is a GC root: its keys live until the interpreter
exits. A model used as a key keeps all its parameters and buffers - gigabytes of GPU
memory - allocated after the engine that built it has shut down.

## Incident
vLLM cached each multimodal model's language submodule in
`_language_model_by_module = dict[nn.Module, "VllmModel"]()`, written as
`_language_model_by_module[self] = mod`. After `engine.shutdown()` the engine was gone but
the dict still held the model. The fix made it a `weakref.WeakKeyDictionary()` (the value
is a submodule of the key; modules hold no reference to their parent, so the value does
not keep the key alive).

## Example
```python
import torch.nn as nn

_language_model_by_module = dict[nn.Module, "VllmModel"]()  # RL301

class Wrapper(nn.Module):
    def get_language_model(self):
        if self not in _language_model_by_module:
            _language_model_by_module[self] = self.language_model
        return _language_model_by_module[self]
```

## Fix (safe)
`weakref.WeakKeyDictionary` for dicts, `weakref.WeakSet` for sets, keeping the
annotation's types (`dict[nn.Module, X]()` becomes
`weakref.WeakKeyDictionary[nn.Module, X]()`; `_c: dict[nn.Module, X] = {}` becomes
`_c: weakref.WeakKeyDictionary[nn.Module, X] = weakref.WeakKeyDictionary()`), adding
`import weakref` when needed. No fix is offered (the finding is still reported) when:

- a written value is, or obviously holds, the key (`_c[m] = m`, `_c[m] = (m, n)`,
  `_c[m] = Wrapper(m)`, `_c[self] = self.forward`): a weak key would never die;
- the container is a `defaultdict` or an `OrderedDict` (no weak equivalent), or starts
  non-empty;
- the keys are tensors: `Tensor.__eq__` is element-wise, which breaks
  `WeakKeyDictionary`/`WeakSet` lookups (use `torch.utils.weak.WeakIdKeyDictionary`);
- the keys are configured heavy types (they may not support weak references);
- a key written or looked up may not support weak references (a string, number, tuple,
  f-string, `id(...)`, or keys added in bulk with `update`): a weak dict raises
  `TypeError` on it;
- `weakref` is imported only conditionally (`if TYPE_CHECKING:`, a `__main__` guard) or
  the name stands for something else in the file.
"""

    valid = [
        # string keys
        """
import torch.nn as nn

_registry: dict[str, nn.Module] = {}

def register(name: str, model: nn.Module):
    _registry[name] = model
""",
        # id(...) keys, class keys
        """
import torch.nn as nn

_by_id = {}
_by_type = {}

class Net(nn.Module):
    def remember(self):
        _by_id[id(self)] = 1
        _by_type[type(self)] = 2
""",
        # pruned somewhere in the file
        """
import torch.nn as nn

_cache = dict[nn.Module, int]()

class Net(nn.Module):
    def remember(self):
        _cache[self] = 1

    def close(self):
        _cache.pop(self, None)
""",
        # rebound from a function with `global`
        """
import torch

_seen: set[torch.Tensor] = set()

def reset():
    global _seen
    _seen = set()
""",
        # local variables and containers inside functions
        """
import torch.nn as nn

def build(model: nn.Module):
    cache = {}
    cache[model] = 1
    return cache
""",
        # already weak
        """
import weakref
import torch.nn as nn

_cache: weakref.WeakKeyDictionary[nn.Module, int] = weakref.WeakKeyDictionary()
""",
        # a local of the same name shadows the global
        """
import torch.nn as nn

_cache = {}

def f(model: nn.Module):
    _cache = {}
    _cache[model] = 1
""",
    ]
    invalid = [
        Example(
            """
import torch.nn as nn

# Cache results of `get_language_model`
_language_model_by_module = dict[nn.Module, "VllmModel"]()

class SupportsMultiModal:
    def get_language_model(self) -> "VllmModel":
        if self in _language_model_by_module:
            return _language_model_by_module[self]
        mod = self.language_model
        _language_model_by_module[self] = mod
        return mod
""",
            lines=[5],
            fixed="""
import torch.nn as nn
import weakref

# Cache results of `get_language_model`
_language_model_by_module = weakref.WeakKeyDictionary[nn.Module, "VllmModel"]()

class SupportsMultiModal:
    def get_language_model(self) -> "VllmModel":
        if self in _language_model_by_module:
            return _language_model_by_module[self]
        mod = self.language_model
        _language_model_by_module[self] = mod
        return mod
""",
        ),
        # annotated, typing.Dict, and an aliased weakref import
        Example(
            """
import weakref as wr
from typing import Dict

from torch import nn

_shapes: Dict[nn.Module, tuple] = {}
""",
            lines=[7],
            fixed="""
import weakref as wr
from typing import Dict

from torch import nn

_shapes: wr.WeakKeyDictionary[nn.Module, tuple] = wr.WeakKeyDictionary()
""",
        ),
        # inferred from writes: `self` in an nn.Module subclass, `.add` on a set
        Example(
            """
import torch

_owners = {}
_seen = set()

class Block(torch.nn.Module):
    def forward(self, x):
        _owners[self] = x.shape
        _seen.add(self)
        return x
""",
            lines=[4, 5],
            fixed="""
import torch
import weakref

_owners = weakref.WeakKeyDictionary()
_seen = weakref.WeakSet()

class Block(torch.nn.Module):
    def forward(self, x):
        _owners[self] = x.shape
        _seen.add(self)
        return x
""",
        ),
        # class-level container written through `cls`
        Example(
            """
import torch.nn as nn

class Registry:
    _models: "dict[nn.Module, str]" = {}

    @classmethod
    def add(cls, model: nn.Module, name: str):
        cls._models[model] = name
""",
            lines=[5],
            fixed="""
import torch.nn as nn
import weakref

class Registry:
    _models: "weakref.WeakKeyDictionary[nn.Module, str]" = weakref.WeakKeyDictionary()

    @classmethod
    def add(cls, model: nn.Module, name: str):
        cls._models[model] = name
""",
        ),
        # report only: the value holds the key; a defaultdict; tensor keys
        Example(
            """
import collections
import torch
import torch.nn as nn

_entries = {}
_calls = collections.defaultdict(int)
_norms: dict[torch.Tensor, float] = {}

def track(model: nn.Module):
    _entries[model] = (model, 1)
    _calls[model] += 1
""",
            lines=[6, 7, 8],
        ),
    ]

    def _judge(self, c: Candidate, events: list[Event]) -> None:
        if any(e.kind in ("remove", "escape") for e in events):
            return
        annotation = c.annotation
        if annotation is None:
            annotation = self._bare_annotations.get((c.scope, c.name))
        ann_key = self._annotation_key(annotation) if annotation is not None else None
        key_ann = c.key_annotation if c.key_annotation is not None else ann_key
        kinds: set[str] = set()
        described = None
        if key_ann is not None:
            kinds = self._ann_kinds(key_ann)
            if kinds:
                described = annotation_text(key_ann)
        annotated = set(kinds)
        heavy_writes: list[Event] = []
        for e in events:
            if e.kind != "write":
                continue
            write_kinds = self._value_kinds(e.key, e.function, e.cls, 0)
            if not write_kinds and self.ctx.heavy.is_heavy_value(e.key, e.function, e.cls):
                write_kinds = {"other"}
            if write_kinds:
                kinds |= write_kinds
                heavy_writes.append(e)
        if not kinds:
            return
        if described is None:
            described = (
                "`nn.Module`" if kinds == {"module"}
                else "`torch.Tensor`" if kinds == {"tensor"}
                else "heavy"
            )
        else:
            described = f"`{described}`"
        holder = "module global" if c.scope[0] == "module" else f"class attribute of `{c.scope[1]}`"
        message = f"`{c.name}` ({holder}) keeps {described} keys alive: entries are never removed"
        fix, why_not = self._fix(c, kinds, annotated, events)
        if fix is None and why_not:
            message += f" (no automatic fix: {why_not})"
        related = [RelatedNode("heavy key written here", e.node) for e in heavy_writes[:1] if e.node]
        self.report(c.target, message, fix=fix, related=related, statement=c.statement)

    # -- fix -----------------------------------------------------------------------
    def _fix(self, c: Candidate, kinds: set[str], annotated: set[str], events: list[Event]):
        if c.container in ("defaultdict", "ordered"):
            kind = "a defaultdict" if c.container == "defaultdict" else "an OrderedDict"
            return None, f"{kind} has no weak-keyed equivalent; remove entries on shutdown"
        if not c.empty:
            return None, "the container starts non-empty"
        if "tensor" in kinds:
            return None, "tensor keys compare element-wise; use `torch.utils.weak.WeakIdKeyDictionary`"
        if kinds != {"module"}:
            return None, "the key type may not support weak references"
        if not c.single_target:
            return None, None
        for e in events:
            if e.kind == "write" and e.value is not None and self._holds(e.value, e.key, e.function, e.cls, 0):
                return None, "a stored value holds the key, so a weak key would never die"
        for e in events:
            # a weak container raises TypeError on a key it cannot weakly reference
            # (`c["x"] = v`, `c.get(0)`), where the dict stored it or answered
            if e.kind in ("write", "lookup") and not self._weakly_referenceable(e, annotated):
                key = f"`{self.ctx.code(e.key)}`" if e.key is not None else "a key added in bulk"
                return None, f"{key} may not support weak references"
        ref = proven_module_ref(self.ctx, "weakref")
        if ref is None:
            return None, "`weakref` is imported only conditionally, or the name means something else here"
        local, imports = ref
        outer = f"{local}.WeakKeyDictionary" if c.container == "dict" else f"{local}.WeakSet"
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
        return self.fix(f"Use `{outer}`", {c.small: replacement}, imports=imports), None

    def _weakly_referenceable(self, e: Event, annotated: set[str]) -> bool:
        """Is the key of a write or lookup known to be a module (weakly referenceable)?
        Known from its own type, or from the container's annotation when the key is not
        a literal or a builtin's result (`"x"`, `(a, b)`, `f"..."`, `id(m)`)."""
        key = e.key
        if key is None:
            return False  # `c.update(other)`, `c |= other`: keys not seen
        if self._value_kinds(key, e.function, e.cls, 0) == {"module"}:
            return True
        if annotated != {"module"}:
            return False
        if isinstance(key, cst.Call):
            return self.ctx.qualname(key.func) not in _BUILTIN_VALUES
        return isinstance(key, (cst.Name, cst.Attribute, cst.Subscript)) and not (
            isinstance(key, cst.Name) and key.value in ("None", "True", "False"))
