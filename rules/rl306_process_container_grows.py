"""RL306 process-container-grows."""

from __future__ import annotations

from typing import Iterator

from retainlint.analysis.rule import Example
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.analysis.retention_rule import RetentionRule
from retainlint.project.consequence import (
    entry_kept, how_dropped, keyed_by_each_request, literal, only_when, released_anywhere, short)
from retainlint.project.retention_facts import ModuleFacts, Site
from retainlint.rules.prefilters.rl306 import ProcessContainerGrowsPrefilter, process_growth


class ProcessContainerGrows(RetentionRule):
    prefilter = ProcessContainerGrowsPrefilter
    name = "process-container-grows"
    summary = "A module- or class-level container gains an entry per call or per instance, and nothing removes one"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE
    # an `id()`-keyed store whose value holds the keyed object: RL305 names what is kept
    defers_to = ("RL305",)

    docs = """
## What it does
Reports a container that lives for the process - bound at module level (`_pending = {}`),
in a class body (`_instances = []`), or given as a parameter's default value (`def
feed(token, seen=set())`: the default is made once, when the `def` runs, and every call
that is not handed its own shares it) - that a function adds to on every call, or
`__init__` on every instance, when nothing in the project ever takes an entry out of it:
no `pop`, `del`, `remove`, `discard`, `clear`, no rebinding, no size check (`len(h) > n`),
and it is never handed to other code that could (passed as an argument, returned,
aliased).

What counts as growth per call: one more item (`append`, `extend`, `+=`, also into the
list under a key: `d.setdefault(k, []).append(v)`, `d[k].append(v)` on a `defaultdict`) in
a function that does not first look the value up; a set's `add` of a value named as made per request
(a set holds each value once: `_dead.add(rank)` keeps as many as there are ranks); a slot per key (`h[k] = v`, `setdefault`) when
the key names something made per request or per object (`request_id`, `id(obj)`,
`conn`, `self` or an instance's own `self._id`, a uuid, a counter; a key local bound to a
tuple or to another object's field is judged by what it is bound to), or is a tuple with
such a part (`(fmt, hash_id)`)
and none naming the code, a parameter of the model or the deployment (`(device, stream_id)` is a fixed set; a count,
a size or a flag, `max_blocks_per_seq`, `use_small_batch`, names no request either; a bare
`id` is what the table's name says it is of: `function_refs[id]` one per function); in
`__init__`, one more item in a list (also
`self.buffers.append(b)` on a list the class or one of its bases declares in its body: one
list for all instances) or an entry that keeps the instance (`Cls._instances.append(self)`). Not reported: memos over plain keys (names, sizes,
dtypes: a small domain), registration at import (a decorator returning what it
registers), `__init_subclass__` and other once-per-class hooks, adds under
`if torch.cuda.is_current_stream_capturing():` or `torch.compiler.is_compiling()` (start-up
only), `deque(maxlen=n)`, weak containers. A table keyed by `id(obj)` whose value holds
`obj` is reported by RL305 (id-keyed-registry) instead, on the same line.

A removal that only the successful path of an `async` function or a context manager's
generator reaches (after an `await`, or the `yield` every path reaches, outside `finally`
and `except`), or only a shutdown function (`close()`, `stop()`, `shutdown()`), does not
count: entries of calls that fail or are cancelled stay,
and the container grows until the end. One entry taken out in an instance's own
`__exit__` or `close()` does count: it goes as each instance ends.

An error when the entries are every instance made (`Cls._instances.append(self)`) or are
keyed by the identity of the request or response the call handles (`request.request_id`,
`response.id`: a new key per request served) and nothing removes one; a warning otherwise
(a bare key the caller hands in, `sender_id`, may name one of a few senders). `info` when
the add runs only under a diagnostic switch (`if TRACK_STEP_TIMES:`, a decorator's
`record=False`, a local made from one): it costs only those who turn it on to debug or
measure; when the add is in an `except` block that then raises again (a start-up that
fails keeps its buffers for native code that may still use them): one entry per failed
call, not one per call; and when each instance made adds a constant
(`cls.names.append("token_type_ids")` in `__init__`): one slot each, and no object kept.

## Why it leaks
The container lives as long as the process, so everything it holds does too: one
request's job, one connection, one instance and all it references, per call, forever.

## Example
```python
_pending = {}

def submit(request_id, job):
    _pending[request_id] = job  # RL306: nothing ever removes a finished job
```

## How to fix
Remove the entry when its work is done (`_pending.pop(request_id, None)` in a `finally`),
bound the container (`deque(maxlen=...)`, an LRU), or hold entries weakly
(`weakref.WeakValueDictionary`).
"""

    valid = [
        """
_pending = {}

def submit(request_id, job):
    _pending[request_id] = job

def finish(request_id):
    _pending.pop(request_id, None)
""",
        """
_patterns = {}

def compiled(pattern):
    if pattern not in _patterns:
        _patterns[pattern] = len(pattern)
    return _patterns[pattern]
""",
        """
_registry = {}

def register(cls):
    _registry[cls.__name__] = cls
    return cls
""",
    ]
    invalid = [
        Example(
            """
_pending = {}
_seen = []

def submit(request_id, job):
    _pending[request_id] = job
    _seen.append(job)

class Session:
    _all = []

    def __init__(self):
        Session._all.append(self)
""",
            lines=[6, 7, 13],
        ),
    ]

    def findings(self, facts: ModuleFacts) -> Iterator[tuple[Site, str, Severity, Consequence]]:
        for g in facts.growth:
            why = process_growth(g)
            if why is None or released_anywhere(self.ctx.index, g.holder):
                continue
            where = {"module": "module-level", "class": "class-level",
                     "default": f"a default value of `{g.function}()`"}[g.kind]
            function = g.function.rpartition(".")[2]
            # Every instance, or an entry per request served, kept for the process: a
            # maintainer would merge the fix.
            how = how_dropped(self.ctx.index, g.holder)
            per_request = keyed_by_each_request(g) and how is None
            switched = only_when(g)
            # a constant added per instance made (`cls.names.append("token_type_ids")` in
            # `__init__`) keeps one slot each and no object: negligible
            constant = g.in_init and not g.keyed and literal(g.value)
            severity = Severity.INFO if switched or constant else \
                Severity.ERROR if g.in_init and g.pins_self or per_request else Severity.WARNING
            kept = (f"every `{g.function.partition('.')[0]}` made" if g.in_init and g.pins_self
                    else entry_kept(g, function))
            removal = {"success": "it is removed from only past an `await`, a context manager's `yield` "
                                  "or an `except` that returns or raises (outside `finally`), so a call that "
                                  "fails or is cancelled there leaves its entry",
                       "teardown": "it is emptied only at shutdown",
                       None: "nothing in the project removes one"}[how]
            yield (g.site,
                   f"`{g.shown}` ({where}: lives for the process) gains {why} in `{function}()`{switched}; "
                   f"{removal}, so every entry stays alive "
                   f"(`{short(g.holder)}`)", severity,
                   Consequence(kept, f"the default `{g.shown}` of `{g.function}()`" if g.kind == "default"
                               else f"`{short(g.holder)}` ({where})", "the process", why + switched))
