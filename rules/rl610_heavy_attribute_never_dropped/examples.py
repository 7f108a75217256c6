"""The documentation of RL610 heavy-attribute-never-dropped (`HeavyAttributeNeverDropped.docs`)
and the code samples the test suite runs: `VALID` (nothing to report) and `INVALID` (what it
reports, and the source after its fixes)."""

from retainlint.analysis.rule import Example

DOCS = """
## What it does
Reports a class whose release methods (`shutdown`, `close`, `cleanup`, `release`,
`teardown`, `free`, `stop`, `__exit__`, `__aexit__`; configurable) never drop an
attribute that the class itself assigns a heavy object anywhere: a model or tensor it
builds (`self.model = nn.Linear(...)`, `self.kv = torch.empty(...)`, the result of a
function annotated to return one), an instance of a project class that holds such
attributes (`self.model_runner = GPUModelRunner(...)`), or a worker pool it builds
(`ThreadPoolExecutor(...)`, `ProcessPoolExecutor(...)`, `multiprocessing.Pool(...)`), whose
threads or processes keep running, with what was handed to them, until it is shut down;
or an OS resource it opens (`open(...)`, `socket.socket()`, `socket.create_connection(...)`,
a selector, `mmap.mmap(...)`, `sqlite3.connect(...)`, an `http.client` connection,
`requests.Session()`, `httpx.Client()`, `httpx.AsyncClient()`, `aiohttp.ClientSession()`,
`urllib3.PoolManager()`, zip and tar archives, `shelve` and `dbm` files, `h5py.File(...)`,
`psycopg2` and `pymysql` connections, `ftplib.FTP`, `smtplib.SMTP`, `paramiko.SSHClient`,
`redis.Redis`), which stays open - a file descriptor, a socket, a pool of
connections - until it is closed; the fix closes it with its own method
(`self.session.close()`, `await self.session.close()` in an `async` release; none in a
plain release when closing is a coroutine). A class with no release method of its own that
derives from a library class whose `close()` is its release (`requests.Session`,
`httpx.Client`, `socket.socket`, an `http.client` connection, `logging.Handler`, the `io`
bases) releases with that `close()`, which closes only what the base opened: what the
class builds is reported at the class, without a fix (the remedy is a `close()` that closes
it and then calls `super().close()`). Not a child process (`subprocess.Popen`): it
is ended in too many ways to tell (`wait()`, `kill()`, `os.killpg(p.pid, ...)`).

Dropping means, in a release method or any method it calls on `self` (also methods
inherited from project base classes and reached through `super()`): `del self.x`,
`self.x = None` (or any new value), `self.x.clear()`, `delattr(self, "x")`, calling a
release method of the attribute (`self.x.shutdown()`, also through a local such as
`if r := getattr(self, "x", None): r.shutdown()`), moving it off the accelerator
(`self.x.to("cpu")`, `self.x.cpu()`), `del self.x[:]`, or handing it to a releasing
function (`free_cache(self.x)`), or shrinking its storage to nothing in place
(`self.x.storage().resize_(0)`); or releasing it later: handing its release method to a
runner (`await asyncio.to_thread(self.x.shutdown)`), or registering it on an exit stack
the class keeps (`self._resources.callback(self.x.shutdown)`, `.enter_context(self.x)`)
that a release method runs (`self._resources.close()`).

Not reported, because nothing worth freeing is kept or the class does not own it:
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

The other shapes of a release that keeps something have codes of their own: an exception
(RL611), a part with no release method (RL612), a part another method frees (RL613), an
`ExitStack` nothing closes (RL614), a resource acquired and never given back (RL615), a
release inherited that only marks the object closed (RL616). Split from RL602
(release-keeps-heavy-attribute), which still selects and silences all seven.

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

    def shutdown(self):  # RL610: `self.model_runner` is never dropped
        if self.profiler is not None:
            self.profiler.shutdown()
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
`None`), and whenever it calls the part's own release method.
"""

VALID = [
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

INVALID = [
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
        lines=[14],
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
