"""RL703 self-reference-cycle."""

from __future__ import annotations

from typing import Iterator, Optional

from retainlint.analysis.rule import Example
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.analysis.retention_rule import RetentionRule
from retainlint.project.consequence import collector_off_anywhere, cycle_matters, made_per_call
from retainlint.analysis.severity import Facts, level
from retainlint.project.frames import FrameCycle
from retainlint.project.retention_facts import ModuleFacts, Site
from retainlint.rules.prefilters.rl703 import SelfReferenceCyclePrefilter


class SelfReferenceCycle(RetentionRule):
    prefilter = SelfReferenceCyclePrefilter
    name = "self-reference-cycle"
    summary = "An object made per call keeps a reference to itself, so it is freed only by the cyclic collector"
    severity = Severity.INFO
    fix_applicability = Applicability.NONE
    # a cache or callback over `self` kept on the instance: RL701 says what the cycle keeps
    defers_to = ("RL701",)

    docs = """
## What it does
Reports an object that stores, on itself or on something it owns, a reference back to
itself - a bound method (`self._on_done = self.done`), a lambda or nested function using
`self`, a `functools.partial` of `self` or of a bound method, itself
(`self.tracker.owner = self`), or an object made with any of these that keeps what it is
handed: a class of the module whose `__init__` stores the argument (`self.reader =
Reader(self)`), or a class from elsewhere handed a callback (`self._cache =
Cache(on_remove=self._evict)`, `CFUNCTYPE(...)(self.next)`; the instance itself handed to
such a class is not counted: owners and senders are often kept weakly); a child it holds
handed a reference back (`col.parent = self` for a `col` read from one of its containers,
looped over, or stored on it in the same method); a child made with the instance and
stored through a local (`col = Column(self); self.columns[name] = col`) or added to one
of its containers (`self.children.append(Child(self))`) - when such objects are made per
call: a file of the project (not its tests, which make objects per case) creates them in
a loop or in a function whose name says it runs per request (`handle_*`, `on_*`,
`__call__`), or the class is a request, response, connection, protocol, stream, session,
job, task or the like. A loop
over a model's layers (`for name, child in model.named_children()`, `model.modules()`)
makes one per layer when the model is set up, not one per call. The
finding points at the argument that closes the cycle.

A warning when the object keeps an OS resource or bulk data (an attribute named for a
transport, socket, connection, stream, file, process, channel, buffer, tensor, array or
frame; not a flag or a count about one, `enable_buffer`, `num_streams`): each one made per
call keeps it open or allocated until the collector runs. An
`info` finding (hidden by default) for a light object, whose cycle costs the collector a
little work. A warning also when the project disables the collector (`gc.disable()`): then such objects
are freed late, or never (`gc.freeze()` does not count: it exempts only what exists when
it runs, not the objects made per call afterwards; nor does a pause, a function that turns the
collector back on with `gc.enable()`).

Not reported: weak references (`weakref.ref(self)`, `WeakMethod`, `weakref.proxy`); a
thread or process made with a bound method (it drops its target when it has run); a cycle
another method breaks when the object is done (`self.parser = None` or `del self.parser` in
`connection_lost()` or `close()`; for an entry of itself, `del self.peers[self.name]` or
`self.peers.pop(...)` under any key); classes with no sign of being made per call (a cycle in
a singleton costs nothing).
RL701 covers heavy classes (models, tensors) whatever their lifetime; where it reports a
line (a cache around the instance's own method, a callback kept on it), this rule leaves
that line to it.

It also reports a function's frame that keeps its own traceback, the cycle the interpreter
avoids by deleting `except ... as e` at the end of the handler:
- `exc, tb = sys.exc_info()[1:]`, `exc_info = sys.exc_info()` (any part but the type), or
  `exc = sys.exception()` in a local, inside a handler or a `finally` of the function (a
  helper the handler calls is not in the traceback: its frame is above the one that
  caught it);
- `tb = e.__traceback__` (or `.tb_next`) for an `e` the function catches;
- caught exceptions collected in a local (`errors[name] = exc`, `oserrors.append(exc)`),
  also a local of an enclosing function;
- an exception raised from a local while another is handled or chained to it
  (`err = NotFound(...); raise err from e`), or read back from where it was kept
  (`error = self.error; raise error`: its traceback grows by this frame each time);
- `sys.exc_info()` put on the object (`self.history.append(sys.exc_info())`).

The traceback keeps every frame it passed through, with their locals (requests, buffers,
tensors), until the collector runs: info, since the collector frees it, unless the project
disables the collector or the traceback is kept on an object (a warning then; `info` again
when `__init__` keeps it on an object made per call, a message or a request: the object keeps
the traceback no longer than it lives itself). A fresh exception raised from a
local (`err = ValueError(...); raise err`) or a single copy of the caught one (`last = e`)
cycles through this frame alone: the collector's ordinary work, not reported. Not reported when the function lets
go first: `del tb`, `tb = None`, `traceback.clear_frames(tb)`, `errors.clear()`, or `raise`
of the new exception directly (`raise NotFound(...) from e`). For a local bound to the
traceback (`sys.exc_info()`, `e.__traceback__`) the `del` or `= None` must run on every
path: in a `finally`, or before any call after the binding (in `self.gen.throw(*exc_info);
exc_info = None` the reset is skipped when `throw()` raises, and the cycle stays). A
traceback handed in as an argument (`tb = tb.tb_next` while walking it) does not lead back
to the frame.

## Why it leaks
Reference counting frees an object the moment its last reference goes - unless it
references itself. Then it waits for the cyclic collector, which runs only after enough
allocations, and is often tuned down or frozen in servers: objects made per request pile
up with everything they reference (buffers, sockets, request bodies) in between.

## Example
```python
class Connection:
    def __init__(self, sock):
        self.sock = sock
        self._on_data = self.handle  # RL703: each connection is freed only by the collector

    def handle(self, data):
        ...
```

## How to fix
Look the method up when it is needed instead of storing it, store a
`weakref.WeakMethod(self.handle)`, or break the cycle when the object is closed
(`self._on_data = None`).
For a frame: raise the new exception directly, or `del` the local in a `finally`
(`try: raise err finally: del err`); keep `sys.exc_info()[0]` or the exception's text
rather than the exception and its traceback.
"""

    valid = [
        """
import weakref

class Connection:
    def __init__(self, sock):
        self._on_data = weakref.WeakMethod(self.handle)

    def handle(self, data):
        pass
""",
        """
class Settings:
    def __init__(self):
        self._reload = self.reload

    def reload(self):
        pass
""",
    ]
    invalid = [
        Example(
            """
import functools

class Connection:
    def __init__(self, sock):
        self._on_data = self.handle
        self._close = lambda: self.handle(None)
        self._later = functools.partial(self.handle, b"")

    def handle(self, data):
        pass
""",
            lines=[6, 7, 8],
        ),
        Example(
            """
class Reader:
    def __init__(self, owner):
        self.owner = owner

class Pipeline:
    def __init__(self):
        self.reader = Reader(self)

def handle_request():
    return Pipeline()
""",
            lines=[8],
        ),
        Example(
            """
class Column:
    def __init__(self, name):
        self.parent = None

class Table:
    def __init__(self, names):
        self.columns = {}
        for name in names:
            column = Column(name)
            column.parent = self
            self.columns[name] = column

def handle_request(names):
    return Table(names)
""",
            lines=[11],
        ),
    ]

    def findings(self, facts: ModuleFacts) -> Iterator[tuple[Site, str, Severity, Consequence]]:
        # A cycle of a light object costs little while the collector runs: info, unless
        # the project disables the collector (then it is freed late, or never).
        off = collector_off_anywhere(self.ctx.index)
        later = "the next cyclic collection" + (" (the project disables the collector)" if off else "")
        for ref in facts.self_references:
            if not cycle_matters(ref, facts, self.ctx.index) or self.ctx.index.is_heavy_class(ref.cls):
                continue  # a heavy class's cycle is RL701's
            name = ref.cls.rpartition(".")[2]
            what = {"bound method": f"a bound method of itself (`{ref.shown}`)",
                    "closure": f"a function over `self` (`{ref.shown}`)",
                    "partial": f"a partial over itself (`{ref.shown}`)",
                    "back-reference": f"a child that keeps it (`{ref.shown}`)",
                    "held child": "a child it holds keep it"}[ref.how]
            kept = f" with `{ref.keeps}`" if ref.keeps else ""
            # Made per call, so meant to go; what it keeps open or allocated (a socket, a
            # stream, bulk data) waits for the collector with it.
            found = level(Facts(heavy=bool(ref.keeps), meant_to_go=True, collected=not off))
            stored = f"`{ref.attr} = {ref.shown}` makes" if ref.how == "held child" else f"`{ref.attr}` keeps"
            yield (ref.site,
                   f"{stored} {what}: each `{name}`, made per call, is freed{kept} only "
                   f"when the cyclic collector runs, not when its last use ends",
                   found,  # type: ignore[arg-type]
                   Consequence(f"each `{name}`{kept} and what it references", "its own reference cycle",
                               later, "one per call"))
        for frame in facts.frames:
            owner, _, method = frame.function.rpartition(".")
            # kept by `__init__` on an object made per call (a message, a request): it goes
            # with it (a method run again and again on one object would add one per call)
            short_lived = frame.how == "stored" and method == "__init__" and made_per_call(
                f"{self.ctx.index.module_of(self.ctx.path)}.{owner}", facts, self.ctx.index)
            yield self._frame(frame, off, later, owner if short_lived else None)

    @staticmethod
    def _frame(frame: FrameCycle, off: bool, later: str,
               per_call_owner: Optional[str]) -> tuple[Site, str, Severity, Consequence]:
        """A frame that keeps its own traceback, and with it every frame below (see
        `project/frames.py`); `per_call_owner`: the class, made per call, whose `__init__`
        keeps it."""
        function = frame.function.rpartition(".")[2]
        what = {"exc_info": f"`{frame.name}` keeps `sys.exc_info()`'s exception or traceback",
                "exception": f"`{frame.name}` keeps the exception `sys.exception()` returned",
                "traceback": f"`{frame.name}` keeps a traceback",
                "collected": f"`{frame.name}` collects caught exceptions",
                "raised": f"`{frame.name}` is raised from a local",
                "stored": f"`{frame.name}` keeps `sys.exc_info()`'s exception or traceback"}[frame.how]
        if frame.how == "stored":
            made = f" (a `{per_call_owner}`, made per call)" if per_call_owner else ""
            message = (f"{what}: each traceback keeps every frame it passed through, with all their "
                       f"locals, for as long as the object{made} keeps it; store the exception's text or "
                       f"a copy without `__traceback__`")
            holder, lifetime = f"`{frame.name}`", "as long as its object"
        else:
            message = (f"{what} in `{function}()`: the traceback leads back to this frame, so the "
                       f"frame{' and every frame below it' if frame.carries else ''}, with all their "
                       f"locals, is freed only when the cyclic collector runs; `del {frame.name}` "
                       f"in a `finally` breaks the cycle")
            holder, lifetime = f"`{function}()`'s frame, through its own traceback", later
        # The frame was meant to go on return; its weight is not known here. The collector
        # frees the cycle (`analysis/severity.py`: info) unless it is off, or the traceback
        # is kept on an object, which keeps it as long as it lives: a warning then. (Read on
        # the development trees, frames of functions run per request - benchmark clients,
        # Flask's handle_exception - kept nothing heavy: being per request is no weight.)
        # An object made per call that keeps it is short-lived: the traceback goes with it
        # (the frame's `self` makes it a cycle the collector frees).
        collected = not off and (frame.how != "stored" or per_call_owner is not None)
        severity = level(Facts(meant_to_go=True, collected=collected))
        return (frame.site, message, severity,  # type: ignore[return-value]
                Consequence(f"the locals of `{function}()`" + (" and of the frames below it" if frame.carries else ""),
                            holder, lifetime, "one per call that raises or catches"))
