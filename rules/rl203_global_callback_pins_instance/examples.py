"""RL203's documentation and the code samples the test suite runs: `DOCS` (what it does,
why it leaks, the incident, the fix), `VALID` (not reported) and `INVALID` (reported,
with the lines and fixed source)."""

from retainlint.analysis.rule import Example

DOCS = """
## What it does
Reports, in an instance method, a registration in a process-wide registry of something
that keeps the instance alive:

- `atexit.register(self.close)`, `atexit.register(self.stop, True)`,
  `atexit.register(partial(cleanup, self))`, `atexit.register(lambda: self.close())`;
- `signal.signal(sig, self.handler)` (or a lambda / nested function using `self`, or a
  method of the class that returns such a closure);
- `os.register_at_fork(after_in_child=self._reinit)` (any of its three hooks): there is
  no unregister at all, so no release method can undo it;
- a process-wide event loop's triggers: Twisted's
  `reactor.addSystemEventTrigger("during", "shutdown", self.close)`, undone only by
  `removeSystemEventTrigger` in a method of the class; an event loop's
  `loop.add_reader(fd, self._ready)` and `add_writer`, undone by `remove_reader` /
  `remove_writer` (or a hub's `remove(fd)`); not on a loop a method other than `__init__`
  is handed (`register_with_event_loop(self, connection, loop)`: the caller's loop, which
  takes it out again) (asyncio's `loop.add_signal_handler`
  is not reported: it replaces the signal's previous handler, and the loop drops them all
  when it closes);
- `_LIVE.append(self)`, `_CALLBACKS.append(self.on_event)`, `_SEEN.add(self)` where the
  list, set or deque is a module global of the same file that is read somewhere (in the
  file, or imported by another one: a container that is only ever added to is a
  keep-alive anchor, retaining on purpose);
- a call of a module function of the same file that adds its argument, as given, to such
  a list (`on_shutdown(self.stop)` with `def on_shutdown(handler): _handlers.append(handler)`:
  a framework's shutdown or event registry); here only taking single entries out undoes it
  (a `clear()` of all entries at shutdown or in a test reset does not), and a registry
  function that first wraps what it is given (`handler = WeakMethod(handler)`) is not one;
- the same with a bound method of another object known to be heavy
  (`atexit.register(self.model.cleanup)`, `atexit.register(model.close)`);
- an argument of `__init__` put in a list, set or deque of the class body
  (`cls._params.append((target, name, func))` in a helper `__init__` calls with its
  `engine`, or `Session._open.add(connection)` in `__init__` itself): the class keeps every
  object an instance was given. Only taking single entries out (`remove`, `pop`, `del`)
  undoes it; a `clear()` that resets every instance at once does not;
- something that runs on its own with a callback over the instance, and keeps it while it
  runs: a `threading.Thread(target=self._run)` whose `_run` reaches a `while` loop with no
  `break`, `return` or `raise` that is always true or tests only flags of the instance no
  other method sets (`while not self._stop.is_set():` with no `self._stop.set()` outside
  `__init__`); a `threading.Timer(t, self._tick)` or an event loop's `call_later` /
  `call_at` (Twisted's `callLater`) handed `self._tick` inside `_tick` itself, so it arms
  itself again, undone by `.cancel()` on the attribute that keeps the handle or by a flag
  of the instance that guards the re-arming and another method sets; an asyncio task
  (`asyncio.create_task`, `loop.create_task`, `ensure_future`, or a project's own
  `create_task`) of a coroutine of the instance that loops for ever as a thread's target
  would, or that starts itself again (`create_task(self.tick())` in `tick`; not when the
  call turns off the parameter guarding the restart, `self.tick(requeue=False)`), undone
  by `.cancel()` on the attribute that keeps the task; a Twisted
  `task.LoopingCall(self.ping)`, undone by `.stop()` on the attribute that keeps it. A stop
  counts where the class's release methods or the end of its connection (`connection_lost`,
  `connectionLost`) reach it, through the methods of `self` they call (any method, when
  the class has no release method). Shown only when the code shows instances made per
  call or per connection (an error: one more runner per instance, never stopped); info
  otherwise;

when nothing undoes it: no method of the class (other than `__del__`, which cannot run
while the registry holds the instance) calls `atexit.unregister(...)` for that callback, or
removes the loop's trigger, or
installs another handler for the signal (restoring the old one, `SIG_DFL`); an
`atexit` callback or a loop trigger whose undo the class's `__del__` runs too (through the
`close()` it calls) is reported all the same: `__del__` is the release of an instance
nobody closes, and the registration keeps it from ever running; so is an `atexit`
callback that is a private method undoing its own registration (`_cleanup()` ending with
`atexit.unregister(self._cleanup)`) that no other method calls: its undo runs only when the
registry runs it, at exit (a public one, `close()`, is the owner's to call); the saved old
handler (`self._old = signal.signal(...)`) is never reinstalled anywhere in the file, and
nothing in the project takes entries out of the list (`.remove`, `.discard`, `.pop`,
`.clear`, `del`, slice assignment, rebinding, handing it to other code).

Objects that live as long as the process anyway are left alone: registrations at
module level or in plain functions, classes instantiated at module level (and nowhere
else), singletons (`_instance` class attributes, `__new__`, a singleton decorator or
metaclass, a `@functools.cache` getter, `global x; x = Cls()`), one instance per key kept
in a module dict that nothing takes them out of (`_REPORTERS[device] = Reporter(device)`),
instances made once (not in a loop) by a process entry point (a function the
`if __name__ == "__main__":` block runs, or a `multiprocessing.Process` target, that no
other function calls), server components (a class that starts a daemon thread on a method
of its own that nothing joins, and has no release method: its exit callback is its only
teardown), and logger classes. A
callable stored on the instance that is not a bound method (`self._finalizer =
weakref.finalize(...)`) pins only itself. Levels follow the consequence: a module-global
container that keeps every instance grows by one per instance, an error when the instances
are heavy (an `nn.Module` subclass, a class holding tensors); a handler list of the
interpreter (atexit, signals, at-fork) keeps one per instance made, an error when instances
are made per call or request and heavy, info when the project makes one for the process (at
module level, in an entry point), a warning when how many are made is unknown (a connector a
factory builds). A signal has one handler slot, so it keeps only the latest instance: info
when that instance is light, unless each handler keeps the one it replaced (a chain that
grows by one per instance). An exit or signal handler that is the instance's own release
(`atexit.register(self.close)`) is info when that release lets go of every object the
project built for the instance: after an explicit `close()` the table keeps a closed shell
(its arguments, flags and closed handles).

## Why it leaks
`atexit`'s list, the interpreter's signal-handler table and a module global are GC
roots. A bound method holds its `__self__`, a closure holds `self`: the instance - and
its model, KV caches, buffers - stays alive until the interpreter exits (or the handler
is replaced), long after its owner shut it down and dropped it. Each new instance adds
another pinned one.

## Incident
A KV-cache storage connector registered `atexit.register(self.close)` and signal handlers
`lambda sig, frame: self.close()` in its `__init__`; its `close()` never unregistered
them, so every connector built in a process - with the KV caches it referenced - survived
engine shutdown.

## Example
```python
import atexit

class Connector:
    def __init__(self, caches):
        self.caches = caches
        atexit.register(self.close)  # RL203

    def close(self):
        self.caches = None
```

## Fix (where the release method does the exit call's work)
Offered only when the instance holds something heavy (an error): unregistering a light
object frees nothing that matters. For `atexit.register(self.<method>, ...)`,
`atexit.unregister(self.<method>)` is appended
to the class's release method (the first of `shutdown`, `close`, ... it defines that
releases the whole object: not `__del__`, not a per-item `release(self, request_id)`, not an
abstract stub), importing `atexit` when the module does not import it at top level - only
when that release method is `<method>` itself or calls it on `self` (otherwise what the exit
call would have done no longer happens), when its end is reached (not after a `try` whose
body returns), and when no other registration of the class (another exit callback, a
signal handler, a lambda over `self`) keeps the instance anyway: the message names those.
`atexit.unregister` does nothing when the callback is not registered, and bound methods of
the same instance compare equal. The fix is safe when `<method>` begins by returning
if a flag it sets says it already ran (a second call does nothing); otherwise it is unsafe:
after an explicit release, `<method>` no longer runs a second time at exit. Signal handlers, fork hooks,
loop triggers and module-level lists have no automatic fix: register a function that
reaches the instance through a `weakref.WeakMethod` (the only cure for a fork hook),
remove the trigger, restore the previous handler
(`self._old = signal.signal(...)` ... `signal.signal(sig, self._old)`), or remove the
instance from the list, in the release method - or keep a `weakref.WeakSet`.
"""

VALID = [
    # the loop's own trigger table: the entries live and die with the object
    """
from twisted.internet.base import ReactorBase

class GuiReactor(ReactorBase):
    def _quit_gui(self):
        self.gui.quit()

    def start(self):
        self.addSystemEventTrigger("before", "shutdown", self._quit_gui)
        super().addSystemEventTrigger("after", "shutdown", lambda: self.gui.destroy())
""",
    # module level: the object is a module global, alive until exit anyway
    """
import atexit
from concurrent.futures import ThreadPoolExecutor

pool = ThreadPoolExecutor()
atexit.register(pool.shutdown)
""",
    # undone in the release method
    """
import atexit
import signal

class Server:
    def __init__(self):
        atexit.register(self.close)
        self._old = signal.signal(signal.SIGTERM, self._on_term)

    def _on_term(self, signum, frame):
        self.close()

    def close(self):
        atexit.unregister(self.close)
        signal.signal(signal.SIGTERM, self._old)
""",
    # a module-level singleton
    """
import atexit

class _Stats:
    def __init__(self):
        atexit.register(self.dump)

    def dump(self):
        pass

stats = _Stats()
""",
    # one reporter per device, kept in a module dict for the whole process
    """
import atexit

_REPORTERS = {}

class Reporter:
    def __init__(self, device):
        atexit.register(self.close)

    def close(self):
        pass

def get_reporter(device):
    if device not in _REPORTERS:
        _REPORTERS[device] = Reporter(device)
    return _REPORTERS[device]
""",
    # made once by the process's entry point
    """
import signal

class Daemon:
    def serve(self):
        signal.signal(signal.SIGTERM, lambda signum, frame: self.stop())

    def stop(self):
        pass

def main():
    Daemon().serve()

if __name__ == "__main__":
    main()
""",
    # a weak set; a list pruned on shutdown
    """
import weakref

_live = weakref.WeakSet()
_all = []

class Worker:
    def __init__(self):
        _live.add(self)
        _all.append(self)

    def shutdown(self):
        _all.remove(self)
""",
]

INVALID = [
    Example(
        """
from typing import Callable

_handlers: list[Callable] = []


def on_shutdown(handler: Callable) -> None:
    _handlers.append(handler)


async def shutdown() -> None:
    for handler in _handlers:
        handler()


class Planner:
    def __init__(self, process):
        self.process = process
        on_shutdown(self.stop)

    def stop(self):
        self.process.terminate()
""",
        lines=[19],
    ),
    Example(
        """
import atexit

import torch

class Connector:
    def __init__(self, caches: dict[str, torch.Tensor]):
        self.caches = caches
        atexit.register(self.close)

    def close(self):
        \"\"\"Drop the caches.\"\"\"
        self.caches = None
""",
        lines=[9],
        fixed="""
import atexit

import torch

class Connector:
    def __init__(self, caches: dict[str, torch.Tensor]):
        self.caches = caches
        atexit.register(self.close)

    def close(self):
        \"\"\"Drop the caches.\"\"\"
        self.caches = None
        atexit.unregister(self.close)
""",
    ),
    # `atexit` imported inside the method: the fix imports it at top level
    Example(
        """
import logging

import torch

class Recorder:
    def start(self):
        from atexit import register
        self.frames: list[torch.Tensor] = []
        register(self.flush)

    def flush(self):
        logging.info("flushing")

    def stop(self):
        self.flush()
""",
        lines=[10],
        fixed="""
import logging

import torch
import atexit

class Recorder:
    def start(self):
        from atexit import register
        self.frames: list[torch.Tensor] = []
        register(self.flush)

    def flush(self):
        logging.info("flushing")

    def stop(self):
        self.flush()
        atexit.unregister(self.flush)
""",
    ),
    # a fork hook has no unregister: reported whatever the release method does
    Example(
        """
import os

class BatchProcessor:
    def __init__(self, exporter):
        self.exporter = exporter
        os.register_at_fork(after_in_child=self._reinit)

    def _reinit(self):
        pass

    def shutdown(self):
        self.exporter.shutdown()
""",
        lines=[7],
    ),
    # signal handlers and module-level lists: reported, no fix
    Example(
        """
import signal

_instances = []

class Runner:
    def __init__(self):
        signal.signal(signal.SIGTERM, self.on_term)
        _instances.append(self)

    def on_term(self, signum, frame):
        pass

    def shutdown(self):
        pass

def running():
    return len(_instances)
""",
        lines=[8, 9],
    ),
]
