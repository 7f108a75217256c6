"""RL703 self-reference-cycle."""

from __future__ import annotations

from typing import Iterator

from retainlint.analysis.rule import Example
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.analysis.retention_rule import RetentionRule
from retainlint.project.consequence import collector_off_anywhere, cycle_matters
from retainlint.project.retention import ModuleFacts, Site
from retainlint.rules.prefilters.rl703 import SelfReferenceCyclePrefilter


class SelfReferenceCycle(RetentionRule):
    prefilter = SelfReferenceCyclePrefilter
    name = "self-reference-cycle"
    summary = "An object made per call keeps a reference to itself, so it is freed only by the cyclic collector"
    severity = Severity.INFO
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports an object that stores, on itself or on something it owns, a reference back to
itself - a bound method (`self._on_done = self.done`), a lambda or nested function using
`self`, a `functools.partial` of `self` or of a bound method, or a child object whose
`__init__` keeps the argument it is given (`self.reader = Reader(self)`) - when such
objects are made per call: the module creates them inside functions, or the class is a
request, response, connection, protocol, stream, session, job, task or the like.

An `info` finding (hidden by default): a cycle of a light object costs little while the
collector runs. A warning when the project disables the collector (`gc.disable()`): then such objects
are freed late, or never (`gc.freeze()` does not count: it exempts only what exists when
it runs, not the objects made per call afterwards).

Not reported: weak references (`weakref.ref(self)`, `WeakMethod`, `weakref.proxy`), and
classes with no sign of being made per call (a cycle in a singleton costs nothing).
RL701 covers heavy classes (models, tensors) whatever their lifetime.

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
    ]

    def findings(self, facts: ModuleFacts) -> Iterator[tuple[Site, str, Severity, Consequence]]:
        # A cycle of a light object costs little while the collector runs: info, unless
        # the project disables the collector (then it is freed late, or never).
        off = collector_off_anywhere(self.ctx.index)
        severity = Severity.WARNING if off else Severity.INFO
        for ref in facts.self_references:
            if not cycle_matters(ref, facts) or self.ctx.index.is_heavy_class(ref.cls):
                continue  # a heavy class's cycle is RL701's
            name = ref.cls.rpartition(".")[2]
            what = {"bound method": f"a bound method of itself (`{ref.shown}`)",
                    "closure": f"a function over `self` (`{ref.shown}`)",
                    "partial": f"a partial over itself (`{ref.shown}`)",
                    "back-reference": f"a child that keeps it (`{ref.shown}`)"}[ref.how]
            yield (ref.site,
                   f"`{ref.attr}` keeps {what}: each `{name}`, made per call, is freed only "
                   f"when the cyclic collector runs, not when its last use ends", severity,
                   Consequence(f"each `{name}` and what it references", "its own reference cycle",
                               "the next cyclic collection" + (" (the project disables the collector)" if off else ""),
                               "one per call"))
