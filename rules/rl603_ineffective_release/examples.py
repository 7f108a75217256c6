"""RL603's documentation and examples: the `docs` text, and the `valid` and `invalid`
snippets its tests and generated docs are built from."""

from retainlint.analysis.rule import Example

DOCS = """
## What it does
Reports cleanup code that frees nothing:

1. **a deleted parameter** - `del objs` (or `del self`) in a function that is meant to
   free something (its name says so: `free`, `release`, `cleanup`, `delete`, `destroy`,
   `unload`, `close`, ...; or it calls `gc.collect()` / `torch.cuda.empty_cache()`).
   `del` only unbinds the function's own name. Not reported: a parameter rebound in the
   function first (`x = prepare(x); ...; del x` frees the new object), and the
   "unused argument" idiom: `del` as the first statement (after the docstring) of any
   function - a method, a module function, a fake bound later with `MethodType` - the
   names never used again. A deletion meant to free is not that idiom: one right before
   `gc.collect()` / `empty_cache()` (unless the parameter is optional: a caller may pass
   nothing), `del self` in a method of a class, or a `del` that is all a plain function
   does (`def free(objs): del objs`). Nor `del self` in `__del__` (no caller holds the
   instance any more), nor a `del` in an `except ... as e:` handler that hands `e` on
   (`future.set_exception(e)`): the traceback references the frame, the frame its locals,
   and unbinding them breaks that cycle - the `del` does free.
2. **a `WeakMethod` as a cleanup callback** - `weakref.finalize(obj, weakref.WeakMethod(obj.close))`
   or `atexit.register(weakref.WeakMethod(self.close))` (a `weakref.ref` the same way).
   Calling a `WeakMethod` only dereferences it: it returns the bound method (or `None`)
   and never calls it, so the cleanup silently never runs.
3. **a rebound shared container** - a release method that does `self.cache = {}` (or
   `[]`, `set()`, `dict()`, ...) when the class handed `self.cache` to another object
   (`self.runner = Runner(self.cache)`, `engine.cache = self.cache`,
   `registry.register(self.cache)`) that the release path does not drop (nor release:
   `self.runner.shutdown()`), in the method or the methods it calls on `self`: that object
   still holds the old, full container. `self.cache.clear()` was meant. (Release methods
   callable with `self` alone; not `free(self, idx)`, which lets go of one item.)
4. **a deleted loop variable** - `for obj in objs: del obj` over a parameter, in a
   function meant to free (a cleanup name, or a reclaim call in it): each `del` unbinds
   the loop variable; the caller's list and names keep every object. The caller has to
   `del` its own names before collecting.
5. **the cache emptied before the release** - in a cleanup function,
   `torch.cuda.empty_cache()` (or `soft_empty_cache()`, `ipc_collect()`, ...) right before
   the statement that unloads (`unload_all_models()`, `offload(...)`, `free_...()`), and
   never again after it: the allocator gives back only blocks nothing uses yet, and what
   the unload frees stays reserved.
6. **a reload that frees what it handed out** - a method that returns an object built
   around `self.x` (`return Pipeline(self.x)`, through locals too) and, when called again,
   lets go of the previous `self.x` (`self.x = None`, `del`) before `gc.collect()` /
   `empty_cache()`: the object it returned last time (kept by the caller, a framework's
   model list) still holds the old value, so nothing is freed. Not reported when the old
   object is moved off the device in place first (`old.to("cpu")`, `.cpu()`), which
   empties its storage whoever holds it.

Severity: an error for the `WeakMethod` case (the cleanup never runs); for the others a
warning, an error when what is kept is heavy (a parameter annotated as a model -
one tensor may be a scalar or a big mask: a warning - or a container of a heavy class) - unless the function itself keeps using the object
under a local name (`env = env_or_factory` ... `del env_or_factory`): then the `del` was
never its release. Cases 4 to 6 are warnings: what is kept depends
on the caller.

## Why it leaks
Memory is freed when the last reference goes. Unbinding a local name, calling a function
that never runs, or rebinding one of two references leaves the object - a model, a KV
cache, a dict of tensors - reachable, while the code reads as if it were released.

## Example
```python
def free_model(model):
    model.cpu()
    del model  # RL603: the caller still holds the model
    torch.cuda.empty_cache()

class Client:
    def __init__(self):
        self._finalizer = weakref.finalize(self, weakref.WeakMethod(self.close))  # RL603

def release_all(objects):
    for obj in objects:
        del obj  # RL603: the caller's list and names keep every object
    gc.collect()

def free_vram():
    torch.cuda.empty_cache()  # RL603: the models are still loaded here
    manager.unload_all_models()

class Loader:
    def load(self, path):
        self.model = None
        torch.cuda.empty_cache()  # RL603: the Pipeline returned last time holds the old model
        self.model = build(path)
        return Pipeline(self.model)
```

## Fix (unsafe, `WeakMethod` case)
For `weakref.finalize(self, weakref.WeakMethod(self.m))` where `m` is a method of the
class that only reads attributes of `self`: a staticmethod `_m_finalizer` receiving those
attributes is added after `m`, and the finalizer is registered as
`weakref.finalize(self, Class._m_finalizer, self.a, self.b)`. Unsafe: the attributes are
captured when the finalizer is registered, and the finalizer keeps them alive until it
runs. For `atexit.register(weakref.WeakMethod(x.m))` the callback becomes a lambda that
dereferences the `WeakMethod` and calls the method when it is still alive. Other cases are
reported without a fix: pass a function or staticmethod that receives the resources.
"""

VALID = [
    # the parameter is rebound first: the `del` frees the new object
    """
import gc

def step(inputs):
    inputs = prepare(inputs)
    loss = run(inputs)
    del inputs
    gc.collect()
    return loss
""",
    # the unused-argument idiom, in a method or any other function
    """
class Hooks:
    def close(self, force):
        del force
        self.stop()

def sample_clean_root(*, seed_tokens, logits):
    "Sample the clean root."
    del seed_tokens
    return logits.argmax(-1)
""",
    # a deletion inside a function that frees nothing by intent
    """
def forward(x, cache):
    y = x + 1
    del cache
    return y
""",
    # a finalizer with a plain function receiving the resources
    """
import weakref

def _close(proc):
    proc.kill()

class Worker:
    def __init__(self, proc):
        self.proc = proc
        self._finalizer = weakref.finalize(self, _close, proc)
""",
    # a loop over a local list; the cache emptied after the unload; the old model moved off the device
    """
import gc
import torch

def release_pending(queue):
    pending = list(queue)
    for item in pending:
        del item
    gc.collect()

def free_vram(manager):
    manager.unload_all_models()
    torch.cuda.empty_cache()

class Loader:
    def load(self, path):
        old = self.model
        self.model = None
        old.to("cpu")
        torch.cuda.empty_cache()
        self.model = build(path)
        return Pipeline(self.model)
""",
    # rebinding a container only this object holds
    """
class Cache:
    def __init__(self):
        self.entries = {}

    def close(self):
        self.entries = {}
""",
]

INVALID = [
    Example(
        """
import torch

def free_model(model):
    model.cpu()
    del model
    torch.cuda.empty_cache()
""",
        lines=[6],
    ),
    Example(
        """
import weakref

class Client:
    def __init__(self, sock, pool):
        self.sock = sock
        self._pool = pool
        self._finalizer = weakref.finalize(self, weakref.WeakMethod(self.close))

    def close(self):
        self.sock.close()
        self._pool.shutdown(wait=False)
""",
        lines=[8],
        fixed="""
import weakref

class Client:
    def __init__(self, sock, pool):
        self.sock = sock
        self._pool = pool
        self._finalizer = weakref.finalize(self, Client._close_finalizer, self.sock, self._pool)

    def close(self):
        self.sock.close()
        self._pool.shutdown(wait=False)

    @staticmethod
    def _close_finalizer(sock, pool):
        sock.close()
        pool.shutdown(wait=False)
""",
    ),
    Example(
        """
import atexit
from weakref import WeakMethod

class Core:
    def __init__(self):
        atexit.register(WeakMethod(self.unload))

    def unload(self):
        pass
""",
        lines=[7],
        fixed="""
import atexit
from weakref import WeakMethod

class Core:
    def __init__(self):
        atexit.register(lambda method=WeakMethod(self.unload): method() and method()())

    def unload(self):
        pass
""",
    ),
    Example(
        """
import gc

def release_all(objects):
    for obj in objects:
        del obj
    gc.collect()
""",
        lines=[6],
    ),
    Example(
        """
import torch

def free_vram(manager):
    torch.cuda.empty_cache()
    manager.unload_all_models()
""",
        lines=[5],
    ),
    Example(
        """
import torch

class Loader:
    def load(self, path):
        self.model = None
        torch.cuda.empty_cache()
        self.model = build(path)
        return Pipeline(self.model)
""",
        lines=[7],
    ),
    Example(
        """
class Worker:
    def __init__(self, runner_cls):
        self.kv_caches = {}
        self.runner = runner_cls(kv_caches=self.kv_caches)

    def shutdown(self):
        self.kv_caches = {}
""",
        lines=[8],
    ),
]
