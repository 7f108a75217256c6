"""RL301 strong-module-keyed-cache."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self, proven_module_ref
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.heavy import find_param
from retainlint.analysis.holding import keeps_argument
from retainlint.project.names import UNION_WRAPPERS
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.analysis.module_caches import Candidate, ContainerTracker, Event, annotation_text
from retainlint.rules.prefilters.rl301 import StrongModuleKeyedCachePrefilter, per_call_positions
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
    summary = "A module-level or class-level dict/set keyed by models or tensors keeps them alive forever (also object-keyed memos on an instance)"
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

An instance attribute made a container in `__init__` (`self._memo = {}`) is reported
when a method fills it under a parameter it was passed and reads it back by that key (a
memo), and either the key is heavy or the value stored is built around the key
(`self._memo[context] = Executor(context, self)` where `Executor` keeps `context`): every
object passed stays alive as long as the memo's owner, which is often itself long-lived
(held by another cache). A warning unless the key is heavy. Keys annotated as plain
values (`str`, `int`, `tuple`, `torch.device`), parameters rebound before the write,
values that do not hold the key, memos never read back, and keys the method checks
against the names they may take (`if trace in self.traces:`, membership in a literal
collection, `key == "contour"`: a name from a known set) are not reported.

A module- or class-level memo that a method fills under the instance itself and reads
back by it (`_boxes[self] = box ... return _boxes[self]`, also through a local that holds
`self` or a tuple with it) keeps every instance the method ever ran on, whatever the
class: reported as a warning when the keys are not known to be heavy. A container written
under `self` but never read back by it (a registry) is left to the other rules.

A module- or class-level container written, in an override of a library callback, under
an object the library hands that callback afresh on every call and drops afterwards - the
parsed document of lxml's element-class `lookup(type, doc, namespace, name)`, the log
record of a `logging.Handler`/`Filter`/`Formatter` method, the node of an
`ast.NodeVisitor`'s `visit_*`, the request of a `socketserver` server - also inside a
tuple key or through a local holding one, keeps every one of them: an error, the growth
has no bound. Keys made of the callback's plain arguments (`(node_type, namespace, name)`)
or of the object's fields (`record.msg`) are not reported.

A container is not reported when the file removes entries from it (`del c[k]`, `.pop`,
`.popitem`, `.clear`, `.discard`, `.remove`, `-=`), rebinds it from a function
(`global c; c = {}`, `cls.c = {}`), or hands it to other code that might
(`x = c`, `return c`, `prune(c)`). Keys that are strings, ints, `id(...)`, classes or
enums are not heavy and are never reported; neither are local variables. A container
annotated to hold classes (`set[type[nn.Module]]`, `Dict[Type[X], V]`) holds classes even
when a function adds a parameter loosely annotated with the instance type
(`def register(layer: nn.Module)`).

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

An instance memo keyed by the objects a method is passed:

```python
class TranslationUnit:
    def __init__(self):
        self._executors = {}  # RL301: every context ever passed stays alive

    def executor(self, context):
        if context not in self._executors:
            self._executors[context] = Executor(context, self)  # keeps `context`
        return self._executors[context]
```

A module-level memo keyed by the instance, in any class:

```python
_boxes = {}  # RL301 (warning): every Cell whose box was asked for stays alive

class Cell:
    def bounding_box(self):
        if self not in _boxes:
            _boxes[self] = compute_box(self.polygons)
        return _boxes[self]
```
Keep the result on the instance instead (`self._box = ...`).

A class-level memo keyed by the document lxml passes to the element-class lookup:

```python
from lxml.html import HtmlElementClassLookup

class DomLookup(HtmlElementClassLookup):
    _lookups = {}  # RL301: every parsed document stays alive

    def lookup(self, node_type, document, namespace, name):
        k = (node_type, document, namespace, name)
        if k not in self._lookups:
            self._lookups[k] = make_class(name)
        return self._lookups[k]
```
Make it an instance attribute (`self._lookups = {}` in `__init__`): it dies with the
parser that owns the lookup.

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
        # written under `self` but never read back by it: a registry, not a memo
        """
_seen = {}

class Cell:
    def __init__(self, name):
        _seen[self] = name
""",
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
        # an instance memo keyed by a plain value, or whose values do not hold the key
        """
class Program:
    def __init__(self):
        self._by_name = {}
        self._sizes = {}

    def named(self, name: str):
        if name not in self._by_name:
            self._by_name[name] = Executor(name)
        return self._by_name[name]

    def size_of(self, context):
        if context not in self._sizes:
            self._sizes[context] = len(context.devices)
        return self._sizes[context]
""",
        # a library callback's memo keyed by its plain arguments, or by a method no
        # library calls (what it is handed is unknown)
        """
import logging
from lxml import etree

_seen = {}

class Lookup(etree.CustomElementClassLookup):
    _by_name = {}

    def lookup(self, node_type, document, namespace, name):
        key = (node_type, namespace, name)
        if key not in self._by_name:
            self._by_name[key] = make_class(name)
        return self._by_name[key]

class Once(logging.Filter):
    def filter(self, record):
        _seen[record.msg] = True
        return True

class Documents:
    _parsed = {}

    def parse(self, document):
        if document not in self._parsed:
            self._parsed[document] = expensive_parse(document)
        return self._parsed[document]
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
        # an instance memo whose values keep the key they were made for
        Example(
            """
class Executor:
    def __init__(self, context):
        self.context = context

class TranslationUnit:
    def __init__(self):
        self._executors = {}

    def executor(self, context):
        if context not in self._executors:
            self._executors[context] = Executor(context)
        return self._executors[context]
""",
            lines=[8],
        ),
        # a module-level memo keyed by the instance, in a class that is not heavy
        Example(
            """
_boxes = {}

class Cell:
    def __init__(self, points):
        self.points = points

    def bounding_box(self):
        if self not in _boxes:
            _boxes[self] = (min(self.points), max(self.points))
        return _boxes[self]
""",
            lines=[2],
        ),
        # a class-level memo keyed by the document lxml hands the lookup on every parse
        Example(
            """
from lxml.html import HtmlElementClassLookup

class DomLookup(HtmlElementClassLookup):
    _lookups = {}

    def lookup(self, node_type, document, namespace, name):
        k = (node_type, document, namespace, name)
        if k not in self._lookups:
            self._lookups[k] = make_class(name)
        return self._lookups[k]
""",
            lines=[5],
        ),
    ]

    _scopes = ("module", "class", "instance")

    def _judge(self, c: Candidate, events: list[Event]) -> None:
        if any(e.kind in ("remove", "escape") for e in events):
            return
        if c.scope[0] == "instance":
            self._judge_instance(c, events)
            return
        annotation = c.annotation if c.annotation is not None else self._bare_annotations.get((c.scope, c.name))
        ann_key = self._annotation_key(annotation) if annotation is not None else None
        key_ann = c.key_annotation if c.key_annotation is not None else ann_key
        kinds: set[str] = set()
        described = None
        if key_ann is not None:
            kinds = self._ann_kinds(key_ann)
            if kinds:
                described = annotation_text(key_ann)
        annotated = set(kinds)
        # keys annotated as classes (`set[type[nn.Module]]`): a writer's parameter
        # annotated with the instance type (`register(layer: nn.Module)`) is loose
        of_classes = key_ann is not None and self._annotates_classes(key_ann)
        heavy_writes: list[Event] = []
        for e in events:
            if e.kind != "write" or of_classes and _is_parameter(e.key, e.function):
                continue
            write_kinds = self._value_kinds(e.key, e.function, e.cls, 0)
            if not write_kinds and self.ctx.heavy.is_heavy_value(e.key, e.function, e.cls):
                write_kinds = {"other"}
            if write_kinds:
                kinds |= write_kinds
                heavy_writes.append(e)
        if not kinds:
            if not self._judge_instance_keyed_memo(c, events):
                self._judge_per_call_keys(c, events)
            return
        described = _described(kinds) if described is None else f"`{described}`"
        holder = "module global" if c.scope[0] == "module" else f"class attribute of `{c.scope[1]}`"
        message = f"`{c.name}` ({holder}) keeps {described} keys alive: entries are never removed"
        kept = f"every {described} key" + ("" if c.container == "set" else ", with its value")
        grows = any(e.kind == "write" and e.function is not None for e in events)  # keys come at run time
        fix, why_not = self._fix(c, kinds, annotated, events)
        if fix is None and why_not:
            message += f" (no automatic fix: {why_not})"
        related = [RelatedNode("heavy key written here", e.node) for e in heavy_writes[:1] if e.node]
        self.report(c.target, message, fix=fix, related=related, statement=c.statement,
                    consequence=Consequence(kept, f"`{c.name}` ({holder})", "the process",
                                            "one entry per distinct key added" if grows else ""))

    def _judge_instance(self, c: Candidate, events: list[Event]) -> None:
        """`self.memo = {}` in `__init__`, filled by a method under a key it was passed
        and looked up there by the same key: an object-keyed memo. Each object passed
        stays alive as long as the instance - reported when the key is heavy, or when
        the stored value is built around the key (`self.memo[ctx] = Executor(ctx)`: an
        object made for each key, that keeps it)."""
        written = {id(e.node) for e in events if e.kind == "write"}
        for e in events:
            fn = e.function
            if e.kind != "write" or fn is None or not isinstance(e.key, cst.Name):
                continue
            name = e.key.value
            param = find_param(fn, name)
            if (param is None or name in ("self", "cls") or fn.name.value == "__init__"
                    or _plain_annotation(self.ctx, param.annotation)
                    or name in self.ctx.heavy.local_assignments(fn)):
                continue
            if not any(x.kind == "lookup" and x.function is fn and id(x.node) not in written
                       and isinstance(x.key, cst.Name) and x.key.value == name for x in events):
                continue  # not read back by this key: not a memo
            if _checked_as_a_name(fn, name, c.name):
                continue  # one of the names the instance knows: as many entries as names
            kinds = self._value_kinds(e.key, fn, e.cls, 0)
            if not kinds and not self._built_around(e.value, name, fn):
                continue
            described = _described(kinds)
            method = fn.name.value
            message = (f"`self.{c.name}` (instance attribute of `{c.scope[1]}`) keeps every "
                       f"{described + ' ' if described else ''}`{name}` passed to `{method}()` alive "
                       f"as long as the instance: entries are never removed"
                       + ("" if kinds else f", and each value stored is built around its `{name}`"))
            fix, why_not = self._fix(c, kinds, set(), events)
            if fix is None and why_not:
                message += f" (no automatic fix: {why_not})"
            self.report(c.target, message, fix=fix, statement=c.statement,
                        severity=Severity.ERROR if kinds else Severity.WARNING,
                        related=[RelatedNode("written here", e.node)] if e.node else [],
                        consequence=Consequence(
                            f"every `{name}` passed to `{method}()`{' (heavy)' if kinds else ''}", f"`self.{c.name}`",
                            f"as long as the `{c.scope[1]}` instance", f"one entry per distinct `{name}`"))
            return

    def _judge_instance_keyed_memo(self, c: Candidate, events: list[Event]) -> bool:
        """A module- or class-level memo a method fills under `self` and reads back by it
        (`_boxes[self] = box ... return _boxes[self]`, also through a local holding `self`):
        every instance the method ever ran on stays alive with all it holds. A warning:
        the instances are not known to be heavy."""
        written = {id(e.node) for e in events if e.kind == "write"}
        for e in events:
            fn = e.function
            if e.kind != "write" or fn is None or e.cls is None or e.key is None or not self._is_instance(e.key, fn):
                continue
            key = self.ctx.code(e.key)
            if not any(x.kind == "lookup" and x.function is fn and id(x.node) not in written
                       and x.key is not None and self.ctx.code(x.key) == key for x in events):
                continue  # not read back by this key: not a memo
            holder = "module global" if c.scope[0] == "module" else f"class attribute of `{c.scope[1]}`"
            owner, method = e.cls.name.value, fn.name.value
            self.report(
                c.target,
                f"`{c.name}` ({holder}) keeps every `{owner}` whose `{method}()` ran alive, with "
                f"all it holds: the memo is keyed by the instance and entries are never removed "
                f"(keep the result on the instance instead)",
                statement=c.statement, severity=Severity.WARNING,
                related=[RelatedNode("keyed by the instance here", e.node)] if e.node else [],
                consequence=Consequence(f"every `{owner}` whose `{method}()` ran, with all it holds",
                                        f"`{c.name}` ({holder})", "the process", f"one entry per `{owner}` instance"),
            )
            return True
        return False

    def _judge_per_call_keys(self, c: Candidate, events: list[Event]) -> None:
        """A module- or class-level container written, in an override of a library
        callback, under an object the library hands that callback afresh on every call
        (lxml's `lookup(type, doc, namespace, name)` document, a handler's log record,
        a visitor's node), also inside a tuple or through a local holding one: every
        document, record or node ever seen stays alive, one more per call - an error
        (unbounded), although none of them is known to be heavy."""
        for e in events:
            fn = e.function
            if e.kind != "write" or fn is None or e.cls is None or e.key is None:
                continue
            params = [*fn.params.posonly_params, *fn.params.params][1:]
            fresh = {params[i].name.value for base in self._library_bases(e.cls)
                     for i in per_call_positions(base, fn.name.value) if i < len(params)}
            held = self._per_call_part(e.key, fn, fresh)
            if held is None:
                continue
            holder = "module global" if c.scope[0] == "module" else f"class attribute of `{c.scope[1]}`"
            self.report(
                c.target,
                f"`{c.name}` ({holder}) keeps every `{held}` the library passes to "
                f"`{e.cls.name.value}.{fn.name.value}()` alive, one more per call: it is a key "
                f"and entries are never removed (keep the container on the instance, or key it "
                f"by plain values)",
                statement=c.statement,
                related=[RelatedNode("keyed by it here", e.node)] if e.node else [],
                consequence=Consequence(
                    f"every `{held}` passed to `{e.cls.name.value}.{fn.name.value}()`",
                    f"`{c.name}` ({holder})", "the process", f"one more `{held}` per call"),
            )
            return

    def _library_bases(self, cls: cst.ClassDef, depth: int = 0) -> set[str]:
        """The qualified names of `cls`'s bases, through the classes of this file."""
        found: set[str] = set()
        for arg in cls.bases:
            name = self.ctx.qualname(arg.value)
            if not name:
                continue
            local = self.ctx.classes.get(name)
            if local is not None and local is not cls and depth < 5:
                found |= self._library_bases(local, depth + 1)
            else:
                found.add(name)
        return found

    def _per_call_part(self, key: cst.BaseExpression, fn: cst.FunctionDef, fresh: set[str],
                       depth: int = 0) -> Optional[str]:
        """The per-call parameter the key is, holds in a tuple, or is a local assigned
        one of those (never rebound to anything else)."""
        if not fresh:
            return None
        if isinstance(key, cst.Tuple):
            return next((found for el in key.elements
                         if (found := self._per_call_part(el.value, fn, fresh, depth)) is not None), None)
        if not isinstance(key, cst.Name):
            return None
        assigned = self.ctx.heavy.local_assignments(fn).get(key.value, ())
        if key.value in fresh:
            return key.value if not assigned else None
        if depth == 0 and len(assigned) == 1 and assigned[0][0] is not None:
            return self._per_call_part(assigned[0][0], fn, fresh, 1)
        return None

    def _is_instance(self, key: cst.BaseExpression, fn: cst.FunctionDef, depth: int = 0) -> bool:
        """`self` in a method, a tuple holding it, or a local assigned one of those (in
        either branch of a conditional expression)."""
        if isinstance(key, cst.Name):
            if key.value == "self":
                params = fn.params.posonly_params or fn.params.params
                return bool(params) and params[0].name.value == "self"
            if depth == 0:
                return any(v is not None and self._is_instance(v, fn, 1)
                           for v, _ in self.ctx.heavy.local_assignments(fn).get(key.value, ()))
            return False
        if isinstance(key, cst.IfExp):
            return self._is_instance(key.body, fn, depth) or self._is_instance(key.orelse, fn, depth)
        if isinstance(key, cst.Tuple):
            return any(self._is_instance(el.value, fn, depth) for el in key.elements)
        return False

    def _built_around(self, value: Optional[cst.BaseExpression], key: str, fn: cst.FunctionDef) -> bool:
        """Is the stored value (or the one local it comes from) an object of a class of
        this file whose `__init__` keeps the key (`Executor(context, self)` storing
        `self.context = context`)? Proof from the class, not from the name alone."""
        if isinstance(value, cst.Name):
            assigned = [v for v, _ in self.ctx.heavy.local_assignments(fn).get(value.value, ())]
            value = assigned[0] if len(assigned) == 1 else None
        return isinstance(value, cst.Call) and keeps_argument(self.ctx, value, key)

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


# parameter annotations of plain values: a memo keyed by them holds no object
_PLAIN_KEYS = frozenset(
    {"str", "int", "float", "bool", "bytes", "tuple", "frozenset", "builtins.str", "builtins.int",
     "torch.device", "torch.dtype", "typing.Tuple", "typing.FrozenSet", "typing.Hashable",
     "collections.abc.Hashable"}
)


def _described(kinds: set[str]) -> str:
    return "`nn.Module`" if kinds == {"module"} else "`torch.Tensor`" if kinds == {"tensor"} else "heavy" if kinds else ""


def _checked_as_a_name(fn: cst.FunctionDef, name: str, memo: str) -> bool:
    """Does `fn` check its key `name` against the names it may take - membership in
    another collection the instance keeps (`if trace in self.traces`), in a literal one, or
    equality with a string (`key == "contour"`)? Then the key is a name from a known set,
    not an object the memo keeps alive."""
    for node in iter_nodes(fn.body):
        if not (isinstance(node, cst.Comparison) and isinstance(node.left, cst.Name) and node.left.value == name):
            continue
        for target in node.comparisons:
            other = target.comparator
            if isinstance(target.operator, (cst.In, cst.NotIn)) and (
                    isinstance(other, cst.Attribute) and is_self(other.value) and other.attr.value != memo
                    or isinstance(other, (cst.List, cst.Tuple, cst.Set))):
                return True
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)) and isinstance(other, cst.SimpleString):
                return True
    return False


def _plain_annotation(ctx, annotation: Optional[cst.Annotation]) -> bool:
    """Is a parameter annotated as a plain value (`str`, `int | None`, `tuple[int, ...]`,
    `torch.device`)?"""
    if annotation is None:
        return False
    ann = annotation.annotation
    if isinstance(ann, cst.SimpleString):
        try:
            ann = cst.parse_expression(ann.evaluated_value)
        except Exception:
            return False
    parts = [ann]
    while isinstance(parts[-1], cst.BinaryOperation):
        parts[-1:] = [parts[-1].left, parts[-1].right]
    if isinstance(ann, cst.Subscript) and ctx.qualname(ann.value) in UNION_WRAPPERS:
        parts = [e.slice.value for e in ann.slice if isinstance(e.slice, cst.Index)]
    return all(
        (isinstance(p, cst.Name) and p.value == "None")
        or ctx.qualname(p.value if isinstance(p, cst.Subscript) else p) in _PLAIN_KEYS
        for p in parts
    )


def _is_parameter(key: Optional[cst.BaseExpression], fn: Optional[cst.FunctionDef]) -> bool:
    return isinstance(key, cst.Name) and fn is not None and find_param(fn, key.value) is not None
