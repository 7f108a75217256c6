"""RL702's documentation and its examples: the markdown of `StoredExceptionFrames.docs`,
and the sources it must pass (`VALID`) and report on the given lines (`INVALID`)."""

from retainlint.analysis.rule import Example

DOCS = """
## What it does
Reports an exception bound by `except ... as e` (inside a function) that is stored where
it outlives the handler, when its traceback is not dropped first:

- on an object: `self.error = e`, `self.errors[k] = e`, `cls.last = e`,
  `Class.last = e`, `state.error = e` for a parameter `state` (but not out-parameters
  such as `result[0] = e` or `errors.append(e)` on a parameter: the caller reads them);
- in a container that outlives the call: `self.errors.append(e)`, a module global's
  `_ERRORS.append(e)`, `state.errors.append(e)` (also `add`, `insert`, `extend`,
  `setdefault`, `update`);
- in a module global (`global _last_error; _last_error = e`);
- in a returned container (`return (None, e)`, `return {"error": e}`, a local list
  the exception was appended to) or a returned instance of a class of this file built
  around it (`return ServerDescription(address, error=e)`), when a caller in the same
  file keeps the result on
  an object or in a global (`self.results[k] = try_load(k)`) - a caller that unpacks
  the result and raises or logs it does not keep the frames, and neither does a
  function that raises the collected exception before it returns;
- the same through a local alias (`err = e` in the handler, `self.err = err` later),
  wrapped in a container or a class instance (`self.failure = Failure(e)`; for a class of
  this file, only when its `__init__` keeps the argument and does not clear its
  traceback), and for `e.__traceback__` itself;
- in a local of a serving loop: a handler of a `try` that a `while True:` loop runs again
  after success (a worker's or a server's loop) assigning the exception, or an object
  built around it (`failure = _RemoteError(e, e.__traceback__)`), to a local that nothing
  deletes or rebinds, when the handler does not leave the loop itself (`raise`, `return`,
  `break`): the last failure's frames stay alive until the next failure
  replaces it (Python unbinds `e` at the end of the handler, not the local).

`sys.exc_info()` or `sys.exception()` in a local of the handler's function is a cycle
through that function's own frame, reported by RL703 (self-reference-cycle).

Not reported: a traceback dropped first (`e.__traceback__ = None`, `e.with_traceback(None)`,
`traceback.clear_frames(e.__traceback__)`, a helper named for it such as
`_detach_tracebacks(e)`, or a function of this file that does it to its parameter, as
`def _sanitize(error): error.__traceback__ = None`); only text stored (`str(e)`, `repr(e)`,
`traceback.format_exc()`), or a field read through a property of the exception's class
(`e.key`: a property is no method bound to `e`); `future.set_exception(e)` and queues (the consumer re-raises
it); locals and closure variables of an enclosing function; an attribute the class hands
off and clears (`err, self._error = self._error, None; raise err`) or clears in a release
method, and a slot another function takes it out of (`self._results.pop(k)`, `del
self._jobs[k]`); handlers at module level and import probes (a `try` of only imports, or
`except ImportError as e`): their frames are import machinery.

Nor an exception kept for a reader that re-raises or returns it, as a hand-written
future, a worker thread's error or a run-once initialiser's terminal failure do: the slot
it is stored in (`self._error`, `self._results[i]`, a module global) is read and raised
somewhere in the file (`self._error` by the class, a base or a subclass; `obj._error` by
any code) - `raise self._error`, `raise RuntimeError(...) from _init_error`,
or through a local, an entry or a getter (`exc = self._result.get("exception"); raise
exc`, `for item in self.thread.results(): raise item`) - or returned by a getter (`def
error(self): return self.error_`, as `Future.exception()` does). Nor what the `run()` of a
`threading.Thread` subclass records on `self`: a thread runs once, and its failure is its
outcome, read by whoever joined it. Such a store is still reported,
as info, when the handler's function has a heavy parameter or local: the reader
needs the exception, not the frames that pin them. Nor a value stored only where an
`isinstance` test has ruled the exception out (`if isinstance(v, Exception): raise v`
before the store, its `else:` branch, `if not isinstance(v, BaseException):`), when the
test covers every type the handler catches.

Severity: one exception is kept per holder, replaced by the next failure, so the finding
is a warning when the frames hold heavy objects (a method of a class holding a model, a
function with a model or tensor parameter or local) and info (shown with `--min-severity
info`) when they do not - unless a caller keeps the result that holds it, whose next call's
frames may hold it again (a chain: a warning) - or when the exception is kept for a reader
that re-raises it. A serving loop's local is a warning: its frames are those of the work
the loop ran, whose arguments and results the loop does not show, so nothing rules out
that they are heavy.

## Why it leaks
An exception's `__traceback__` references every frame from the handler's function down
to where it was raised, and each frame references all its local variables - tensors,
models, batches. Storing the exception keeps all of them alive for as long as the holder
lives (a long-lived object, a module global: forever).

## Example
```python
class Worker:
    def run(self, batch):
        try:
            self.model(batch)
        except Exception as e:
            self.error = e  # RL702: keeps `batch` and every frame below alive
```

## Fix (suggestion only)
Store what is needed - the type, the message, `traceback.format_exc()` - or clear the
traceback first (`self.error = e.with_traceback(None)`). When the exception must be
re-raised elsewhere, clear the attribute when it is handed off, and keep heavy locals
out of the frames it keeps. Delete a serving loop's local once it is handed on.
"""

VALID = [
    # the traceback cleared by a helper before the exception is kept
    """
def _sanitize(error):
    error.__traceback__ = None

class Description:
    def __init__(self, address, error=None):
        self.address = address
        self.error = error

class Monitor:
    def run(self):
        self.description = self.check()

    def check(self):
        try:
            return self.probe()
        except OSError as e:
            _sanitize(e)
            return Description(self.description.address, error=e)
""",
    # text only, or the traceback dropped first
    """
import traceback

class Worker:
    def run(self, batch):
        try:
            self.step(batch)
        except Exception as e:
            self.error = str(e)
            self.trace = traceback.format_exc()
        try:
            self.step(batch)
        except Exception as e:
            self.last = e.with_traceback(None)
        try:
            self.step(batch)
        except Exception as e:
            e.__traceback__ = None
            self.errors.append(e)
""",
    # handed to a future, logged, re-raised; a local retry variable
    """
import logging

def call(fn, future, retries):
    last = None
    for _ in range(retries):
        try:
            return fn()
        except Exception as exc:
            logging.warning("failed: %s", exc, exc_info=exc)
            last = exc
    future.set_exception(last)
""",
    # module-level import probes
    """
try:
    import flash_attn
except ImportError as e:
    _FLASH_ERROR = e

def probe():
    global _FLASH_ERROR
    try:
        import flash_attn
    except ImportError as e:
        _FLASH_ERROR = e
""",
    # handed off: read, cleared, re-raised
    """
class Pipe:
    def _worker(self):
        try:
            self.pump()
        except BaseException as e:
            self._error = e

    def check(self):
        if self._error is not None:
            err = self._error
            self._error = None
            raise err
""",
    # a retry loop that leaves on success
    """
def retry(fn):
    while True:
        try:
            return fn()
        except OSError as e:
            last = e
            if fn.attempts > 3:
                raise RuntimeError("gave up") from last
""",
    # kept for a reader that re-raises it; stored only once ruled out as an exception
    """
import threading

class Broker:
    def _serve(self):
        try:
            self.sock.accept()
        except OSError as e:
            self._error = e

    def raise_if_failed(self):
        if self._error is not None:
            raise RuntimeError("broker failed") from self._error

class Trainer:
    def __init__(self, probe, broadcast):
        try:
            mode = probe()
        except Exception as e:
            mode = e
        mode = broadcast([mode])[0]
        if isinstance(mode, Exception):
            raise mode
        self.mode = mode
""",
]

INVALID = [
    # a failed check's exception kept in the description the monitor keeps (pymongo)
    Example(
        """
class Description:
    def __init__(self, address, error=None):
        self.address = address
        self.error = error

class Monitor:
    def run(self):
        self.description = self.check()

    def check(self):
        try:
            return self.probe()
        except OSError as e:
            previous = self.description
            return Description(previous.address, error=e)
""",
        lines=[16],
    ),
    Example(
        """
class Worker:
    def run(self, batch):
        try:
            self.model(batch)
        except Exception as e:
            self.error = e
""",
        lines=[7],
    ),
    # containers: on self, a module global, a returned one; an alias after the handler
    Example(
        """
_FAILURES = []

class Loader:
    def load_all(self, paths):
        for p in paths:
            try:
                self.load(p)
            except OSError as err:
                self.failed.append((p, err))
                _FAILURES.append(err)
        return paths

def try_load(path):
    try:
        return open(path), None
    except OSError as exc:
        return None, exc

def remember(state, fn):
    error = None
    try:
        fn()
    except Exception as e:
        error = e
    state.last_error = error

class Cache:
    def get(self, path):
        self.entries[path] = try_load(path)
""",
        lines=[10, 11, 18, 26],
    ),
    # heavy frames: an error
    Example(
        """
import torch

_last_error = None

def forward(model: torch.nn.Module, x):
    global _last_error
    try:
        return model(x)
    except RuntimeError as e:
        _last_error = e
""",
        lines=[11],
    ),
    # a serving loop's local
    Example(
        """
def worker(inbox, outbox):
    while True:
        job = inbox.get()
        try:
            outbox.put(job())
        except Exception as e:
            failure = e
            outbox.put(repr(failure))
""",
        lines=[8],
    ),
    # re-raised later, but the frames pin a tensor: an error
    Example(
        """
import torch

class Pool:
    def wrap(self, tensor: torch.Tensor):
        try:
            return self.copy(tensor)
        except RuntimeError as e:
            self._failure = e

    def check(self):
        if self._failure is not None:
            raise RuntimeError("pool failed") from self._failure
""",
        lines=[9],
    ),
]
