"""RL307 instance-container-grows."""

from __future__ import annotations

from typing import Iterator

from retainlint.analysis.rule import Example
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.analysis.retention_rule import RetentionRule
from retainlint.project.consequence import (
    entry_kept, how_dropped, instance_outlives_its_adds, keyed_by_each_request, only_when, released_anywhere)
from retainlint.project.retention_facts import ModuleFacts, Site
from retainlint.rules.prefilters.rl307 import InstanceContainerGrowsPrefilter, instance_growth


class InstanceContainerGrows(RetentionRule):
    prefilter = InstanceContainerGrowsPrefilter
    name = "instance-container-grows"
    summary = "A long-lived object's container gains an entry per call, and nothing removes one"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports a container an object makes in `__init__` (`self._jobs = {}`, also in a base
class's `__init__`, and reached through a read-only property returning it: `@property def
jobs(self): return self._jobs`) that a method adds to on every call (`append`, `+=`, a slot per key, or one more item in the list under a key:
`self._by_kind[kind].append(job)` on a `defaultdict`), when the object lives for the process - somewhere in the project one is made at module
level, in a class body, as a singleton or in an entry point (`main()`, `serve()`) -
and nothing in the project ever takes an entry out of it (no `pop`, `del`, `remove`,
`clear`, no rebinding outside `__init__`, no size check, never handed to other code).

The object also outlives the requests it keeps when its class serves them: a method is
a handler (`handle_*`, `*_handler`, `on_*` named for a request, message or connection,
also a function nested in a method, or a method decorated as a route), a method runs a
serve loop (`while True:`, `while not self.stopped:`), the class has both `start()` and
`stop()`/`shutdown()`, or its `__init__` makes and keeps a worker pool (`self._pool =
ThreadPoolExecutor()`: it exists to run many submissions).

An object also outlives what it hands out: a method that makes an object, keeps it and
returns it (`c = Cursor(self); self.cursors.append(c); return c`, or returns the slot it
stored it in: `self._conns[k] = Conn(k); return self._conns[k]`) keeps every one after its
user is done with it (a memo handing the same object out again does not count, nor an
owner the code makes per call). A removal through the object itself
(`self.owner.cursors.remove(self)` in the cursor's `close()`) takes each out as it ends.

A reply table is reported even though another method removes its entries: a method makes
a future, queue or event, keeps it under the request's key and waits for it
(`self._pending[req_id] = fut; return await asyncio.wait_for(fut, 5)`), and only the code
delivering the reply pops it (a blocking `fut.result()` with no timeout returns with the
reply or never, and abandons nothing). A reply that never comes - a timeout, a cancellation, a lost
connection - leaves the entry; the waiting method should remove it in a `finally`. Such an
owner carries many requests at once, so it outlives them.

An object also outlives the keys it handles when the call adding under a key fills other
tables of it under the same key and the project removes those entries (`self._tokens[uid]
= []; self._flow_cache[uid] = t`, then `self._tokens.pop(uid)`): the table left out of the
removals keeps one entry per key.

Removals count by path. A removal in an `async` method after an `await`, or in a
context manager's generator after the `yield` every path reaches, outside `finally` and
`except`, runs only when the call gets that far: a call that fails or is cancelled there,
or a `with` block that raises (a client gone, the server stopping) leaves its entry -
reported, as is
an entry a method adds and itself removes that way. A removal only in `close()`,
`stop()`, `shutdown()`, `__exit__` or the like empties the container once, at the end:
while the object serves, it grows. (One entry taken out of a table every instance shares,
module- or class-level, in an instance's `__exit__` or `close()` goes as that instance
ends: a removal per instance.)

An error when the entries are keyed by the identity of the request or response the call
handles (`self.store[response.id] = response`: a new key per request served) and nothing
removes one; a warning otherwise (a bare key the caller hands in may name one of a few
senders, actors or functions); `info` when the add runs only under a diagnostic switch
(`if self.debug:`, `if RECORD_STEP_TIME:`), or in an `except` block that then raises
again (one entry per failed call, not one per call).

Growth per call is judged as for RL306: one more item per call, or a slot per key that
names something made per request (`request_id`, `id(obj)`, `conn`, a uuid), also in a
method named for set-up (`_create_span(run_id)`) when a handler calls it or it is handed
such a key. Not reported: setup methods (`setup`, `build`, `configure`, `load`...), memos
over plain keys, slots per member of the deployment (`remote_engine_id`, `rank`, `host`:
as many as it has, however many requests), bounded or weak containers, and objects with no sign of living long (a
class named like a server is not enough: it may be made per test or per file).

## Why it leaks
The object outlives every request it serves, and so does each entry it keeps for one:
the server's table of finished jobs grows with every request until the process ends.

## Example
```python
class JobServer:
    def __init__(self):
        self._jobs = {}

    def submit(self, job_id, job):
        self._jobs[job_id] = job  # RL307: finished jobs are never removed

def main():
    serve(JobServer())
```

## How to fix
Remove the entry when its work is done, in a `finally` (`self._jobs.pop(job_id, None)`),
or from a done-callback (`task.add_done_callback(self._tasks.discard)`), or bound the
container.
"""

    valid = [
        """
class JobServer:
    def __init__(self):
        self._jobs = {}

    def submit(self, job_id, job):
        self._jobs[job_id] = job

    def done(self, job_id):
        del self._jobs[job_id]
""",
        """
class Point:
    def __init__(self):
        self._seen = []

    def visit(self, item):
        self._seen.append(item)
""",
    ]
    invalid = [
        Example(
            """
class JobServer:
    def __init__(self):
        self._jobs = {}
        self._log = []

    def submit(self, job_id, job):
        self._jobs[job_id] = job
        self._log.append(job)

SERVER = JobServer()
""",
            lines=[8, 9],
        ),
    ]

    def findings(self, facts: ModuleFacts) -> Iterator[tuple[Site, str, Severity, Consequence]]:
        index = self.ctx.index
        for g in facts.growth:
            why = instance_growth(g)
            # a reply table: its removal elsewhere runs only for the replies that come
            if why is None or released_anywhere(index, g.holder) and not g.awaits_reply:
                continue
            outlives = instance_outlives_its_adds(index, facts, g)
            if outlives is None:
                continue
            owner, _, method = g.function.partition(".")
            lifetime = {"process": f"a `{owner}` lives for the process",
                        "serves": f"a `{owner}` serves many requests (its methods are handlers, a serve "
                                  "loop, or start and stop, or it keeps a worker pool)",
                        "outlives": f"a `{owner}` outlives the calls that add to it",
                        "widget": f"a `{owner}` is a GUI widget, which lives as long as the window showing it",
                        "hands out": f"a `{owner}` keeps every object it hands out (`{g.value}`), after "
                                     "its user is done with it",
                        "replies": f"a `{owner}` carries many requests, matching each reply to the one "
                                   "waiting for it",
                        "siblings": f"a `{owner}` outlives the keys it handles (the entries `{method}()` adds "
                                    f"under `{g.key}` to its other tables are removed)"}[outlives]
            how = "reply" if g.awaits_reply else how_dropped(index, g.holder)
            removal = {"reply": f"`{method}()` waits for `{g.value}` and leaves its entry to the code that delivers "
                                "it, so a reply that never comes (a timeout, a cancellation, a lost connection) "
                                "leaves the entry",
                       "success": "its entries are removed only past an `await`, a context manager's `yield` "
                                  "or an `except` that returns or raises (outside `finally`), so a call that "
                                  "fails or is cancelled there leaves its entry",
                       "teardown": f"it is emptied only when the `{owner}` is closed or stopped",
                       None: "nothing in the project removes an entry"}[how]
            kept = entry_kept(g, method)
            # An entry per request served that nothing removes: a maintainer would merge the fix.
            per_request = keyed_by_each_request(g) and how is None
            switched = only_when(g)
            yield (g.site,
                   f"`{g.shown}` gains {why} in `{method}()`{switched}, and {lifetime}; {removal}, so "
                   f"every one stays alive",
                   Severity.INFO if switched else Severity.ERROR if per_request else Severity.WARNING,
                   Consequence(kept, f"`{g.shown}` of a `{owner}`",
                               f"as long as the `{owner}` ({lifetime})", why + switched))
