"""RL602 release-keeps-heavy-attribute."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import (
    OwnScopeVisitor,
    append_to_function,
    body_functions,
    body_statements,
    is_self,
    self_attribute,
)
from retainlint.core.finding import Applicability, Position, Related, Severity
from retainlint.core.paths import display_path
from retainlint.analysis.fix_preconditions import end_reachable, nulling, still_held
from retainlint.analysis.heavy import find_param
from retainlint.analysis.holding import caller_supplied
from retainlint.project.index import qualified_in
from retainlint.project.names import HEAVY_TYPES, TENSOR_TYPES as _TENSOR_TYPES, releases as releases_word
from retainlint.project.release_shape import exception_slots, may_release_parts, releasing_owners
from retainlint.analysis.release import FINALIZER, is_release_method, release_methods, release_names
from retainlint.analysis.weight import sources, substantial_value, weigher, weightless_layer
from retainlint.rules.prefilters.rl602 import (
    ACCESSORS, ACQUIRES, ReleaseKeepsHeavyAttributePrefilter, may_store_exception,
)
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.walk import visit

# Synchronization primitives: a lock or semaphore acquired and never released holds no
# memory and no resource to give back (a deadlock is another matter).
_SYNC_PRIMITIVES = frozenset(
    f"{module}.{name}"
    for module in ("threading", "multiprocessing", "asyncio", "trio")
    for name in ("Lock", "RLock", "Semaphore", "BoundedSemaphore", "Condition", "Event", "Barrier",
                 "CapacityLimiter")
)

# Release methods that cannot be called from a fix (they need arguments or run anyway).
_DUNDER_RELEASE = frozenset({"__del__", "__exit__", "__aexit__"})
_MAX_DEPTH = 8


@dataclass
class _Heavy:
    attr: str
    value: cst.BaseExpression  # what was assigned
    origin: cst.Call  # the call that built it
    annotation: Optional[cst.BaseExpression]
    fn: cst.FunctionDef  # the method that assigns it


class ReleaseKeepsHeavyAttribute(Rule):
    prefilter = ReleaseKeepsHeavyAttributePrefilter
    name = "release-keeps-heavy-attribute"
    summary = "A release method never drops an attribute that holds a model, tensors or an object owning them"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    docs = """
## What it does
Reports a class whose release methods (`shutdown`, `close`, `cleanup`, `release`,
`teardown`, `free`, `stop`, `__exit__`, `__aexit__`; configurable) never drop an
attribute that the class itself assigns a heavy object anywhere: a model or tensor it
builds (`self.model = nn.Linear(...)`, `self.kv = torch.empty(...)`, the result of a
function annotated to return one), or an instance of a project class that holds such
attributes (`self.model_runner = GPUModelRunner(...)`).

Dropping means, in a release method or any method it calls on `self` (also methods
inherited from project base classes and reached through `super()`): `del self.x`,
`self.x = None` (or any new value), `self.x.clear()`, `delattr(self, "x")`, calling a
release method of the attribute (`self.x.shutdown()`, also through a local such as
`if r := getattr(self, "x", None): r.shutdown()`), moving it off the accelerator
(`self.x.to("cpu")`, `self.x.cpu()`), `del self.x[:]`, or handing it to a releasing
function (`free_cache(self.x)`), or shrinking its storage to nothing in place
(`self.x.storage().resize_(0)`).

Not reported, because nothing worth freeing is kept or the class does not own it (nor a
part the caller handed in that an ordinary method closes, a lock or semaphore never given
back, an exception the class raises once released - `if self.closed: raise self._failure`
- or a store reached by a callback the object registers for itself):
attributes handed in by the caller (`self.model = model`) or fetched from elsewhere
(`next(...)`, `getattr(...)`, `.get(...)`); aliases of other attributes
(`self.b = self.a`: RL601's business); tensors of a few literal elements
(`torch.zeros(3)`, `torch.tensor([0, n])`, a pointer table built from a Python list);
modules without weights (`nn.ReLU()`, `nn.Dropout(p)`, an op such as `Sampler()`), and
project objects holding only such things; classes that are themselves `nn.Module`s
(their submodules and buffers are their state); Ray actors (`@ray.remote`,
`ray.remote(Cls)` in the same file: the actor's process goes away with it). Nor are these
release methods, which do not release the whole object while it lives on: `__del__`
(attributes die with the object); methods that free one item per call - taking
arguments (`free(self, blocks)`), or an optional one that is the item
(`free(self, index: Tensor | None = None)`, or one without which the method returns at
once: `if slot is None: return`); process-exit cleanup - a method called only from
`__del__` or only registered with `atexit` / `weakref.finalize`, never called on a live
instance by the class, a subclass in its file, or code known to hold an instance
(`self.comm = Comm(...)` ... `self.comm.close()`, `store = Store()` ... `store.close()`);
a release called only as the last statement of the function that made the instance a local,
never handed on (`recipe = Recipe(cfg); recipe.train(); recipe.cleanup()`: the instance goes
when its release returns); abstract ones; and classes whose release path drops attributes by name (`vars(self)`,
`self.__dict__`), hands `self` to other code or calls a callable attribute (a
finalizer). One release method dropping an attribute is enough.

Six more shapes (the last four whatever the part holds, torch or not):

- **a stored exception** pins a big object graph without a heavy attribute: an exception
  handed to a method and kept on `self` (`def set_exception(self, exc): self._exception =
  exc`, in the class or a project base class in any file; a parameter annotated as an
  exception, or named `exc`, `exception`, `exc_val` or `exc_value` without an annotation)
  that a release path letting go of other objects (it drops or releases at least one
  attribute; flipping a flag such as `self._closed = True` is not enough) does not drop.
  Not a class of exception (`type[Exception]`), and not a slot some method other than
  `__init__` empties (`self.output = None`: a reader taking the exception out hands it
  off).
- **a part its owner cannot free**: a class that holds a model (a module with weights)
  it builds and has no release method at all (nor inherits one), reported at its name
  when a project class holds an instance (`self.drafter = DraftProposer(...)`) and its
  release method releases its other parts in place (`self.profiler.shutdown()`) but
  neither releases nor drops this one (the owner's release method is reported as well,
  for the attribute it keeps).
- **a part another method frees** (any object, torch or not): `__del__` frees an
  attribute in place (`native.adapter_free(self._adapter)`, `self.index.release()`), or
  a method that is not itself a release closes it as a whole (`render(close=True)`:
  `self.viewer.close()`, also `.shutdown()`, `.unload()`, `.destroy()`, ... without
  arguments), and the release path, which lets go of other parts, neither frees nor
  drops it. Not evidence: a method handed on as a callback (the release path may run
  it: `self._stack.callback(self._free_adapter)`; what it frees counts as freed), a
  method named as a release of its own (`release_host_resources()`, which its owner
  calls), a per-item `free(request)`, a lock's or semaphore's `release()`, and freeing
  a file on disk (`os.remove(self.path)`). `__del__` runs only when the last reference
  goes; after `close()` the part stays allocated while anything holds the object.
- **cleanup registered on an `ExitStack` nothing closes**: `self._exit_stack =
  ExitStack()` (or `AsyncExitStack()`) with `.callback(...)`, `.push(...)` or
  `.enter_context(...)` registered on it, reported at the first registration when no
  method of the class uses the stack otherwise (closes it, enters it with `with`, hands
  it on), nothing in the file closes an attribute of that name (`handler._exit_stack.close()`,
  `weakref.finalize(self, self._stack.close)`), and no project subclass in another file
  does: the callbacks never run while the instance lives.
- **a resource acquired in place and never given back**: a part the class builds
  (`self.model = Model.from_config(config)`) that a method makes acquire a resource of
  its own - `self.model.load()`, `.open()`, `.connect()`, `.acquire()`, `.allocate()` as
  a statement, with no positional argument - when nothing gives it back: no method of
  the class, nothing in the file (`wrapper.model.unload()`, also through a name bound to
  the attribute) and no project subclass in another file calls the inverse (`unload()`;
  `close()`; `disconnect()`/`close()`; `release()`; `free()`/`deallocate()`/`release()`)
  on an attribute of that name, nor drops the part (`self.model = None`, `del
  self.model`). Reported at the class. Not an item handed in (`allocate(seq)`,
  `connect(address)`, `load(weights)`: per-call work, not the part's own resource), a
  part handed in by the caller (`self.model = model`), nor a project class that defines
  no inverse. `start()` (threads) and `init()`/`setup()` (configuration) are not counted
  as acquiring.
- **a release inherited that only marks the object closed**: a class with no release
  method of its own inherits one from a project base (any file) whose release path lets
  go of nothing and only flips flags (`def close(self): self._closed = True`, also
  through methods it calls on `self`, overrides included), while the class keeps a store
  of its own: an instance of a project class, built directly or by a method returning
  one (`self.root = self._make_entry(...)`), with a method other than `__init__` that
  puts what it is handed into a container of its own (`self._dir[name] = entry`,
  `self._items.append(item)`). Reported at the class. Not a no-op hook (`def
  teardown(self): pass`), nor a base release that lets go of parts (judged as above).

## Why it leaks
A release method is where an owner gives back what it holds. What it leaves on `self`
stays allocated as long as the owner object is reachable - and after a "shutdown" in
the same process, an engine, its executor and its workers usually still are. A worker
that keeps its model runner keeps the weights and the KV cache: tens of GiB of GPU
memory.

## Incident
A GPU worker's `shutdown()` stopped the profiler and the weight-transfer engine but left
`self.model_runner` alive, and with it the model weights and KV caches. The fix gave the
runner a `shutdown()` that frees them and called it from the worker's `shutdown()`.

## Example
```python
class Worker:
    def init_device(self):
        self.model_runner = GPUModelRunner(self.config)  # holds the model

    def shutdown(self):  # RL602: `self.model_runner` is never dropped
        if self.profiler is not None:
            self.profiler.shutdown()
```

A stored exception's traceback references every frame it went through and their locals:
the request, the connection, often the holder itself. A part with no release method gives
its owner nothing to call: what it holds (a model's weights registered in a forward
context, its KV caches) is freed only when every reference to it goes. A native handle
freed only in `__del__` (a LoRA adapter's weights, a multimodal projector context), a
window only `render(close=True)` closes, or a callback on an `ExitStack` nobody unwinds
stays allocated after the object is closed, for as long as a server, a UI, an
evaluation loop or a cache still holds it. A library that loaded a model's weights onto
the GPU (and keeps them registered) or opened a connection gives them back when asked
(`unload()`, `close()`); a wrapper that never asks, and whose owner has no method to
call, keeps them after "unload model" has dropped everything else. A store behind a
`close()` inherited from a base that only marks the object closed (an in-memory
filesystem's tree of file buffers) stays filled after `close()`.

```python
class Llama:
    def __init__(self, path, lora_path):
        self._stack = contextlib.ExitStack()
        self._model = self._stack.enter_context(closing(NativeModel(path)))
        self._lora = native.lora_adapter_init(self._model.handle, lora_path)

    def close(self):  # RL602: `self._lora` is freed only by __del__
        self._stack.close()

    def __del__(self):
        native.lora_adapter_free(self._lora)
        self.close()


class ChatHandler:
    def __init__(self, clip_path):
        self._exit_stack = ExitStack()

    def load(self, model):
        self.ctx = native.clip_init(self.clip_path, model)
        self._exit_stack.callback(native.clip_free, self.ctx)  # RL602: never closed


class Wrapper:  # RL602: `self.model.unload()` is never called
    def __init__(self, model_dir):
        self.model = Model.from_config(Config.from_directory(model_dir))
        self.model.load(progressbar=True)


class MemoryStore(Store):  # RL602: `Store.close()` only sets `self._closed = True`
    def __init__(self):
        super().__init__()
        self.root = _Node()  # `_Node.set_child(name, node)` fills `self._children`
```

## Fix (safe for private names nothing else reads)
At the end of the first release method the class defines (before a final `return`, and
before a final run of `gc.collect()` / `empty_cache()` calls, so that they see the memory
freed), for each attribute: a call of its own release method when its class (found through the
project index) defines one taking no arguments - guarded by
`if getattr(self, "x", None) is not None:` unless `__init__` always sets it - else
`self.x = None`. Only where the method's normal path reaches its end (not after a `try`
whose body returns, nor an `if` whose every branch returns or raises). No fix when
something may read `self.x` after the release: another method of the class, its bases or
subclasses (properties, and re-entry such as `alloc()` after `free()`) that reads it without
assigning it first, a `hasattr`/`getattr` guard, a class attribute of that name; nor when
another attribute still holds the object or its parts (`self.optimizer` built from
`self.model.parameters()`, a scheduler built from that optimizer: the message names it),
nor for an attribute that is also a property or a `__slots__` name. The fix is unsafe, its
help line saying what changes, for a public name (code outside the project may read it),
when another module reads `.x`, when the release method reads `self.x` (a second call sees
`None`), and whenever it calls the part's own release method. For a stored exception,
`self._exception = None` at the same place, always unsafe (code that looks at the
exception after the release sees `None`), and not offered when a method reads it. No fix for a part with no
release method (give it one that frees what it holds, and call it from the owner's), for
a part another method frees (free it on the release path too, e.g. on the
`ExitStack` `close()` unwinds, and let `__del__` call `close()`), nor for an `ExitStack`
nothing closes (close it from a release method, or register the cleanup on the stack of
the object whose release it belongs to), nor for a resource never given back (add a
release method that calls the inverse, and call it from the owner's release path), nor
for a store behind an inherited release (override it to drop the store and call
`super()`'s).
"""

    valid = [
        # a semaphore taken as a gate holds no memory and nothing to give back
        """
import threading

class Pairing:
    def __init__(self):
        self.pairs = {}

    def pair_of(self, rank, world):
        if not self.pairs:
            self.pairs = {r: world - 1 - r for r in range(world)}
            self.turn = threading.Semaphore(1)
            self.turn.acquire()
        return self.pairs[rank]
""",
        # the storage is shrunk to nothing in place (alloc() grows it again)
        """
import torch

class Arena:
    def __init__(self, n):
        self.slab = torch.empty(n)
        self.index = torch.zeros(n)

    def alloc(self):
        for t in (self.slab, self.index):
            t.untyped_storage().resize_(t.numel() * t.element_size())

    def release(self):
        self.slab.untyped_storage().resize_(0)
        for t in [self.index]:
            t.storage().resize_(0)
""",
        # the class drops its store, then closes as its base does
        """
class Store:
    def close(self):
        self._closed = True

class _Node:
    def __init__(self):
        self._children = {}

    def set_child(self, name, node):
        self._children[name] = node

class MemoryStore(Store):
    def __init__(self):
        self.root = _Node()

    def close(self):
        self.root = None
        super().close()
""",
        # the wrapper unloads the model it loaded
        """
from exlib import Model

class Wrapper:
    def __init__(self, model_dir):
        self.model = Model.from_directory(model_dir)
        self.model.load(progressbar=True)

    def unload(self):
        self.model.unload()
        self.model = None
""",
        # the adapter's free is registered on the stack close() unwinds
        """
import contextlib
import native

class Llama:
    def __init__(self, path, lora_path):
        self._stack = contextlib.ExitStack()
        self._model = self._stack.enter_context(native.open_model(path))
        self._lora = native.lora_adapter_init(self._model, lora_path)
        self._stack.callback(self._free_lora)

    def _free_lora(self):
        native.lora_adapter_free(self._lora)
        self._lora = None

    def close(self):
        self._stack.close()

    def __del__(self):
        self.close()
""",
        # the handler's stack is unwound by its release method
        """
from contextlib import ExitStack
import native

class ChatHandler:
    def __init__(self, clip_path):
        self.clip_path = clip_path
        self._exit_stack = ExitStack()

    def load(self, model):
        self.ctx = native.clip_init(self.clip_path, model)
        self._exit_stack.callback(native.clip_free, self.ctx)

    def close(self):
        self._exit_stack.close()
""",
        # the stored exception is dropped with the rest
        """
class Manager:
    def __init__(self):
        self.socket = None

    def fail(self, exc: Exception):
        self.error = exc

    def cleanup(self):
        self.socket = None
        self.error = None
""",
        # dropped in a helper the release method calls
        """
import torch.nn as nn

class Runner:
    def __init__(self):
        self.model = nn.Linear(4, 4)

    def shutdown(self):
        self._free()

    def _free(self):
        del self.model
""",
        # the model belongs to the caller
        """
import torch.nn as nn

class Trainer:
    def __init__(self, model: nn.Module):
        self.model = model

    def close(self):
        pass
""",
        # process-exit cleanup: close() runs only from __del__; and a weightless layer
        """
import torch
import torch.nn as nn

class Communicator:
    def __init__(self, size):
        self.buffer = torch.empty(size, dtype=torch.uint8, device="cuda")
        self.act = nn.ReLU()

    def close(self):
        self._handle = None

    def __del__(self):
        self.close()
""",
        # the attribute's own release method, through a walrus
        """
import torch

class Worker:
    def load(self):
        self.cache = torch.empty(1 << 20)

    def shutdown(self):
        if cache := getattr(self, "cache", None):
            cache.release()
""",
    ]
    invalid = [
        # a store kept by a close() inherited from a base that only marks it closed
        Example(
            """
class Store:
    def close(self):
        self._closed = True

class _Node:
    def __init__(self):
        self._children = {}

    def set_child(self, name, node):
        self._children[name] = node

class MemoryStore(Store):
    def __init__(self):
        self.root = _Node()

    def write(self, name, node):
        self.root.set_child(name, node)
""",
            lines=[13],
        ),
        # a model loaded in place that nothing unloads
        Example(
            """
from exlib import Model

class Wrapper:
    def __init__(self, model_dir):
        self.model = Model.from_directory(model_dir)
        self.model.load(progressbar=True)

    def __call__(self, ids):
        return self.model.forward(ids)
""",
            lines=[4],
        ),
        # a viewer only render() closes, kept by close()
        Example(
            """
import native

class Env:
    def __init__(self, rom):
        self.viewer = None
        self.emulator = native.Emulator(rom)

    def render(self, close=False):
        if close and self.viewer is not None:
            self.viewer.close()
        elif self.viewer is None:
            self.viewer = native.Window()

    def close(self):
        del self.emulator
""",
            lines=[15],
        ),
        # a part only __del__ frees, kept by close()
        Example(
            """
import contextlib
import native

class Llama:
    def __init__(self, path, lora_path):
        self._stack = contextlib.ExitStack()
        self._model = self._stack.enter_context(native.open_model(path))
        self._lora = native.lora_adapter_init(self._model, lora_path)

    def close(self):
        self._stack.close()

    def __del__(self):
        native.lora_adapter_free(self._lora)
        self.close()
""",
            lines=[11],
        ),
        # cleanup registered on an ExitStack nothing closes
        Example(
            """
from contextlib import ExitStack
import native

class ChatHandler:
    def __init__(self, clip_path):
        self.clip_path = clip_path
        self._exit_stack = ExitStack()

    def load(self, model):
        self.ctx = native.clip_init(self.clip_path, model)
        self._exit_stack.callback(native.clip_free, self.ctx)
""",
            lines=[12],
        ),
        # an exception handed in and kept after close()
        Example(
            """
class Protocol:
    def __init__(self):
        self.transport = None

    def set_exception(self, exc):
        self._exception = exc

    def close(self):
        self.transport = None
""",
            lines=[9],
            fixed="""
class Protocol:
    def __init__(self):
        self.transport = None

    def set_exception(self, exc):
        self._exception = exc

    def close(self):
        self.transport = None
        self._exception = None
""",
        ),
        # a part with no release method, whose owner releases its other parts
        Example(
            """
import torch

class Drafter:
    def __init__(self):
        self.model = torch.nn.Linear(4096, 4096)
        self.kv_caches = torch.empty(64, 4096, 4096)

class Runner:
    def __init__(self):
        self.drafter = Drafter()
        self.graphs = GraphPool()

    def shutdown(self):
        self.graphs.release()
""",
            lines=[4, 14],
            fixed="""
import torch

class Drafter:
    def __init__(self):
        self.model = torch.nn.Linear(4096, 4096)
        self.kv_caches = torch.empty(64, 4096, 4096)

class Runner:
    def __init__(self):
        self.drafter = Drafter()
        self.graphs = GraphPool()

    def shutdown(self):
        self.graphs.release()
        self.drafter = None
""",
        ),
        Example(
            """
import torch
import torch.nn as nn

class Engine:
    def __init__(self):
        self.model = nn.Linear(8, 8)
        self.kv_cache = torch.empty(4096, 4096)

    def close(self):
        self.closed = True
""",
            lines=[10],
            fixed="""
import torch
import torch.nn as nn

class Engine:
    def __init__(self):
        self.model = nn.Linear(8, 8)
        self.kv_cache = torch.empty(4096, 4096)

    def close(self):
        self.closed = True
        self.model = None
        self.kv_cache = None
""",
        ),
        # the attribute's class has a release method of its own: call it
        Example(
            """
import torch.nn as nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def shutdown(self):
        pass

class Worker:
    def init_device(self):
        self.model_runner = Runner()

    def shutdown(self):
        return
""",
            lines=[16],
            fixed="""
import torch.nn as nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def shutdown(self):
        pass

class Worker:
    def init_device(self):
        self.model_runner = Runner()

    def shutdown(self):
        if getattr(self, "model_runner", None) is not None:
            self.model_runner.shutdown()
        return
""",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._class: Optional[cst.ClassDef] = None
        self._actor_names: Optional[set[str]] = None

    def _is_actor(self, cls: cst.ClassDef) -> bool:
        """A Ray actor (`@ray.remote`, `ray.remote(Cls)` in this file) runs in a process
        of its own, which goes away with it."""
        if self._actor_names is None:
            names: set[str] = set()
            ctx = self.ctx

            class _Actors(cst.CSTVisitor):
                def visit_ClassDef(self, node: cst.ClassDef) -> None:
                    for d in node.decorators:
                        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
                        if ctx.qualname(target) == "ray.remote":
                            names.add(node.name.value)

                def visit_Call(self, node: cst.Call) -> None:
                    func = node.func.func if isinstance(node.func, cst.Call) else node.func
                    if ctx.qualname(func) == "ray.remote" and node.args and isinstance(
                            node.args[0].value, cst.Name):
                        names.add(node.args[0].value.value)

            if "ray" in ctx.imports.names.values() or any(
                    v.startswith("ray.") for v in ctx.imports.names.values()):
                visit(ctx.module, _Actors())
            self._actor_names = names
        return cls.name.value in self._actor_names

    # -- detection -----------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        methods = self.ctx.methods(node)
        self._check_unclosed_stacks(node)
        self._check_never_given_back(node)
        releases = release_methods(self.ctx, node)
        if not releases:
            self._check_unreleasable(node, methods)
            self._check_inherited_flag_only(node, methods)
            return
        self._check_freed_elsewhere(node, releases, methods)
        heavy = self._heavy_attributes(node, methods)
        if heavy and self._is_module_class(node):
            heavy = {}
        exceptions = self._exception_slots(node)
        if not heavy and not exceptions:
            return
        drops = self.ctx.release.drops(node, releases)
        if drops is None:
            return
        dropped = drops.all
        self._class = node
        kept = [h for a, h in heavy.items() if a not in dropped and self._substantial(h)]
        # an exception kept by a release path that lets go of other objects, unless the
        # class raises it once released (`if self.closed: raise self._failure`): kept on
        # purpose, for callers still in flight to see the cause
        after = _release_flags(drops) if exceptions else {}
        kept_exceptions = [e for e in exceptions if e[0] not in dropped
                           and not _raised_once_released(node, e[0], after)] if drops.objects else []
        if not (kept or kept_exceptions) or self._is_actor(node):
            return
        live = [r for r in releases if not self._only_at_exit(node, r)]
        if live and kept:
            self._report(node, live[0], kept, methods, drops.unbound)
        if live and kept_exceptions:
            self._report_exceptions(node, live[0], kept_exceptions, methods)

    def _exception_slots(self, cls: cst.ClassDef) -> list[tuple]:
        """Attributes the class or a project base assigns an exception handed to a method
        (`project/release_shape.py` `exception_slots`), one entry per attribute."""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return []
        qualified = f"{self.ctx.module_name}.{cls.name.value}"
        index = self.ctx.index
        summary = index.files.get(os.path.abspath(self.ctx.path))
        scanned = summary.scans.get(self.code) if summary is not None else None
        if scanned is not None and not may_store_exception(qualified, summary, scanned, index):
            return []  # what the scans tell, without reading the files again
        slots: dict[str, tuple] = {}
        for slot in self.ctx.index.ask(exception_slots, qualified):
            slots.setdefault(slot[0], slot)
        return [s for a, s in slots.items() if a not in self.ctx.methods(cls)]

    def _report_exceptions(self, cls: cst.ClassDef, release: cst.FunctionDef, kept: list[tuple],
                           methods) -> None:
        where = f"{cls.name.value}.{release.name.value}()"
        names = " nor ".join(
            f"`self.{attr}` (an exception `{owner.rsplit('.', 1)[1]}.{method}()` stores)"
            for attr, _, _, owner, method in kept[:3])
        message = (
            f"`{where}` never drops {names}: its traceback keeps every frame it went through "
            f"and their locals (often this `{cls.name.value}` itself, and what it served) alive "
            f"as long as the `{cls.name.value}` lives on after release"
        )
        related = []
        for attr, path, line, owner, method in kept:
            position = Position(line, 1)
            related.append(Related(f"`self.{attr}` is assigned an exception here",
                                   display_path(path, os.getcwd()), position, position))
        fix = None
        verdicts = [nulling(self.ctx, cls, attr, release) for attr, *_ in kept]
        if not self._has_slots(cls) and not any(attr in methods for attr, *_ in kept) \
                and not any(v.blockers for v in verdicts):
            statements = [cst.parse_statement(f"self.{attr} = None\n") for attr, *_ in kept]
            new = _append(release, statements)
            if new is not None:
                spelled = ", ".join(f"`self.{attr} = None`" for attr, *_ in kept)
                # unsafe: code outside the class that looks at the exception now sees `None`
                changes = [c for v in verdicts for c in v.changes] or [
                    f"`{cls.name.value}.{attr}` is `None` after `{release.name.value}()`" for attr, *_ in kept]
                fix = self.fix(f"Add {spelled} at the end of `{release.name.value}()`: {'; '.join(changes)}",
                               {release: new}, applicability=Applicability.UNSAFE)
        self.report(release.name, message, fix=fix, related=related, statement=release)

    # -- a part another method frees ----------------------------------------------
    def _check_freed_elsewhere(self, cls: cst.ClassDef, releases: list, methods) -> None:
        """Another method frees a part in place (`__del__`: `free_adapter(self.x)`;
        `render(close=True)`: `self.viewer.close()`) that the release path, which lets go
        of other parts, neither frees nor drops: after `close()` the part stays allocated
        as long as the instance is referenced. The author's own code says the part needs
        freeing, whatever it is."""
        path = self.ctx.release.drops(cls, releases)
        if path is None or not path.objects:
            return
        on_path = {id(fn) for _, fn in path.methods}
        handed = _handed_methods(cls)
        evidence: dict[str, cst.FunctionDef] = {}
        maybe_on_path: set[str] = set()
        for fn in body_functions(cls):
            name = fn.name.value
            if id(fn) in on_path or name == "__init__":
                continue
            if name in handed:
                # a callback the release path may run unseen (`self._stack.callback(self.m)`)
                maybe_on_path |= _freed_in_place(fn)
                continue
            if name != FINALIZER and releases_word(name):
                continue  # another release path (`release_host_resources()`) the owner calls
            for attr in _freed_in_place(fn) if name == FINALIZER else _closed_whole(fn):
                if name != FINALIZER and caller_supplied(self.ctx, cls, attr):
                    # the caller's object (`self.conn = conn`): a method closing it (a reset,
                    # the end of a run) is no sign the release path owns it; a finalizer
                    # freeing it is
                    continue
                evidence.setdefault(attr, fn)
        kept = sorted(a for a in evidence if a not in path.all and a not in maybe_on_path and a not in methods)
        if not kept or self._is_actor(cls):
            return
        release = releases[0]
        where = f"{cls.name.value}.{release.name.value}()"
        names = " nor ".join(f"`self.{a}` (which `{evidence[a].name.value}()` frees)" for a in kept[:3])
        message = (
            f"`{where}` lets go of other parts but never frees {names}: after "
            f"`{release.name.value}()` {'it stays' if len(kept) == 1 else 'they stay'} allocated as long "
            f"as the `{cls.name.value}` is referenced; free {'it' if len(kept) == 1 else 'them'} on the "
            f"release path and drop the reference"
        )
        related = [RelatedNode(f"`{evidence[a].name.value}()` frees `self.{a}` here", evidence[a].name)
                   for a in kept]
        self.report(release.name, message, related=related, statement=release)

    # -- an ExitStack nothing closes -------------------------------------------------
    def _check_unclosed_stacks(self, cls: cst.ClassDef) -> None:
        """Cleanup registered on an `ExitStack` the instance holds (`self._stack.callback(
        free)`, `.enter_context(...)`) that no method of the class closes, hands on or
        enters, and nothing in the file closes (`x._stack.close()`): the callbacks run
        only if someone unwinds the stack, so what they would free stays allocated as long
        as the instance lives."""
        stacks = _exit_stacks(self.ctx, cls)
        if not stacks:
            return
        uses = _StackUses(set(stacks))
        visit(cls, uses)
        closers = _StackClosers(set(stacks))
        visit(self.ctx.module, closers)  # the class, its subclasses here, its owners here
        closed = closers.closed | self._closed_by_subclasses_elsewhere(cls, set(stacks))
        for attr in stacks:
            registrations = uses.registrations.get(attr)
            if not registrations or attr in uses.other or attr in closed:
                continue
            first, statement = registrations[0]
            assert isinstance(first.func, cst.Attribute)
            message = (
                f"`self.{attr}.{first.func.attr.value}(...)` registers cleanup on an `ExitStack` "
                f"nothing closes: no method of `{cls.name.value}` unwinds `self.{attr}`, so what "
                f"its callbacks free stays allocated as long as the `{cls.name.value}` lives; "
                f"close it from a release method, or register the cleanup on the stack of the "
                f"object whose release it belongs to"
            )
            self.report(first, message, statement=statement)

    def _closed_by_subclasses_elsewhere(self, cls: cst.ClassDef, attrs: set[str],
                                        closers: Optional[frozenset] = None) -> set[str]:
        """Attributes closed (`.s.close`, ...; `closers`) in a file of another module
        that holds a project subclass of `cls`."""
        closers = closers or _STACK_CLOSERS
        qualified = f"{self.ctx.module_name}.{cls.name.value}"
        index = self.ctx.index
        here = os.path.abspath(self.ctx.path)
        closed: set[str] = set()
        # looked up one by one, so that a cached result depends on those files' contents
        found = (index.classes.get(name) for name in index.ask(subclasses_elsewhere, (qualified, here)))
        for path in sorted({c.path for c in found if c is not None}):
            parsed = sources(index).tree(path)
            if parsed is None:
                closed |= attrs  # unreadable: it may close them
                continue
            for node in ast.walk(parsed[0]):
                if isinstance(node, ast.Attribute) and node.attr in closers \
                        and isinstance(node.value, ast.Attribute) and node.value.attr in attrs:
                    closed.add(node.value.attr)
        return closed

    # -- a resource acquired in place and never given back ---------------------------
    def _check_never_given_back(self, cls: cst.ClassDef) -> None:
        """A part the class builds (`self.m = Model.from_config(c)`) and then makes
        acquire a resource of its own (`self.m.load()`: no item handed in) whose inverse
        (`unload()`) nothing calls on it - no method of the class, nothing in the file,
        no project subclass elsewhere - and that nothing drops (`self.m = None`): what it
        acquired (weights a library loaded, a connection) is given back only if and when
        the part is collected, and a library that registers it keeps it for good."""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return  # a nested class: its subclasses and holders are not known
        acquired = _acquired_in_place(cls)
        if not acquired:
            return
        built = self._built_parts(cls)
        given = _given_back(self.ctx.module, {a: ACQUIRES[v] for a, (v, _) in acquired.items()})
        kept = [a for a in acquired if a in built and a not in given
                and self.ctx.qualname(built[a].func) not in _SYNC_PRIMITIVES
                and self._has_inverse(built[a], acquired[a][0])]
        if not kept:
            return
        elsewhere = self._closed_by_subclasses_elsewhere(
            cls, set(kept), frozenset().union(*(ACQUIRES[acquired[a][0]] for a in kept)))
        kept = [a for a in kept if a not in elsewhere]
        if not kept or self._is_actor(cls):
            return
        def inverse(attr: str) -> str:
            first, *others = sorted(ACQUIRES[acquired[attr][0]])
            return f"`self.{attr}.{first}()`" + "".join(f" (or `.{o}()`)" for o in others)

        names = " nor ".join(f"{inverse(a)} after `self.{a}.{acquired[a][0]}()`" for a in kept[:3])
        message = (
            f"`{cls.name.value}` never calls {names}, nor drops the part: what "
            f"{'it acquired stays' if len(kept) == 1 else 'they acquired stay'} held as long as the "
            f"`{cls.name.value}` lives, and an owner has no method to call to give it back; add "
            f"a release method that does it"
        )
        related = [RelatedNode(f"`self.{a}` acquires it here", acquired[a][1]) for a in kept]
        self.report(cls.name, message, related=related, statement=cls)

    def _built_parts(self, cls: cst.ClassDef) -> dict[str, cst.Call]:
        """Attributes a method of `cls` assigns a call that builds something (not an
        accessor such as `getattr(...)`, `.get(...)`): attribute -> the call."""
        built: dict[str, cst.Call] = {}
        for fn in body_functions(cls):
            for key, entries in self.ctx.heavy.local_assignments(fn).items():
                if not key.startswith("self."):
                    continue
                for value, _ in entries:
                    if isinstance(value, cst.Call) and _callee_word(value) not in ACCESSORS:
                        built.setdefault(key[5:], value)
        return built

    def _has_inverse(self, call: cst.Call, verb: str, depth: int = 0) -> bool:
        """Can the part give the resource back: unless it is a project class (or built
        by one's classmethod) that defines none of the inverse methods, assume it can."""
        index = self.ctx.index
        q = self.ctx.qualname(call.func)
        if q is None:
            return True
        q = index.resolve(self.ctx.absolute(q)) or q
        candidates = [q, q.rsplit(".", 1)[0]]  # the class, or the class of a classmethod
        for c in candidates:
            c = _project_class(index, index.resolve(c) or c)
            if c is not None:
                return _defines_any(index, c, ACQUIRES[verb])
        return True

    # -- an inherited release that only marks the object closed -----------------------
    def _check_inherited_flag_only(self, cls: cst.ClassDef, methods) -> None:
        """A class with no release method of its own inherits one from a project base
        that only flips flags (`FS.close()`: `self._closed = True`), while the class
        keeps a store of its own - an instance of a project class whose methods fill a
        container of theirs with what they are handed (`self._dir[name] = entry`): after
        `close()` every entry stays as long as the object is referenced."""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return
        inherited = None
        for name in release_names(self.ctx):
            found = self.ctx.release.lookup(cls, name)
            if found is not None and found[0] is not cls and found[1] is not None \
                    and is_release_method(self.ctx, found[1]):
                inherited = found
                break
        if inherited is None:
            return
        path = self.ctx.release.drops(cls, [inherited[1]])
        if path is None or path.objects or not path.flags:
            return  # it lets go of something (judged as the class's own), or does nothing
        stores = {a: kind for a, kind in self._stores(cls, methods).items() if a not in path.all}
        if stores:
            # Callbacks the object hands on for itself (`self.add_trigger("shutdown",
            # self.drop_all)`): an event system may run them on release; a store they
            # reach is not known to stay.
            reached = self._reached_by_callbacks(cls)
            stores = {} if reached is None else {a: k for a, k in stores.items() if a not in reached}
        if not stores or self._is_actor(cls):
            return
        base = inherited[0].name.value if isinstance(inherited[0], cst.ClassDef) \
            else inherited[0].qualname.rsplit(".", 1)[1]
        release = inherited[1].name.value
        names = ", ".join(f"`self.{a}` (a `{kind}` its methods fill)" for a, kind in sorted(stores.items())[:3])
        message = (
            f"`{cls.name.value}` inherits `{release}()` from `{base}`, which only marks the object "
            f"closed: {names} stays, with everything stored in it, as long as the "
            f"`{cls.name.value}` is referenced after `{release}()`; override `{release}()` to drop it "
            f"and call `super().{release}()`"
        )
        self.report(cls.name, message, statement=cls)

    def _reached_by_callbacks(self, cls: cst.ClassDef) -> Optional[set[str]]:
        """Attributes that the methods `cls` or a project base hands on as callbacks
        (`self.m` passed, not called) drop, release or call a method of, following the
        methods they call on `self` (overrides included); None when one cannot be read
        or drops what cannot be named."""
        release = self.ctx.release
        owners, pending, seen = [], [cls], 0
        while pending and seen < _MAX_DEPTH:
            owner = pending.pop()
            seen += 1
            owners.append(owner)
            pending.extend(release.bases(owner))
        handed: set[str] = set()
        for owner in owners:
            if isinstance(owner, cst.ClassDef):
                handed |= _handed_methods(owner)
            else:
                for name in owner.methods:
                    fn = release.method(owner, name)
                    if fn is not None:
                        handed |= _handed_methods(fn)
        reached: set[str] = set()
        for name in sorted(handed):
            found = release.lookup(cls, name)
            if found is None:
                continue  # not a method: an attribute handed over
            if found[1] is None:
                return None
            path = release.drops(cls, [found[1]])
            if path is None:
                return None
            reached |= path.all
            for _, fn in path.methods:
                reached |= _attributes_called(fn)
        return reached

    def _stores(self, cls: cst.ClassDef, methods) -> dict[str, str]:
        """Attributes `cls` assigns an instance of a project store class, built directly
        or by a method of `cls` that returns one: attribute -> the class's name."""
        found: dict[str, str] = {}
        for attr, call in self._built_parts(cls).items():
            for target in self._built_classes(call, methods):
                if _fills_container(self.ctx.index, target):
                    found[attr] = target.rsplit(".", 1)[1]
                    break
        return found

    def _built_classes(self, call: cst.Call, methods) -> list[str]:
        """Project classes `call` builds: `Store(...)`, or `self.make(...)` whose
        `return` statements build one."""
        calls = [call]
        if isinstance(call.func, cst.Attribute) and is_self(call.func.value) \
                and call.func.attr.value in methods:
            fn = methods[call.func.attr.value]
            calls = [n.value for n in _returns(fn) if isinstance(n.value, cst.Call)]
        index = self.ctx.index
        found = []
        for c in calls:
            q = self.ctx.qualname(c.func)
            resolved = index.resolve(self.ctx.absolute(q)) or q if q else None
            if resolved in index.classes:
                found.append(resolved)
        return found

    # -- a part its owner cannot release ----------------------------------------------
    def _check_unreleasable(self, cls: cst.ClassDef, methods) -> None:
        """A class that holds a model it builds (and maybe more heavy state) and has no
        release method at all (nor inherits one), held by a project class whose release
        method releases its other parts in place (`self.profiler.shutdown()`) and can
        neither release this one nor, as it stands, drops it (`project/release_shape.py`
        `releasing_owners`)."""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return  # a nested class: the index does not know who holds it
        names = tuple(n for n in self.ctx.settings.release_methods if n != FINALIZER)
        qualified = f"{self.ctx.module_name}.{cls.name.value}"
        index = self.ctx.index
        # first what the index tells (as the prefilter does), then the class itself
        if not index.is_heavy_class(qualified) or not index.ask(may_release_parts, (qualified, names)):
            return
        if any(self.ctx.release.lookup(cls, n) is not None for n in names):
            return
        heavy = self._heavy_attributes(cls, methods)
        if not heavy or self._is_module_class(cls):
            return
        self._class = cls
        kept = [h for h in heavy.values() if self._substantial(h)]
        if not any(self._is_model(h) for h in kept) or self._is_actor(cls):
            return
        owners = index.ask(releasing_owners, (qualified, names))
        if not owners:
            return
        owner, path, line, column, attr, method, others = owners[0]
        where = f"{owner.rsplit('.', 1)[1]}.{method}()"
        parts = ", ".join(f"`self.{o}`" for o in others[:3]) + (" ..." if len(others) > 3 else "")
        message = (
            f"`{cls.name.value}` holds {self._listed(kept)} and has no release method: `{where}` "
            f"releases its other parts ({parts}) but cannot release `self.{attr}`, so what "
            f"`{cls.name.value}` holds stays allocated as long as its owner keeps it; give "
            f"`{cls.name.value}` a release method that frees it and call it from `{where}`"
        )
        position = Position(line, column)
        related = [Related(f"`{where}` releases its other parts here", display_path(path, os.getcwd()),
                           position, position)]
        related += [RelatedNode(f"`self.{h.attr}` is assigned a heavy object here", h.value) for h in kept]
        self.report(cls.name, message, related=related, statement=cls)

    def _is_model(self, h: _Heavy) -> bool:
        """Is the attribute a model: a module with weights (`nn.Linear(...)`, a project
        `nn.Module` holding layers, what a function annotated to return a module gives)?"""
        index = self.ctx.index
        exprs = [h.origin.func, *(_annotation_names(h.annotation) if h.annotation is not None else [])]
        for expr in exprs:
            q = self.ctx.qualname(expr)
            resolved = index.resolve(self.ctx.absolute(q)) or q
            function = index.functions.get(resolved or "")
            candidates = [resolved, *(function.returns if function is not None else [])]
            for c in candidates:
                c = index.resolve(c) or c
                if _module_type(c) and not weightless_layer(c):
                    return True
                if c in index.classes and self._derives_module(c) and weigher(self.ctx).class_substantial(c):
                    return True
        return False

    def _derives_module(self, qualified: str, depth: int = 0) -> bool:
        summary = self.ctx.index.classes.get(qualified)
        if summary is None or depth > _MAX_DEPTH:
            return False
        for base in summary.bases:
            resolved = self.ctx.index.resolve(base) or base
            if _module_type(resolved) or self._derives_module(resolved, depth + 1):
                return True
        return False

    def _listed(self, kept: list[_Heavy]) -> str:
        def describe(h: _Heavy) -> str:
            return f"`self.{h.attr}` (`{_short(self.ctx.code(h.origin.func))}(...)` in `{h.fn.name.value}()`)"

        listed = [describe(h) for h in kept[:5]]
        if len(kept) > 5:
            listed.append(f"{len(kept) - 5} more")
        return ", ".join(listed[:-1]) + (" and " if len(listed) > 1 else "") + listed[-1]

    # -- does anything outlive the release? -----------------------------------------
    def _only_at_exit(self, cls: cst.ClassDef, fn: cst.FunctionDef) -> bool:
        """Is the release method process-exit or finalizer cleanup: called from `__del__`,
        or registered with `atexit` / `weakref.finalize`, and never called (nor handed
        on) while an instance lives on - by the class, a subclass of this file, or code
        that can be told holds an instance (`self.comm = Comm(...)` then
        `self.comm.close()`; `store = Store(path)` then `store.close()`)? Then no owner
        keeps the object after its release, and what it leaves on `self` goes with it."""
        name = fn.name.value
        if name in _DUNDER_RELEASE:
            return False
        uses = _ReleaseUses(self.ctx, name)
        for klass in (cls, *self._local_subclasses(cls)):
            uses.scan(klass)
        if uses.live:
            return False
        qualified = f"{self.ctx.module_name}.{cls.name.value}"
        if not (uses.at_exit or self._registered_for_exit(cls, name)):
            # `recipe = Recipe(cfg); recipe.train(); recipe.cleanup()` and the function
            # returns: the instance goes the moment its release does.
            return bool(self.ctx.index.ask(released_last, (qualified, name)))
        return not self.ctx.index.ask(called_on_instance, (qualified, name))

    def _local_subclasses(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        return [c for c in self.ctx.classes.values()
                if c is not cls and any(self.ctx.qualname(b.value) == cls.name.value for b in c.bases)]

    def _registered_for_exit(self, cls: cst.ClassDef, name: str) -> bool:
        """Does a function of this file register `v.<name>` with `atexit` or
        `weakref.finalize` (`atexit.register(store.close)`), `v` a local or parameter that
        may be an instance of `cls` (bound to `cls(...)`, or handed in: not bound to
        another call such as `handler = logging.FileHandler(...)`)?"""
        ctx = self.ctx

        def may_be_instance(variable: str, fn: cst.FunctionDef) -> bool:
            for value, _ in ctx.heavy.local_assignments(fn).get(variable, ()):
                if value is not None and not (
                        isinstance(value, cst.Call) and ctx.qualname(value.func) == cls.name.value):
                    return False
            return True

        class _Registrations(cst.CSTVisitor):
            found = False

            def __init__(self) -> None:
                self.functions: list[cst.FunctionDef] = []

            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                self.functions.append(node)

            def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
                self.functions.pop()

            def visit_Call(self, node: cst.Call) -> None:
                if not self.functions or ctx.qualname(node.func) not in _EXIT_REGISTRIES:
                    return
                for arg in node.args:
                    bound = arg.value
                    if isinstance(bound, cst.Attribute) and bound.attr.value == name \
                            and isinstance(bound.value, cst.Name) and bound.value.value != "self" \
                            and may_be_instance(bound.value.value, self.functions[-1]):
                        self.found = True

        finder = _Registrations()
        visit(ctx.module, finder)
        return finder.found

    # -- what the class owns -------------------------------------------------------
    def _heavy_attributes(self, cls: cst.ClassDef, methods) -> dict[str, _Heavy]:
        found: dict[str, _Heavy] = {}
        oracle = self.ctx.heavy
        for fn in body_functions(cls):
            for key, entries in oracle.local_assignments(fn).items():
                if not key.startswith("self."):
                    continue
                attr = key[5:]
                if attr in found or attr in methods:
                    continue
                for value, ann in entries:
                    origin = self._origin(value, ann, fn, cls)
                    if origin is not None:
                        found[attr] = _Heavy(attr, value, origin, ann.annotation if ann else None, fn)
                        break
        return found

    def _origin(self, value, ann, fn, cls, depth: int = 0) -> Optional[cst.Call]:
        """The call that builds the heavy object `value` evaluates to, when this class
        builds it (not when it was handed in or fetched from elsewhere)."""
        if value is None or depth > _MAX_DEPTH:
            return None
        if isinstance(value, cst.Call):
            if _callee_word(value) in ACCESSORS:
                return None  # `next(c.residency for c in caches)`: an existing object
            if self.ctx.heavy.is_heavy_value(value, fn, cls):
                return value
            if ann is not None and self.ctx.heavy.is_heavy_annotation(ann):
                return value
            return None
        if isinstance(value, cst.IfExp):
            return self._origin(value.body, ann, fn, cls, depth + 1) or \
                self._origin(value.orelse, ann, fn, cls, depth + 1)
        if isinstance(value, cst.BooleanOperation):
            return self._origin(value.right, ann, fn, cls, depth + 1)
        if isinstance(value, cst.Name):
            if value.value in ("self", "None") or find_param(fn, value.value) is not None:
                return None
            for v, a in self.ctx.heavy.local_assignments(fn).get(value.value, ()):
                found = self._origin(v, a, fn, cls, depth + 1)
                if found is not None:
                    return found
        return None

    def _substantial(self, h: "_Heavy") -> bool:
        """Does the attribute pin real memory (not a few literal elements, not a module
        without weights, not a project object holding only such things)?"""
        if not substantial_value(self.ctx, h.origin, h.fn):
            return False
        if h.annotation is not None and not self.ctx.heavy.is_heavy_value(h.origin, h.fn, self._class):
            # heavy only by its annotation: judge the annotated class
            index = self.ctx.index
            for expr in _annotation_names(h.annotation):
                q = index.resolve(self.ctx.absolute(self.ctx.qualname(expr)))
                if q and index.classes.get(q) is not None and index.is_heavy_class(q):
                    return weigher(self.ctx).class_substantial(q)
        return True

    def _is_module_class(self, cls: cst.ClassDef) -> bool:
        """Does `cls` derive from `nn.Module` (or a tensor, a `PreTrainedModel`)?"""
        seen: set[str] = set()

        def heavy_type(q: Optional[str]) -> bool:
            if not q:
                return False
            if q in HEAVY_TYPES:
                return True
            return q.startswith("torch.nn.") and q.count(".") == 2 and q.rsplit(".", 1)[1][:1].isupper()

        def summary_derives(q: Optional[str], depth: int) -> bool:
            index = self.ctx.index
            resolved = index.resolve(q)
            if heavy_type(q) or heavy_type(resolved):
                return True
            if depth > _MAX_DEPTH or not resolved or resolved in seen:
                return False
            seen.add(resolved)
            summary = index.classes.get(resolved)
            return summary is not None and any(summary_derives(b, depth + 1) for b in summary.bases)

        def cst_derives(c: cst.ClassDef, depth: int) -> bool:
            if depth > _MAX_DEPTH:
                return False
            for base in c.bases:
                q = self.ctx.qualname(base.value)
                if heavy_type(q):
                    return True
                local = self.ctx.classes.get(q) if q else None
                if local is not None and local is not c:
                    if cst_derives(local, depth + 1):
                        return True
                elif summary_derives(self.ctx.absolute(q), depth + 1):
                    return True
            return False

        return cst_derives(cls, 0)

    # -- reporting -----------------------------------------------------------------
    def _report(self, cls: cst.ClassDef, release: cst.FunctionDef, kept: list[_Heavy], methods,
                dropped: set[str]) -> None:
        def describe(h: _Heavy) -> str:
            what = f"`{_short(self.ctx.code(h.origin.func))}(...)`"
            return f"`self.{h.attr}` ({what} in `{h.fn.name.value}()`)"

        listed = [describe(h) for h in kept[:5]]
        if len(kept) > 5:
            listed.append(f"{len(kept) - 5} more")
        names = ", ".join(listed[:-1]) + (" nor " if len(listed) > 1 else "") + listed[-1]
        where = f"{cls.name.value}.{release.name.value}()"
        message = (
            f"`{where}` never drops {names}: no release method deletes "
            f"{'it' if len(kept) == 1 else 'them'}, sets {'it' if len(kept) == 1 else 'them'} "
            f"to `None`, clears or releases {'it' if len(kept) == 1 else 'them'}, so the memory "
            f"held stays allocated as long as the `{cls.name.value}` lives on after release"
        )
        # dropping the attribute frees nothing while another one keeps the object or its parts
        others = {h.attr for h in kept}
        held = [(h.attr, holder, built) for h in kept
                for holder, built in still_held(self.ctx, cls, h.attr, dropped | others)]
        if held:
            message += "; " + "; ".join(
                f"`self.{holder}` (built from it in `{built}()`) would still hold `self.{attr}`'s object or its parts"
                for attr, holder, built in held[:3])
        related = [RelatedNode(f"`self.{h.attr}` is assigned a heavy object here", h.value) for h in kept]
        fix = None if held else self._fix(cls, release, kept, methods)
        self.report(release.name, message, fix=fix, related=related, statement=release)

    # -- fix -----------------------------------------------------------------------
    def _fix(self, cls, release: cst.FunctionDef, kept: list[_Heavy], methods):
        if self._has_slots(cls):
            return None
        statements, spelled, changes = [], [], []
        for h in kept:
            if h.attr in methods:
                return None  # a part the fix cannot drop: it would not leave nothing to report
            method = self._release_method_of(h)
            verdict = nulling(self.ctx, cls, h.attr, release,
                              "`None`" if method is None else f"released by its own `{method}()`")
            if verdict.blockers:
                return None
            changes.extend(verdict.changes)
            if method is None:
                statements.append(cst.parse_statement(f"self.{h.attr} = None\n"))
                spelled.append(f"`self.{h.attr} = None`")
                continue
            # the part's own release runs now: whatever else it does (flush, close a file) happens
            if not verdict.changes:
                changes.append(f"`self.{h.attr}.{method}()` now runs in `{release.name.value}()`")
            call = f"self.{h.attr}.{method}()"
            always, maybe_none = self._set_in_init(cls, h.attr)
            if always and not maybe_none:
                code = f"{call}\n"
            elif always:
                code = f"if self.{h.attr} is not None:\n    {call}\n"
            else:
                code = f'if getattr(self, "{h.attr}", None) is not None:\n    {call}\n'
            statements.append(cst.parse_statement(code))
            spelled.append(f"`{call}`")
        if not statements:
            return None
        new = _append(release, statements)
        if new is None:
            return None
        message = f"Add {', '.join(spelled)} at the end of `{release.name.value}()`"
        if changes:
            return self.fix(f"{message}: {'; '.join(changes)}", {release: new},
                            applicability=Applicability.UNSAFE)
        return self.fix(message, {release: new})

    def _has_slots(self, cls: cst.ClassDef) -> bool:
        for stmt in body_statements(cls):
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    targets = []
                    if isinstance(small, cst.Assign):
                        targets = [t.target for t in small.targets]
                    elif isinstance(small, cst.AnnAssign):
                        targets = [small.target]
                    if any(isinstance(t, cst.Name) and t.value == "__slots__" for t in targets):
                        return True
        return False

    def _release_method_of(self, h: _Heavy) -> Optional[str]:
        """A release method of the attribute's class callable without arguments."""
        qualified = self._constructor_of(h)
        if qualified is None:
            return None
        index = self.ctx.index
        summary = index.classes.get(qualified)
        if summary is None:
            return None
        local = self.ctx.classes.get(summary.qualname.rsplit(".", 1)[1]) \
            if summary.qualname == f"{self.ctx.module_name}.{summary.qualname.rsplit('.', 1)[1]}" else None
        owner = local if local is not None else summary
        for name in self.ctx.settings.release_methods:
            if name in _DUNDER_RELEASE:
                continue
            found = self.ctx.release.lookup(owner, name)
            if found is None:
                continue
            fn = found[1]
            if fn is None or fn.asynchronous is not None:
                return None
            if _decorator_words(fn) & {"staticmethod", "classmethod", "property", "abstractmethod"}:
                return None
            params = fn.params
            positional = [*params.posonly_params, *params.params][1:]
            if any(p.default is None for p in (*positional, *params.kwonly_params)):
                return None
            return name
        return None

    def _constructor_of(self, h: _Heavy) -> Optional[str]:
        """The project class the attribute's value is built from (qualified)."""
        candidates = [h.origin.func]
        if h.annotation is not None:
            candidates += _annotation_names(h.annotation)
        index = self.ctx.index
        for expr in candidates:
            q = index.resolve(self.ctx.absolute(self.ctx.qualname(expr)))
            if q and index.classes.get(q) is not None:
                return q
        return None

    def _set_in_init(self, cls: cst.ClassDef, attr: str) -> tuple[bool, bool]:
        """(always set by `__init__`, may be None)."""
        init = self.ctx.methods(cls).get("__init__")
        always = False
        if init is not None:
            for stmt in body_statements(init):
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        targets = []
                        if isinstance(small, cst.Assign):
                            targets = [t.target for t in small.targets]
                        elif isinstance(small, cst.AnnAssign) and small.value is not None:
                            targets = [small.target]
                        if any(self_attribute(t) == attr for t in targets):
                            always = True
        maybe_none = False
        for fn in body_functions(cls):
            for value, ann in self.ctx.heavy.local_assignments(fn).get(f"self.{attr}", ()):
                if value is None or not isinstance(value, cst.Call):
                    maybe_none = True
        return always, maybe_none


# Registries whose callbacks run when the process exits or the object is collected.
_EXIT_REGISTRIES = frozenset({"atexit.register", "weakref.finalize"})


class _ReleaseUses(cst.CSTVisitor):
    """How a class's methods use its release method `name` through `self` (or
    `super()`): called from `__del__` or registered for exit (`at_exit`), or called or
    handed on anywhere else (`live`: it may run while the object lives on)."""

    def __init__(self, ctx, name: str) -> None:
        self.ctx = ctx
        self.name = name
        self.at_exit = False
        self.live = False
        self._method = ""
        self._judged: set[int] = set()

    def scan(self, cls: cst.ClassDef) -> None:
        for method in body_functions(cls):
            self._method = method.name.value
            visit(method.body, self)

    def _names_release(self, expr) -> bool:
        return isinstance(expr, cst.Attribute) and expr.attr.value == self.name and (
            is_self(expr.value) or (isinstance(expr.value, cst.Call) and isinstance(expr.value.func, cst.Name)
                                    and expr.value.func.value == "super"))

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) in _EXIT_REGISTRIES:
            for arg in node.args:
                if self._names_release(arg.value):
                    self._judged.add(id(arg.value))
                    self.at_exit = True
        elif self._names_release(node.func):
            self._judged.add(id(node.func))
            if self._method == "__del__":
                self.at_exit = True
            else:
                self.live = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if id(node) not in self._judged and self._names_release(node):
            self.live = True  # handed on (`signal.signal(SIGTERM, self.close)`)


def _instance_calls(index, qualified: str, name: str):
    """(function, receiver) of each call anywhere in the project of method `name` on what can
    be told is an instance of the class `qualified`: `v.name()` where the function binds
    `v = Cls(...)` or annotates `v: Cls` (receiver `v`), or `<...>.x.name()` where a class
    assigns `self.x = Cls(...)` (receiver None: an instance that class keeps). Other
    receivers are unknown and left out; `self.name()` is the class's own business."""
    suffix = "." + name
    holders = {attr for summary in index.classes.values() for attr, makers in summary.attributes.items()
               if any(_builds(index, q, qualified) for q in makers)}
    for function in index.functions.values():
        for call in function.calls:
            if not call.endswith(suffix):
                continue
            receiver = call[:-len(suffix)]
            head, _, last = receiver.rpartition(".")
            if head and last in holders:
                yield function, None
            elif not head and receiver not in ("self", "cls") and _binds_instance(index, function, receiver, qualified):
                yield function, receiver


def called_on_instance(index, key: tuple[str, str]) -> bool:
    """Does code anywhere in the project call method `name` of the class `qualified` on
    what it can be told is an instance (see `_instance_calls`)? A question for
    `ProjectIndex.ask`."""
    qualified, name = key
    return next(_instance_calls(index, qualified, name), None) is not None


def released_last(index, key: tuple[str, str]) -> bool:
    """Is method `name` of the class `qualified` called on instances only as the last
    statement of the function that made the instance a local (`v = Cls(...)` ...
    `v.name()`), the local not handed on nor returned? Then nothing keeps the instance
    after its release. False when no such call is seen, or when any call may be on an
    instance that lives on (`self.x.name()` where a class keeps one). For `ProjectIndex.ask`."""
    qualified, name = key
    seen = False
    for function, receiver in _instance_calls(index, qualified, name):
        if receiver is None or not _ends_with_release(index, function, receiver, name):
            return False
        seen = True
    return seen


def _ends_with_release(index, function, variable: str, name: str) -> bool:
    """Is `variable.name()` the last statement of `function`, and is `variable` only ever
    read for its attributes (`v.train()`, `v.model`) - never handed on, stored or returned?"""
    node = _function_node(index, function)
    if node is None or not node.body:
        return False
    arguments = node.args
    if variable in {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}:
        return False  # the caller's instance: it lives on
    last = node.body[-1]
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            and isinstance(last.value.func, ast.Attribute) and last.value.func.attr == name
            and isinstance(last.value.func.value, ast.Name) and last.value.func.value.id == variable):
        return False
    read_for_attributes = {id(n.value) for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    return all(id(n) in read_for_attributes for n in ast.walk(node)
               if isinstance(n, ast.Name) and n.id == variable and isinstance(n.ctx, ast.Load))


def _function_node(index, function):
    parsed = sources(index).tree(function.path)
    if parsed is None:
        return None
    return next((n for n in ast.walk(parsed[0]) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.lineno == function.line), None)


def _builds(index, maker: str, qualified: str) -> bool:
    """Does calling `maker` give an instance of `qualified` (the class, or a function
    annotated to return it)?"""
    resolved = index.resolve(maker) or maker
    if resolved == qualified:
        return True
    function = index.functions.get(resolved) if "." in resolved else None
    return function is not None and any(index.resolve(r) == qualified for r in function.returns)


def _binds_instance(index, function, variable: str, qualified: str) -> bool:
    """Does `function` bind the local `variable` to an instance of `qualified`
    (`v = Cls(...)`, `v: Cls`, a parameter annotated `Cls`)? Read with `ast`."""
    file = index.files.get(os.path.abspath(function.path))
    node = _function_node(index, function) if file is not None else None
    if node is None:
        return False

    def names_class(expr) -> bool:
        return expr is not None and any(
            isinstance(n, (ast.Name, ast.Attribute)) and index.resolve(qualified_in(file, n)) == qualified
            for n in ast.walk(expr))

    arguments = node.args
    for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        if arg.arg == variable and names_class(arg.annotation):
            return True
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and any(
                isinstance(t, ast.Name) and t.id == variable for t in n.targets):
            maker = qualified_in(file, n.value.func)
            if maker and _builds(index, maker, qualified):
                return True
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == variable \
                and names_class(n.annotation):
            return True
    return False


def _module_type(q: Optional[str]) -> bool:
    """`torch.nn.Module` and its `torch.nn` layers, `PreTrainedModel`."""
    if not q:
        return False
    return q in HEAVY_TYPES and q not in _TENSOR_TYPES or (
        q.startswith("torch.nn.") and q.count(".") == 2 and q.rsplit(".", 1)[1][:1].isupper())


def _callee_word(call: cst.Call) -> Optional[str]:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None


def _annotation_names(ann: cst.BaseExpression) -> list:
    """`X`, `X | None`, `Optional[X]` -> [X]."""
    if isinstance(ann, cst.BinaryOperation):
        return _annotation_names(ann.left) + _annotation_names(ann.right)
    if isinstance(ann, cst.Subscript):
        return [e.slice.value for e in ann.slice if isinstance(e.slice, cst.Index)
                and isinstance(e.slice.value, (cst.Name, cst.Attribute))]
    if isinstance(ann, (cst.Name, cst.Attribute)):
        return [ann]
    return []


def _decorator_words(fn: cst.FunctionDef) -> set[str]:
    words = set()
    for d in fn.decorators:
        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        if isinstance(target, cst.Attribute):
            words.add(target.attr.value)
        elif isinstance(target, cst.Name):
            words.add(target.value)
    return words


def _short(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 40 else code[:37] + "..."


# Calls that only tidy up after releasing (`gc.collect()`, `torch.cuda.empty_cache()`,
# logging): a fix goes before a final run of them, so that they see the memory freed.
_FLUSH_WORDS = frozenset(
    {"collect", "empty_cache", "synchronize", "debug", "info", "warning", "log", "print",
     "info_once", "debug_once"}
)


def _is_flush(stmt) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(
            isinstance(s, cst.Expr) and isinstance(s.value, cst.Call)
            and _callee_word(s.value) in _FLUSH_WORDS
            for s in stmt.body
        )
    if isinstance(stmt, cst.If):
        blocks = [stmt.body]
        orelse = stmt.orelse
        while orelse is not None:
            if isinstance(orelse, cst.If):
                blocks.append(orelse.body)
                orelse = orelse.orelse
            else:
                blocks.append(orelse.body)
                orelse = None
        return all(
            isinstance(b, cst.IndentedBlock) and b.body and all(_is_flush(s) for s in b.body)
            for b in blocks
        )
    return False


def _frees(stmt) -> bool:
    """Does a flush statement collect garbage or empty a cache?"""
    found = False

    class _Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            if _callee_word(node) in ("collect", "empty_cache"):
                found = True

    visit(stmt, _Finder())
    return found


def _release_flags(drops) -> dict[str, bool]:
    """Flags the release path sets to a literal (`self.closed = True`): name -> truth."""
    found: dict[str, bool] = {}

    class _Flags(OwnScopeVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            value = node.value
            if isinstance(value, cst.Name) and value.value in ("True", "False"):
                truth = value.value == "True"
            elif isinstance(value, cst.Integer):
                truth = value.evaluated_value != 0
            else:
                return
            for t in node.targets:
                attr = self_attribute(t.target)
                if attr is not None and attr in drops.flags:
                    found[attr] = truth

    for _, fn in drops.methods:
        visit(fn.body, _Flags())
    return found


def _raised_once_released(cls: cst.ClassDef, attr: str, flags: dict[str, bool]) -> bool:
    """Does a method of `cls` raise `self.attr` (`raise self._failure`, `raise X from
    self._failure`) in a branch that runs only once the release path has set its flag
    (`if self.closed:`, `if not self._open: ... else:`)?"""
    if not flags:
        return False

    def flag_test(test) -> Optional[bool]:
        """The truth of `test` once released, when it is one flag (negated or not)."""
        negated = False
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            negated, test = not negated, test.expression
        name = self_attribute(test)
        if name is None or name not in flags:
            return None
        return flags[name] != negated

    def raises_attr(branch) -> bool:
        found = []

        class _Raises(cst.CSTVisitor):
            def visit_Raise(self, node: cst.Raise) -> None:
                for part in (node.exc, node.cause.item if node.cause is not None else None):
                    if part is not None and self_attribute(part) == attr:
                        found.append(node)

        visit(branch, _Raises())
        return bool(found)

    hits = []

    class _Guards(cst.CSTVisitor):
        def visit_If(self, node: cst.If) -> None:
            truth = flag_test(node.test)
            if truth is True and raises_attr(node.body):
                hits.append(node)
            elif truth is False and node.orelse is not None and raises_attr(node.orelse):
                hits.append(node)

    for fn in body_functions(cls):
        visit(fn.body, _Guards())
    return bool(hits)


def _append(fn: cst.FunctionDef, statements: list) -> Optional[cst.FunctionDef]:
    """Statements at the end of `fn`: before a final `return` (a bare one, or one whose
    value does not involve `self`) and before a final run of `gc.collect()` /
    `empty_cache()` / logging calls; None when the end is not reachable that way."""
    if not end_reachable(fn):
        return None  # after a `try` that returns, an `if` whose branches all return or raise
    body = fn.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return append_to_function(fn, statements)
    stmts = list(body.body)
    k = len(stmts)
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Raise):
        return None
    if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return):
        value = last.body[-1].value
        if len(last.body) > 1 or (value is not None and _mentions_self(value)):
            return None
        k -= 1
    end = k
    while k > 0 and _is_flush(stmts[k - 1]):
        k -= 1
    if not any(_frees(stmt) for stmt in stmts[k:end]):
        k = end  # only logging or synchronising: the end stays the end
    if k == len(stmts):
        return append_to_function(fn, statements)
    return fn.with_changes(body=body.with_changes(body=[*stmts[:k], *statements, *stmts[k:]]))


def _mentions_self(expr) -> bool:
    class _Finder(cst.CSTVisitor):
        found = False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == "self":
                self.found = True

    finder = _Finder()
    visit(expr, finder)
    return finder.found


# -- parts another method frees ------------------------------------------------------------
# What frees a part in place when called on it (`self.x.close()`) or handed it
# (`lora_adapter_free(self.x)`): memory and native handles, not `remove`/`clear`/`reset`
# (a file on disk, a container emptied).
_FREE_WORDS = frozenset(
    {"close", "free", "release", "shutdown", "unload", "destroy", "dispose", "dealloc",
     "deallocate", "terminate", "cleanup", "teardown"}
)


def _frees_word(name: Optional[str]) -> bool:
    return name is not None and not _FREE_WORDS.isdisjoint(name.lower().split("_"))


def _freed_in_place(fn: cst.FunctionDef) -> set[str]:
    """Attributes `fn` frees with a call on them or handing them to a freeing function."""
    found: set[str] = set()

    class _Frees(OwnScopeVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            word = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else None)
            if not _frees_word(word):
                return
            if isinstance(func, cst.Attribute):
                attr = self_attribute(func.value)
                if attr is not None:
                    found.add(attr)
                    return
                if is_self(func.value):
                    return  # `self.close()`: the release path itself
            for arg in node.args:
                attr = self_attribute(arg.value)
                if attr is not None:
                    found.add(attr)

    visit(fn.body, _Frees())
    return found


# -- ExitStacks nothing closes ---------------------------------------------------------------
_STACK_TYPES = frozenset({"contextlib.ExitStack", "contextlib.AsyncExitStack"})
_STACK_REGISTRATIONS = frozenset(
    {"callback", "push", "enter_context", "push_async_callback", "push_async_exit", "enter_async_context"}
)
_STACK_CLOSERS = frozenset({"close", "aclose", "__exit__", "__aexit__", "pop_all"})


def _exit_stacks(ctx, cls: cst.ClassDef) -> list[str]:
    """Attributes a method of `cls` assigns a new `ExitStack()` / `AsyncExitStack()`."""
    found: list[str] = []
    for fn in body_functions(cls):
        for key, entries in ctx.heavy.local_assignments(fn).items():
            if not key.startswith("self.") or key[5:] in found:
                continue
            if any(isinstance(value, cst.Call) and ctx.qualname(value.func) in _STACK_TYPES
                   for value, _ in entries):
                found.append(key[5:])
    return found


class _StackUses(cst.CSTVisitor):
    """How the class uses each stack attribute: registrations (`self.s.callback(...)`),
    and any other use (closed, entered with `with`, handed on, returned)."""

    def __init__(self, attrs: set[str]) -> None:
        self.attrs = attrs
        self.registrations: dict[str, list[tuple[cst.Call, cst.CSTNode]]] = {}  # (call, statement)
        self.other: set[str] = set()
        self._seen: set[int] = set()  # `self.s` nodes accounted for
        self._statement: Optional[cst.CSTNode] = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statement = node

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _STACK_REGISTRATIONS:
            attr = self_attribute(func.value)
            if attr in self.attrs:
                self.registrations.setdefault(attr, []).append((node, self._statement or node))
                self._seen.add(id(func.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if self_attribute(t.target) in self.attrs:
                self._seen.add(id(t.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self_attribute(node.target) in self.attrs:
            self._seen.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = self_attribute(node)
        if attr in self.attrs and id(node) not in self._seen:
            self.other.add(attr)


class _StackClosers(cst.CSTVisitor):
    """Stack attributes something in the file closes: `<anything>.s.close` (called or
    handed on, as to `weakref.finalize`)."""

    def __init__(self, attrs: set[str]) -> None:
        self.attrs = attrs
        self.closed: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _STACK_CLOSERS and isinstance(node.value, cst.Attribute) \
                and node.value.attr.value in self.attrs:
            self.closed.add(node.value.attr.value)


def _attributes_called(fn: cst.FunctionDef) -> set[str]:
    """Attributes `fn` calls a method of: `self.x.m(...)`."""
    found: set[str] = set()

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute):
                attr = self_attribute(node.func.value)
                if attr is not None:
                    found.add(attr)

    visit(fn.body, _Calls())
    return found


def _handed_methods(cls: cst.CSTNode) -> set[str]:
    """Methods of `cls` referenced as `self.m` without being called: handed on as
    callbacks (`self._stack.callback(self._free)`, `atexit.register(self.close)`)."""
    found: set[str] = set()

    class _Handed(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            for arg in node.args:
                attr = self_attribute(arg.value)
                if attr is not None:
                    found.add(attr)

    visit(cls, _Handed())
    return found


# Whole-object closes outside `__del__`: no arguments, and not `free`/`release`, which
# elsewhere free one item (`free(request)`) or release a lock or semaphore.
_CLOSE_WORDS = frozenset({"close", "shutdown", "unload", "destroy", "dispose", "terminate", "teardown"})


def _closed_whole(fn: cst.FunctionDef) -> set[str]:
    """Attributes `fn` closes as a whole: `self.x.close()`, `self.x.shutdown()`."""
    found: set[str] = set()

    class _Closes(OwnScopeVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and not node.args and func.attr.value in _CLOSE_WORDS:
                attr = self_attribute(func.value)
                if attr is not None:
                    found.add(attr)

    visit(fn.body, _Closes())
    return found



def _acquired_in_place(cls: cst.ClassDef) -> dict[str, tuple[str, cst.Call]]:
    """`self.x.load()` / `.open()` / `.connect(timeout=5)` as a statement in a method
    of `cls`, with no positional argument (an item handed in - `allocate(seq)`,
    `connect(address)`, `load(weights)` - is no resource of the part's own):
    attribute -> (verb, the first such call)."""
    found: dict[str, tuple[str, cst.Call]] = {}

    class _Acquires(cst.CSTVisitor):
        def visit_Expr(self, node: cst.Expr) -> None:
            call = node.value
            if isinstance(call, cst.Await):
                call = call.expression
            if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
                return
            verb = call.func.attr.value
            if verb not in ACQUIRES or any(a.keyword is None and a.star != "**" for a in call.args):
                return
            attr = self_attribute(call.func.value)
            if attr is not None:
                found.setdefault(attr, (verb, call))

    for fn in body_functions(cls):
        visit(fn.body, _Acquires())
    return found


def _given_back(module: cst.Module, inverses: dict[str, frozenset]) -> set[str]:
    """Attributes something in the file gives back or drops: `<anything>.x.unload`
    (called or handed on), the inverse called on a name bound to `<anything>.x` or to
    `getattr(<anything>, "x", ...)`, `self.x = None` / `del self.x` / `delattr(self, "x")`."""
    given: set[str] = set()
    aliases: dict[str, set[str]] = {}  # local name -> attributes it was bound to

    def named(expr) -> Optional[str]:
        if isinstance(expr, cst.Attribute):
            return expr.attr.value
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "getattr" \
                and len(expr.args) >= 2 and isinstance(expr.args[1].value, cst.SimpleString):
            return expr.args[1].value.evaluated_value if isinstance(expr.args[1].value.evaluated_value, str) \
                else None
        return None

    class _Bindings(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            attr = named(node.value)
            for t in node.targets:
                if isinstance(t.target, cst.Name) and attr in inverses:
                    aliases.setdefault(t.target.value, set()).add(attr)
                target = self_attribute(t.target)
                if target in inverses and isinstance(node.value, cst.Name) and node.value.value == "None":
                    given.add(target)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            attr = named(node.value)
            if attr in inverses and isinstance(node.target, cst.Name):
                aliases.setdefault(node.target.value, set()).add(attr)

        def visit_Del(self, node: cst.Del) -> None:
            targets = node.target.elements if isinstance(node.target, cst.Tuple) else [node.target]
            for t in targets:
                target = self_attribute(t.value if isinstance(t, cst.Element) else t)
                if target in inverses:
                    given.add(target)

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "delattr" and len(node.args) >= 2 \
                    and isinstance(node.args[1].value, cst.SimpleString):
                name = node.args[1].value.evaluated_value
                if name in inverses:
                    given.add(name)

    class _Inverses(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            verb = node.attr.value
            receiver = node.value
            attrs = {receiver.attr.value} if isinstance(receiver, cst.Attribute) else \
                aliases.get(receiver.value, set()) if isinstance(receiver, cst.Name) else set()
            given.update(a for a in attrs if verb in inverses.get(a, ()))

    visit(module, _Bindings())
    visit(module, _Inverses())
    return given


def subclasses_elsewhere(index, key: tuple[str, str]) -> tuple[str, ...]:
    """The project classes deriving directly from `qualified` in files other than
    `here`. A question for `ProjectIndex.ask` (it reads every class summary)."""
    qualified, here = key
    return tuple(sorted(name for name, c in index.classes.items()
                        if os.path.abspath(c.path) != here
                        and any(index.resolve(b) == qualified for b in c.bases)))


def _project_class(index, qualified: str) -> Optional[str]:
    """The project class `qualified` names: itself, or the one class whose name it ends
    with (a namespace package's modules are indexed from below it: `deepdoc.server.
    adapters.x.C` is indexed as `adapters.x.C`)."""
    if qualified in index.classes:
        return qualified
    if "." not in qualified:
        return None
    return index.ask(class_named_by_suffix, qualified)


def class_named_by_suffix(index, qualified: str) -> Optional[str]:
    """The one project class whose qualified name `qualified` ends with, if exactly one
    does. A question for `ProjectIndex.ask` (it reads every class name)."""
    matches = [k for k in index.classes if qualified.endswith("." + k)]
    return matches[0] if len(matches) == 1 else None


def _defines_any(index, qualified: str, names: frozenset, depth: int = 0) -> bool:
    """Does the project class `qualified`, or a base of it, define one of `names`? A base
    outside the project may."""
    info = index.classes.get(qualified)
    if info is None or depth > _MAX_DEPTH:
        return True
    if any(n in info.methods for n in names):
        return True
    for base in info.bases:
        resolved = index.resolve(base) or base
        if resolved in ("object", "builtins.object"):
            continue
        if _defines_any(index, resolved, names, depth + 1):
            return True
    return False


def _returns(fn: cst.FunctionDef) -> list[cst.Return]:
    found: list[cst.Return] = []

    class _Returns(OwnScopeVisitor):
        def visit_Return(self, node: cst.Return) -> None:
            found.append(node)

    visit(fn.body, _Returns())
    return found


def _fills_container(index, qualified: str) -> bool:
    """Does a method of the project class `qualified` (not `__init__`) put an object it is
    handed, as it is, into a container of the instance: `self.c[name] = entry`,
    `self.c.append(item)` (`entry`, `item` parameters; `self.c` assigned in a method, not
    a class-level memo)? A value derived from what is handed (`self.sizes[p.numel()] =
    groups`) is a bounded memo, not a store."""
    info = index.classes.get(qualified)
    if info is None:
        return False
    parsed = sources(index).tree(info.path)
    if parsed is None:
        return False
    node = next((n for n in ast.walk(parsed[0]) if isinstance(n, ast.ClassDef) and n.lineno == info.line), None)
    if node is None:
        return False
    functions = [fn for fn in node.body if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))]
    instance = {t.attr for fn in functions for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if _own_attribute(t)}
    for fn in functions:
        if fn.name == "__init__":
            continue
        params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs][1:]}

        def handed(expr) -> bool:
            return isinstance(expr, ast.Name) and expr.id in params

        def container(expr) -> bool:
            return _own_attribute(expr) and expr.attr in instance

        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and handed(n.value) and any(
                    isinstance(t, ast.Subscript) and container(t.value) for t in n.targets):
                return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _FILLS \
                    and container(n.func.value) and any(handed(a) for a in n.args):
                return True
    return False


_FILLS = frozenset({"append", "add", "setdefault", "insert"})


def _own_attribute(expr) -> bool:
    return isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self"
