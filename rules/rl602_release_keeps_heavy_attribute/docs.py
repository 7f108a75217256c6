"""The documentation of RL602 release-keeps-heavy-attribute (`ReleaseKeepsHeavyAttribute.docs`):
what it reports, why it leaks, the incident, examples and the fix."""

DOCS = """
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
