"""RL702 stored-exception-frames."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import FinallyWrites, OwnScopeVisitor, body_functions
from retainlint.core.finding import Applicability, Severity
from retainlint.analysis.heavy import find_param
from retainlint.rules.prefilters.rl702 import StoredExceptionFramesPrefilter, ADDERS
from retainlint.analysis.release import named_release
from retainlint.analysis.severity import Facts, level
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.holding import (
    Scopes,
    ctx_code,
    has_heavy_attribute,
    reaches,
)
from retainlint.analysis.walk import visit

_DROP_WORDS = ("clear", "detach", "strip", "drop", "remove", "del")
_IMPORT_ERRORS = frozenset(
    {"ImportError", "ModuleNotFoundError", "builtins.ImportError", "builtins.ModuleNotFoundError"}
)


@dataclass
class _Store:
    node: cst.CSTNode  # what is reported
    value: cst.BaseExpression
    holder: str  # how the message names the holder
    kind: str  # "self" | "global" | "class" | "param" | "return"
    attr: Optional[str]  # `x` of `self.x...`, for the hand-off check
    statement: Optional[cst.CSTNode]
    exc: str  # the exception's name (or its alias) in the stored value
    slot: Optional[tuple] = None  # what a consumer reads it back through (`_slot`)


@dataclass
class _Handler:
    name: str
    node: cst.ExceptHandler
    function: cst.FunctionDef
    cls: Optional[cst.ClassDef]  # the class of the method whose `self` is in reach
    self_owner: Optional[cst.FunctionDef]  # that method (the function itself, or an enclosing one)
    stores: list = field(default_factory=list)
    aliases: set = field(default_factory=set)  # locals holding the exception
    containers: set = field(default_factory=set)  # of those, local containers
    dropped: bool = False
    reraised: bool = False  # an alias is raised after the handler
    assigned: dict = field(default_factory=dict)  # alias -> its assignment in the handler


class StoredExceptionFrames(Rule):
    prefilter = StoredExceptionFramesPrefilter
    name = "stored-exception-frames"
    summary = "An exception stored beyond its handler keeps every frame of its traceback alive"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
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
  replaces it (Python unbinds `e` at the end of the handler, not the local);
- `sys.exc_info()` in a local of the handler's function (`exc_info = sys.exc_info()`,
  `etype, value, tb = sys.exc_info()`, `exc = sys.exc_info()[1]`, `exc = sys.exception()`)
  that no `finally` deletes or sets to None: the traceback references the function's own
  frame, whose local references the traceback - a cycle that keeps every frame of the
  traceback and their locals until the cycle collector runs (a reset after a call that
  may raise, as in `self.gen.throw(*exc_info); exc_info = None`, is not enough). Only the
  type (`sys.exc_info()[0]`), or the call made in a helper whose frame is not in the
  traceback, is fine.

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
that re-raises it. A
local that keeps `sys.exc_info()` makes a cycle the collector frees: info.

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
out of the frames it keeps. Delete a local holding `sys.exc_info()` in a `finally`
(`try: ... finally: del exc_info`), and a serving loop's local once it is handed on.
"""

    valid = [
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
        # sys.exc_info() cleared in a finally; a retry loop that leaves on success
        """
import sys

class Runner:
    def step(self, future):
        try:
            return future.result()
        except Exception:
            exc_info = sys.exc_info()
            try:
                self.gen.throw(*exc_info)
            finally:
                del exc_info

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
    invalid = [
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
        # sys.exc_info() in a local: a cycle through this frame; a serving loop's local
        Example(
            """
import sys

def render(template, context):
    try:
        return template.render(context)
    except Exception:
        etype, value, tb = sys.exc_info()
        raise RuntimeError(str(value))

def worker(inbox, outbox):
    while True:
        job = inbox.get()
        try:
            outbox.put(job())
        except Exception as e:
            failure = e
            outbox.put(repr(failure))
""",
            lines=[8, 17],
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

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._scopes = Scopes(ctx)
        self._reported: set[int] = set()
        self._returned: list[tuple[_Handler, _Store]] = []  # judged once callers are known
        self._consumed: Optional[_Consumers] = None  # built on the first store judged

    # -- collection ----------------------------------------------------------------
    def visit_Try(self, node: cst.Try) -> None:
        self._try(node)

    def visit_TryStar(self, node) -> None:
        self._try(node)

    def _try(self, node) -> None:
        scope = self.ctx.scope
        fn = scope.function
        if fn is None:
            return  # module level: import-time frames only
        if _only_imports(node.body):
            return
        cls, owner = self._self_owner()
        for handler in node.handlers:
            self._exc_info_locals(handler, fn, cls, owner)
            if handler.name is None or not isinstance(handler.name.name, cst.Name):
                continue
            if self._import_error_only(handler):
                continue
            h = _Handler(handler.name.name.value, handler, fn, cls, owner)
            finder = _StoreFinder(self, h, {h.name})
            visit(handler.body, finder)
            if h.aliases and not h.dropped:
                # the alias lives on in the function: stores of it anywhere count
                rest = _StoreFinder(self, h, set(h.aliases), skip=handler)
                visit(fn.body, rest)
            if h.dropped:
                continue
            if not h.stores and h.assigned:
                self._serving_loop_locals(node, h)
            if h.stores:
                self._judge(h)

    def _exc_info_locals(self, handler: cst.ExceptHandler, fn: cst.FunctionDef,
                         cls: Optional[cst.ClassDef], owner: Optional[cst.FunctionDef]) -> None:
        """`exc_info = sys.exc_info()`, `etype, value, tb = sys.exc_info()`, `exc =
        sys.exception()` in a handler: the traceback references this function's frame, and
        the local references the traceback - a cycle, unless a `finally` clears it."""
        found = _ExcInfoBindings(self.ctx)
        visit(handler.body, found)
        if not found.bound:
            return
        b = self._scopes.bindings(fn)
        writes = FinallyWrites(own_scope=True)
        visit(fn.body, writes)
        cleared = {n for target, value in writes.writes
                   if value is None or (isinstance(value, cst.Name) and value.value == "None")
                   for n in _target_names(target)}
        for statement, assign, names, call in found.bound:
            kept = [n for n in names if n not in cleared and n not in b.globals
                    and n not in b.nonlocals]
            if not kept:
                continue
            named = handler.name.name.value if handler.name is not None and isinstance(
                handler.name.name, cst.Name) else "the exception"
            h = _Handler(named, handler, fn, cls, owner)
            listed = ", ".join(f"`{n}`" for n in kept)
            self.report(
                assign,
                f"{listed} {'keeps' if len(kept) == 1 else 'keep'} what `{call}` returned in a local of "
                f"`{fn.name.value}()`, whose frame its traceback references: a reference "
                f"cycle that keeps every frame of the traceback and their locals alive until "
                f"the cycle collector runs (unlike `except ... as e`, nothing unbinds it at "
                f"the end of the handler); `del` it in a `finally`, or keep only the text",
                # the frame and its traceback form a cycle the collector frees
                severity=level(Facts(heavy=self._heavy_frames(h), meant_to_go=True, collected=True)),
                statement=statement,
            )

    def _serving_loop_locals(self, node, h: _Handler) -> None:
        """A local assigned the exception in a handler of a `try` that a `while True:` loop
        runs again after success: it keeps the last failure's frames until the next
        failure replaces it (Python unbinds only the `as` name)."""
        loop = self._serving_loop(node)
        if loop is None or _leaves_loop(h.node.body):
            return  # a handler that re-raises, returns or breaks: the loop serves no more
        for name, (assign, line) in h.assigned.items():
            rebound = _Rebinds(name, assign)
            visit(loop.body, rebound)
            if rebound.found:
                continue
            self.report(
                assign,
                f"`{name}` keeps exception `{h.name}` in a local of `{h.function.name.value}()`, "
                f"whose `while True:` loop keeps serving: until the next failure replaces it, "
                f"every frame of its traceback and their locals stay alive (Python unbinds "
                f"`{h.name}` at the end of the handler, not `{name}`); `del {name}` once it "
                f"is handed on, or clear `{h.name}.__traceback__` first",
                # one failure at a time, replaced by the next: bounded
                severity=level(Facts(heavy=self._heavy_frames(h), grows=False)),
                related=[RelatedNode(f"`{h.name}` bound here", h.node.name)],
                statement=line,
            )

    def _serving_loop(self, node) -> Optional[cst.While]:
        """The `while True:` loop the `try` is directly in (no inner loop, same function),
        when the `try` neither returns nor breaks out of it on success."""
        for stmt in reversed(self.ctx.scope.statements):
            if stmt is node:
                continue
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef, cst.For)):
                return None
            if isinstance(stmt, cst.While):
                if ctx_code(self.ctx, stmt.test) not in ("True", "1"):
                    return None
                leaves = _Leaves()
                visit(node.body, leaves)
                if node.orelse is not None:
                    visit(node.orelse, leaves)
                return None if leaves.found else stmt
        return None

    def _self_owner(self) -> tuple[Optional[cst.ClassDef], Optional[cst.FunctionDef]]:
        """The innermost enclosing method (this function or one it is nested in) and its
        class: a closure inside a method reaches the method's `self`."""
        scope = self.ctx.scope
        for fn in reversed(scope.functions):
            for cls in reversed(scope.classes):
                if any(f is fn for f in body_functions(cls)):
                    return cls, fn
        return None, None

    def _import_error_only(self, handler: cst.ExceptHandler) -> bool:
        kind = handler.type
        if kind is None:
            return False
        kinds = [e.value for e in kind.elements] if isinstance(kind, cst.Tuple) else [kind]
        return all(self.ctx.qualname(k) in _IMPORT_ERRORS for k in kinds)

    def classify(self, target: cst.BaseExpression, h: _Handler) -> Optional[tuple[str, str, Optional[str]]]:
        """Where a store into `target` (or a container reached through it) lives:
        (kind, holder text, self attribute), or None for a local of this function."""
        if isinstance(target, cst.Attribute) and target.attr.value in ("__cause__", "__context__"):
            return None  # chaining onto an exception being raised
        root = target
        first_attr = None
        first_step = None  # the Attribute/Subscript applied to the root name
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            if isinstance(root.value, cst.Name):
                first_step = root
                if isinstance(root, cst.Attribute):
                    first_attr = root.attr.value
            root = root.value
        if not isinstance(root, cst.Name):
            return None
        text = ctx_code(self.ctx, target)
        name = root.value
        fn = h.function
        if (
            name in ("self", "cls") and h.cls is not None and h.self_owner is not None
            and find_param(h.self_owner, name) is not None
            and (h.self_owner is fn or name not in self._scopes.bindings(fn).bound)
        ):
            if target is root:
                return None
            return ("self", f"`{text}`", first_attr if name == "self" else None)
        if find_param(fn, name) is not None:
            # `state.error = e`: an object the caller owns. Not `result[0] = e` nor
            # `errors.append(e)`: out-parameters the caller reads and drops.
            if target is root or not isinstance(first_step, cst.Attribute):
                return None
            return ("param", f"`{text}` (reached through parameter `{name}`)", None)
        ref = self._scopes_ref(root, fn)
        if ref is None:
            return None
        if ref[0] == "g":
            if name in self.ctx.classes and target is not root:
                return ("class", f"`{text}` (class attribute)", None)
            if target is root or _module_binds(self.ctx.module, name):
                return ("global", f"`{text}` (module global)", None)
        return None

    def _scopes_ref(self, name: cst.Name, fn: cst.FunctionDef) -> Optional[tuple]:
        """Global or local, seen from `fn` (a closure's enclosing locals count as local)."""
        b = self._scopes.bindings(fn)
        if name.value in b.globals:
            return ("g", name.value)
        if name.value in b.nonlocals or name.value in b.bound:
            return ("l", name.value)
        if len(self.ctx.scope.functions) > 1:
            for outer in self.ctx.scope.functions[:-1]:
                ob = self._scopes.bindings(outer)
                if name.value in ob.bound or find_param(outer, name.value) is not None:
                    return ("l", name.value)
        return ("g", name.value)

    # -- judgement -----------------------------------------------------------------
    def _judge(self, h: _Handler) -> None:
        for s in h.stores:
            if s.kind == "self" and s.attr and self._handed_off(h, s.attr):
                continue
            if s.kind == "return":
                # `if error is not None: raise error` before the return: the returned
                # container only ever holds results
                if not h.reraised:
                    self._returned.append((h, s))
                continue
            consumed = False
            if s.slot is not None:
                consumers = self._consumers()
                cls = h.cls if s.kind == "self" else None
                if consumers.takes(s.slot, cls, h.function):
                    continue  # handed off: its reader takes it out
                if consumers.raises(s.slot, cls) or consumers.returns(s.slot, cls) or (
                        s.kind == "self" and self._thread_outcome(h)):
                    # a result kept for a reader that re-raises or returns it (a
                    # hand-written future, a run-once initialiser's terminal failure, a
                    # thread's outcome): by design, unless its frames pin heavy locals
                    # for as long as it is kept
                    if not self._heavy_locals(h):
                        continue
                    consumed = True
            self._report(h, s, consumed=consumed)

    def _thread_outcome(self, h: _Handler) -> bool:
        """Is the handler in `run()` of a `threading.Thread` subclass? A thread runs once:
        what its `run()` records on the thread object is its outcome, read by whoever
        joined it."""
        fn, cls = h.function, h.cls
        return cls is not None and fn is h.self_owner and fn.name.value == "run" and self._is_thread(cls)

    def _is_thread(self, cls: cst.ClassDef, depth: int = 0) -> bool:
        for arg in cls.bases:
            if self.ctx.qualname(arg.value) == "threading.Thread":
                return True
            parent = self.ctx.classes.get(arg.value.value) if isinstance(arg.value, cst.Name) else None
            if parent is not None and parent is not cls and depth < 8 and self._is_thread(parent, depth + 1):
                return True
        return False

    def _consumers(self) -> "_Consumers":
        if self._consumed is None:
            self._consumed = _Consumers(self, self.ctx.module)
        return self._consumed

    def related(self, a: cst.ClassDef, b: cst.ClassDef) -> bool:
        """Are two classes of this file the same, or one a base of the other?"""
        return a is b or self._derives(a, b) or self._derives(b, a)

    def _derives(self, cls: cst.ClassDef, base: cst.ClassDef, depth: int = 0) -> bool:
        if depth > 8:
            return False
        for arg in cls.bases:
            if isinstance(arg.value, cst.Name):
                parent = self.ctx.classes.get(arg.value.value)
                if parent is base or (parent is not None and self._derives(parent, base, depth + 1)):
                    return True
        return False

    def module_global(self, name: str, fn: cst.FunctionDef) -> bool:
        """Is `name`, read in `fn`, a module global (declared, or not bound in `fn` and
        bound at module level)?"""
        b = self._scopes.bindings(fn)
        if name in b.globals:
            return True
        if name in b.bound or name in b.nonlocals or find_param(fn, name) is not None:
            return False
        return _module_binds(self.ctx.module, name)

    def leave_Module(self, node: cst.Module) -> None:
        """A returned container only outlives the call when a caller keeps it: report it
        when a caller in this file stores the result on an object or in a global."""
        if not self._returned:
            return
        kept = _KeptResults(self.ctx, {h.function.name.value for h, _ in self._returned})
        visit(node, kept)
        for h, s in self._returned:
            if h.function.name.value in kept.kept:
                self._report(h, s, kept.kept[h.function.name.value])

    def _report(self, h: _Handler, s: _Store, caller: Optional[cst.CSTNode] = None,
                consumed: bool = False) -> None:
        if id(s.node) in self._reported:
            return  # the same store, reached through several handlers' aliases
        self._reported.add(id(s.node))
        heavy = self._heavy_frames(h)
        via = f" (through `{s.exc}`)" if s.exc != h.name else ""
        related = [RelatedNode(f"`{h.name}` bound here", h.node.name)]
        if caller is not None:
            related.append(RelatedNode("a caller keeps the result here", caller))
        if consumed:
            # re-raised later: the reader needs the exception, not its frames' locals
            fix = (f", heavy ones among them, for as long as it is kept for its reader; "
                   f"clear `{h.name}.__traceback__` before storing it (keep "
                   f"`traceback.format_exc()` if the trace is wanted)")
        else:
            fix = (f"; store `str({h.name})`/`traceback.format_exc()` instead, or clear "
                   f"`{h.name}.__traceback__` first")
        self.report(
            s.node,
            f"{s.holder} keeps exception `{h.name}`{via} alive beyond its handler, and with it "
            f"every frame of its traceback (from `{h.function.name.value}()` down) and their "
            f"locals{fix}",
            # kept for a reader that re-raises it, the exception is meant to stay until then;
            # otherwise one exception per holder, light unless its frames hold tensors - but a
            # result a caller keeps may be in the next call's frames: a chain, unbounded
            # an exception added to a container (`buffer.append((event, exc))`) is one more
            # per failure, until something drains it: growth not ruled out
            severity=level(Facts(heavy=heavy, grows=None if caller is not None or _adds(s.node) else False,
                                 meant_to_go=False if consumed else None)),
            related=related,
            statement=s.statement,
        )

    def _handed_off(self, h: _Handler, attr: str) -> bool:
        """Does the class clear `self.<attr>` in a release method, or after reading it
        in some other method (a hand-off: `err = self._e; self._e = None; raise err`)?"""
        if h.cls is None:
            return False
        for method in self.ctx.methods(h.cls).values():
            if method is h.function or method.name.value == "__init__":
                continue
            clearing = _Clearing(attr)
            visit(method.body, clearing)
            if clearing.cleared and (named_release(self.ctx, method) or clearing.read_before):
                return True
        return False

    def _heavy_frames(self, h: _Handler) -> bool:
        """Do the frames hold heavy objects: `self` of a class holding one, or a heavy
        parameter or local of the handler's function?"""
        if h.cls is not None and h.self_owner is not None and has_heavy_attribute(self.ctx, h.cls):
            return True
        return self._heavy_locals(h)

    def _heavy_locals(self, h: _Handler) -> bool:
        """A heavy parameter or local of the handler's function (what its frame pins
        beyond `self`, which a store on `self` keeps anyway)."""
        ctx, fn, cls = self.ctx, h.function, h.cls
        oracle = ctx.heavy
        params = fn.params
        for p in (*params.posonly_params, *params.params, *params.kwonly_params):
            if oracle.is_heavy_annotation(p.annotation):
                return True
        for name, assigned in oracle.local_assignments(fn).items():
            for value, ann in assigned:
                if oracle.is_heavy_annotation(ann) or (
                    value is not None and not name.startswith("self.")
                    and oracle.is_heavy_value(value, fn, cls)
                ):
                    return True
        return False


class _KeptResults(cst.CSTVisitor):
    """Which of `names` (functions or methods of the file) have a call whose result is
    stored on an object (`self.x = f()`, `self.results.append(self.f())`) or in a
    module-level name."""

    def __init__(self, ctx, names: set) -> None:
        self.ctx = ctx
        self.names = names
        self.kept: dict[str, cst.CSTNode] = {}
        self.depth = 0  # function nesting

    def visit_FunctionDef(self, node) -> None:
        self.depth += 1

    def leave_FunctionDef(self, node) -> None:
        self.depth -= 1

    def _called(self, value) -> Optional[str]:
        if isinstance(value, cst.Await):
            value = value.expression
        if isinstance(value, cst.Call):
            func = value.func
            name = func.value if isinstance(func, cst.Name) else (
                func.attr.value if isinstance(func, cst.Attribute) else None)
            return name if name in self.names else None
        if isinstance(value, (cst.Tuple, cst.List)):
            for e in value.elements:
                found = self._called(e.value)
                if found:
                    return found
        return None

    def _outlives(self, target) -> bool:
        if isinstance(target, cst.Name):
            return self.depth == 0
        root = target
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        return isinstance(root, cst.Name) and (
            root.value in ("self", "cls") or root.value in self.ctx.classes
            or (self.depth > 0 and _module_binds(self.ctx.module, root.value))
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        name = self._called(node.value)
        if name and any(self._outlives(t.target) for t in node.targets):
            self.kept.setdefault(name, node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ADDERS:
            for arg in node.args:
                name = self._called(arg.value)
                if name and self._outlives(func.value):
                    self.kept.setdefault(name, node)


# -- consumers --------------------------------------------------------------------------
# Calls that take an entry out of a container (a hand-off when another function does it).
_TAKERS = frozenset({"pop", "popleft", "popitem"})
# Builtins whose result is (an element of) their first argument.
_PASS_THROUGH = frozenset({"next", "iter", "list", "tuple", "reversed", "sorted"})


def _adds(node: cst.CSTNode) -> bool:
    """Is the store a call adding to a container (`append`, `add`, `put`...)?"""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ADDERS


def _slot(target: cst.BaseExpression) -> tuple:
    """How code elsewhere reads a store's holder back: ("a", attr) for the attribute
    nearest the value (`self._results[k]` -> `_results`, `self.state.error` -> `error`),
    ("g", name) for a bare module global or its items."""
    node = target
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Attribute):
            return ("a", node.attr.value)
        node = node.value
    return ("g", node.value if isinstance(node, cst.Name) else "")


class _Consumers:
    """The slots (`_slot`) this file hands to a consumer: read and raised somewhere
    (`raise self._error`, `raise RuntimeError(...) from _init_error`, `err =
    self._result.get("exception"); raise err`, `for item in self.thread.results(): raise
    item` through a getter), returned (`def error(self): return self.error_`), or taken
    out (`self._results.pop(k)`, `del self._jobs[k]`).
    Such an exception is a result kept for its reader, as `future.set_exception(e)` is.
    A read is ("a", attr, class) - the class for `self.attr` read in one of its methods,
    None for `other.attr` - or ("g", name) for a module global."""

    def __init__(self, rule: "StoredExceptionFrames", module: cst.Module) -> None:
        self.rule = rule
        self.raised: set = set()
        self.taken: list[tuple] = []  # (read, the function taking from it)
        functions = _AllFunctions()
        visit(module, functions)
        bodies = []
        for fn, cls in functions.found:
            body = _FunctionBody()
            visit(fn.body, body)
            bodies.append((fn, cls, body))
        # getters first: `def results(self): return self._results`
        self.getters: dict[str, set] = {}
        self.returned: set = set()  # slots a function returns: handed to its caller
        for fn, cls, body in bodies:
            if not body.returns:
                continue
            aliases = self._aliases(fn, cls, body)
            for ret in body.returns:
                read = self.reads(ret, aliases, fn, cls)
                self.returned |= read
                read = {r for r in read if r[0] == "a"}
                if read:
                    self.getters.setdefault(fn.name.value, set()).update(read)
        for fn, cls, body in bodies:
            if not body.raised and not body.taken:
                continue
            aliases = self._aliases(fn, cls, body)
            for exc in body.raised:
                self.raised |= self.reads(exc, aliases, fn, cls)
            for container in body.taken:
                self.taken.extend((r, fn) for r in self.reads(container, aliases, fn, cls))

    def raises(self, slot: tuple, cls: Optional[cst.ClassDef]) -> bool:
        """Is the slot of a store (on `self` of `cls`, if any) read and raised?"""
        return any(self._same(read, slot, cls) for read in self.raised)

    def returns(self, slot: tuple, cls: Optional[cst.ClassDef]) -> bool:
        """Is the slot of a store returned by a getter (`def error(self): return
        self.error_`, as `Future.exception()` hands the exception to its reader)?"""
        return any(self._same(read, slot, cls) for read in self.returned)

    def takes(self, slot: tuple, cls: Optional[cst.ClassDef], storing: cst.FunctionDef) -> bool:
        """Does a function other than the storing one take entries out of the slot? (The
        storing one trimming a history, `errors.pop(0)`, still keeps the rest.)"""
        return any(fn is not storing and self._same(read, slot, cls) for read, fn in self.taken)

    def _same(self, read: tuple, slot: tuple, cls: Optional[cst.ClassDef]) -> bool:
        if read[:2] != slot:
            return False
        if read[0] == "g" or read[2] is None or cls is None:
            return True
        # `self.attr` read in the storing class, a base or a subclass of it
        return self.rule.related(read[2], cls)

    def _aliases(self, fn, cls, body: "_FunctionBody") -> dict[str, set]:
        """Locals of `fn` assigned from a slot (flow-insensitive: `err = self._error`,
        `for batch in self.results(): for item in batch`)."""
        aliases: dict[str, set] = {}
        for _ in range(3):  # chains of aliases are short
            changed = False
            for target, value in body.assigned:
                read = self.reads(value, aliases, fn, cls)
                if not read:
                    continue
                for name in _target_names(target):
                    if not read <= aliases.get(name, set()):
                        aliases.setdefault(name, set()).update(read)
                        changed = True
            if not changed:
                break
        return aliases

    def reads(self, expr: Optional[cst.BaseExpression], aliases: dict, fn, cls) -> set:
        """The slots whose content `expr`, evaluated in `fn` (a method of `cls` or a
        function nested in one), evaluates to (or to an element of)."""
        if isinstance(expr, cst.Name):
            if expr.value in aliases:
                return aliases[expr.value]
            return {("g", expr.value)} if self.rule.module_global(expr.value, fn) else set()
        if isinstance(expr, cst.Attribute):
            owner = expr.value
            mine = isinstance(owner, cst.Name) and owner.value in ("self", "cls") and cls is not None
            return {("a", expr.attr.value, cls if mine else None)}
        if isinstance(expr, cst.Subscript):
            return self.reads(expr.value, aliases, fn, cls)
        if isinstance(expr, (cst.Await, cst.NamedExpr)):
            inner = expr.expression if isinstance(expr, cst.Await) else expr.value
            return self.reads(inner, aliases, fn, cls)
        if isinstance(expr, cst.IfExp):
            return self.reads(expr.body, aliases, fn, cls) | self.reads(expr.orelse, aliases, fn, cls)
        if isinstance(expr, cst.BooleanOperation):
            return self.reads(expr.left, aliases, fn, cls) | self.reads(expr.right, aliases, fn, cls)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute):
                # `.get(k)`, `.pop(k)`, `.values()` of the slot's container, or a getter
                return self.reads(func.value, aliases, fn, cls) | self.getters.get(func.attr.value, set())
            if isinstance(func, cst.Name) and func.value in _PASS_THROUGH and expr.args:
                return self.reads(expr.args[0].value, aliases, fn, cls)
        return set()


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


class _AllFunctions(cst.CSTVisitor):
    """Every function of a module, nested ones included, with the innermost class it is
    in (a closure in a method sees the method's `self`)."""

    def __init__(self) -> None:
        self.found: list[tuple[cst.FunctionDef, Optional[cst.ClassDef]]] = []
        self._classes: list[cst.ClassDef] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.found.append((node, self._classes[-1] if self._classes else None))


class _FunctionBody(OwnScopeVisitor):
    """What one function assigns to locals, raises, returns and takes entries out of,
    not entering nested scopes."""

    def __init__(self) -> None:
        self.assigned: list[tuple] = []  # (target, value)
        self.raised: list[cst.BaseExpression] = []
        self.returns: list[cst.BaseExpression] = []
        self.taken: list[cst.BaseExpression] = []  # containers popped or deleted from

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(node.value, (cst.Tuple, cst.List)) \
                    and len(target.elements) == len(node.value.elements):
                self.assigned.extend((a.value, b.value) for a, b in zip(target.elements, node.value.elements))
            else:
                self.assigned.append((target, node.value))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.assigned.append((node.target, node.value))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.assigned.append((node.target, node.value))

    def visit_For(self, node: cst.For) -> None:
        self.assigned.append((node.target, node.iter))

    def visit_Raise(self, node: cst.Raise) -> None:
        if node.exc is not None:
            self.raised.append(node.exc)
        if node.cause is not None:
            self.raised.append(node.cause.item)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.returns.append(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _TAKERS:
            self.taken.append(func.value)

    def visit_Del(self, node: cst.Del) -> None:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = t.value if isinstance(t, cst.Element) else t
            if isinstance(t, cst.Subscript):
                self.taken.append(t.value)


class _DropsTraceback(OwnScopeVisitor):
    """`x.__traceback__ = None`, `del x.__traceback__`, `x.with_traceback(None)`,
    `traceback.clear_frames(...)` anywhere in a body."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.found = False

    def visit_Assign(self, node: cst.Assign) -> None:
        if ctx_code(self.ctx, node.value) == "None" and any(
                isinstance(t.target, cst.Attribute) and t.target.attr.value == "__traceback__"
                for t in node.targets):
            self.found = True

    def visit_Del(self, node: cst.Del) -> None:
        if isinstance(node.target, cst.Attribute) and node.target.attr.value == "__traceback__":
            self.found = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "with_traceback" and node.args \
                and ctx_code(self.ctx, node.args[0].value) == "None":
            self.found = True
        elif self.ctx.qualname(func) == "traceback.clear_frames":
            self.found = True


class _Leaves(OwnScopeVisitor):
    """A `return`, or a `break` not inside an inner loop."""

    def __init__(self) -> None:
        self.found = False
        self._loops = 0

    def visit_For(self, node) -> None:
        self._loops += 1

    def leave_For(self, node) -> None:
        self._loops -= 1

    def visit_While(self, node) -> None:
        self._loops += 1

    def leave_While(self, node) -> None:
        self._loops -= 1

    def visit_Return(self, node) -> None:
        self.found = True

    def visit_Break(self, node) -> None:
        if not self._loops:
            self.found = True


class _Rebinds(OwnScopeVisitor):
    """Is `name` assigned (but by `assignment`), deleted or a loop target?"""

    def __init__(self, name: str, assignment: cst.CSTNode) -> None:
        self.name = name
        self.assignment = assignment
        self.found = False

    def visit_Assign(self, node: cst.Assign) -> bool:
        return node is not self.assignment

    def _check(self, target) -> None:
        if self.name in _target_names(target):
            self.found = True

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._check(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._check(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._check(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._check(node.target)


# -- `sys.exc_info()` in locals ------------------------------------------------------------
def _exc_info_parts(ctx, value: cst.BaseExpression) -> set:
    """Which parts of `sys.exc_info()` (0 type, 1 exception, 2 traceback) `value` is."""
    if isinstance(value, cst.Call):
        name = ctx.qualname(value.func)
        return {0, 1, 2} if name == "sys.exc_info" else {1} if name == "sys.exception" else set()
    if isinstance(value, cst.Subscript) and len(value.slice) == 1 and isinstance(value.value, cst.Call) \
            and ctx.qualname(value.value.func) == "sys.exc_info":
        index = value.slice[0].slice
        if isinstance(index, cst.Index):
            text = ctx_code(ctx, index.value).replace(" ", "")
            position = {"0": 0, "1": 1, "2": 2, "-1": 2, "-2": 1, "-3": 0}.get(text)
            return {position} if position is not None else {0, 1, 2}
    return set()


class _ExcInfoBindings(OwnScopeVisitor):
    """Locals bound to the exception or traceback part of `sys.exc_info()` (or to
    `sys.exception()`): (statement, assignment, names, the call as the message names it)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.bound: list[tuple] = []
        self._line: Optional[cst.CSTNode] = None

    def visit_SimpleStatementLine(self, node) -> None:
        self._line = node

    def visit_Assign(self, node: cst.Assign) -> None:
        parts = _exc_info_parts(self.ctx, node.value)
        if not parts & {1, 2}:
            return
        names = []
        for t in node.targets:
            target = t.target
            if isinstance(target, cst.Name):
                names.append(target.value)
            elif isinstance(target, (cst.Tuple, cst.List)) and parts == {0, 1, 2} and len(target.elements) == 3:
                names.extend(e.value.value for i, e in enumerate(target.elements)
                             if i and isinstance(e.value, cst.Name))
        if names:
            call = "sys.exception()" if parts == {1} and isinstance(node.value, cst.Call) else "sys.exc_info()"
            self.bound.append((self._line, node, names, call))


def _only_imports(body) -> bool:
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for stmt in statements:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        if not all(isinstance(s, (cst.Import, cst.ImportFrom, cst.Pass)) for s in stmt.body):
            return False
    return True


def _module_binds(module: cst.Module, name: str) -> bool:
    """Is `name` bound at module level (so `name.append(e)` reaches a global)?"""
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, cst.AnnAssign):
                    targets = [small.target]
                if any(isinstance(t, cst.Name) and t.value == name for t in targets):
                    return True
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value == name:
            return True
    return False


class _Clearing(cst.CSTVisitor):
    """Does a method set `self.<attr>` to None (or delete it), and read it before?"""

    def __init__(self, attr: str) -> None:
        self.attr = attr
        self.cleared = False
        self.read_before = False
        self._reads = 0

    def _is_attr(self, node) -> bool:
        return (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == "self"
            and node.attr.value == self.attr
        )

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._is_attr(node):
            self._reads += 1

    def visit_Assign(self, node: cst.Assign) -> None:
        values = node.value.elements if isinstance(node.value, cst.Tuple) else [node.value]
        for t in node.targets:
            targets = t.target.elements if isinstance(t.target, cst.Tuple) else [t.target]
            for i, target in enumerate(targets):
                target = target.value if isinstance(target, cst.Element) else target
                if not self._is_attr(target):
                    continue
                v = values[i] if len(values) == len(targets) else None
                v = v.value if isinstance(v, cst.Element) else v
                if isinstance(v, cst.Name) and v.value == "None":
                    self.cleared = True
                    # a read in the same statement (`err, self.e = self.e, None`) or earlier
                    if self._reads > 0 or any(
                        self._is_attr(x.value if isinstance(x, cst.Element) else x) for x in values
                    ):
                        self.read_before = True

    def visit_Del(self, node: cst.Del) -> None:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = t.value if isinstance(t, cst.Element) else t
            if self._is_attr(t):
                self.cleared = True
                if self._reads > 1:
                    self.read_before = True


class _StoreFinder(OwnScopeVisitor):
    """Stores of the exception names in one handler body (or, for aliases, in the rest of
    the function), not entering nested scopes."""

    def __init__(self, rule: StoredExceptionFrames, h: _Handler, names: set,
                 skip: Optional[cst.CSTNode] = None) -> None:
        self.rule = rule
        self.ctx = rule.ctx
        self.h = h
        self.names = names
        self.skip = skip
        # the alias pass only looks after the handler (before it, the name held something else)
        self.active = skip is None
        self.line: Optional[cst.CSTNode] = None
        # names known not to hold an exception in the block being visited, one set per
        # enclosing block (`if isinstance(v, Exception): raise v` narrows `v` after it)
        self.narrowed: list[set] = []
        self._narrow_in: dict[int, str] = {}  # id(block) -> a name narrowed inside it

    # scopes and statements
    def visit_ExceptHandler(self, node) -> bool:
        if node is self.skip:
            self.active = True
            return False
        # a nested handler that rebinds the name is judged on its own
        return not (node.name is not None and isinstance(node.name.name, cst.Name)
                    and node.name.name.value in self.names)

    def visit_SimpleStatementLine(self, node) -> None:
        self.line = node

    # `isinstance` guards: a name that is not an exception where a store runs
    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        name = self._narrow_in.pop(id(node), None)
        self.narrowed.append({name} if name else set())

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.narrowed.pop()

    def visit_If(self, node: cst.If) -> None:
        if not self.active:
            return  # before the handler, the name held something else
        test = _exception_test(self.ctx, node.test, self.names, self.h.node)
        if test is None:
            return
        name, positive = test
        if not positive:
            self._narrow_in[id(node.body)] = name
        elif isinstance(node.orelse, cst.Else):
            self._narrow_in[id(node.orelse.body)] = name

    def leave_If(self, node: cst.If) -> None:
        if not self.active or not self.narrowed:
            return
        test = _exception_test(self.ctx, node.test, self.names, self.h.node)
        if test is None:
            return
        name, positive = test
        branch = node.body if positive else node.orelse
        if branch is not None and _terminates(branch):
            self.narrowed[-1].add(name)  # the rest of the enclosing block

    def _is_narrowed(self, name: str) -> bool:
        return any(name in block for block in self.narrowed)

    def _widen(self, name: str) -> None:
        """`name` is assigned again: what it holds is no longer known."""
        for block in self.narrowed:
            block.discard(name)

    # what holds the exception
    def holds(self, value: Optional[cst.BaseExpression]) -> Optional[str]:
        if value is None or not self.active:
            return None
        for n in self.names:
            if self._is_narrowed(n):
                continue
            key = cst.Name(n)
            if isinstance(value, cst.Attribute) and value.attr.value == "__traceback__" and (
                isinstance(value.value, cst.Name) and value.value.value == n
            ):
                return n
            if _reaches_exc(self.ctx, value, key, self.h.function) and not self._wrapper_drops(value):
                return n
        return None

    def _wrapper_drops(self, value) -> bool:
        """`_RemoteError(e, e.__traceback__)` where the class (of this file) clears the
        traceback of what it keeps in its `__init__` (`self.exc.__traceback__ = None`)."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
            return False
        cls = self.ctx.classes.get(value.func.value)
        init = self.ctx.methods(cls).get("__init__") if cls is not None else None
        if init is None:
            return False
        drops = _DropsTraceback(self.ctx)
        visit(init.body, drops)
        return drops.found

    def _store(self, node, value, target, exc) -> None:
        if not self.active:
            return
        where = self.rule.classify(target, self.h)
        if where is None:
            return
        kind, holder, attr = where
        self.h.stores.append(_Store(node, value, holder, kind, attr, self.line, exc, _slot(target)))

    def visit_Assign(self, node: cst.Assign) -> None:
        exc = self.holds(node.value)
        if exc is None:
            return
        for t in node.targets:
            if isinstance(t.target, cst.Name):
                self._widen(t.target.value)
            target = t.target
            if isinstance(target, cst.Name):
                where = self.rule.classify(target, self.h)
                if where is not None:
                    self._store(node, node.value, target, exc)
                elif self.skip is None:
                    self.h.aliases.add(target.value)
                    self.h.assigned.setdefault(target.value, (node, self.line))
                    if not isinstance(node.value, cst.Name):
                        self.h.containers.add(target.value)
            else:
                self._store(node, node.value, target, exc)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        exc = self.holds(node.value)
        if exc is None:
            return
        if isinstance(node.target, cst.Name):
            if self.rule.classify(node.target, self.h) is not None:
                self._store(node, node.value, node.target, exc)
            elif self.skip is None:
                self.h.aliases.add(node.target.value)
                if not isinstance(node.value, cst.Name):
                    self.h.containers.add(node.target.value)
        else:
            self._store(node, node.value, node.target, exc)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        exc = self.holds(node.value)
        if exc is not None:
            self._store(node, node.value, node.target, exc)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = func.value
            # traceback dropped
            if method == "with_traceback" and node.args and ctx_code(self.ctx, node.args[0].value) == "None":
                if isinstance(receiver, cst.Name) and receiver.value in self.names and self.active:
                    self.h.dropped = True
            if method in ADDERS:
                for arg in node.args:
                    exc = self.holds(arg.value)
                    if exc is None:
                        continue
                    if isinstance(receiver, cst.Name) and self.rule.classify(receiver, self.h) is None:
                        if self.skip is None:
                            # a local container: reported if it escapes the function
                            self.h.aliases.add(receiver.value)
                            self.h.containers.add(receiver.value)
                        break
                    self._store(node, arg.value, receiver, exc)
                    break
        if self.active and self._drops_traceback(node):
            self.h.dropped = True

    def _drops_traceback(self, node: cst.Call) -> bool:
        """`traceback.clear_frames(e.__traceback__)`, or a helper named for it
        (`_detach_tracebacks(e)`, `clear_traceback(err)`) given the exception."""
        qualified = self.ctx.qualname(node.func) or ""
        if qualified == "traceback.clear_frames":
            return True
        last = qualified.rsplit(".", 1)[-1].lower()
        if "traceback" not in last or not any(w in last for w in _DROP_WORDS):
            if not self._helper_drops(node):
                return False
        for arg in node.args:
            v = arg.value
            if isinstance(v, cst.Attribute):
                v = v.value
            if isinstance(v, cst.Name) and v.value in self.names:
                return True
        return False

    def _helper_drops(self, node: cst.Call) -> bool:
        """A function of this file that clears its parameter's traceback
        (`def _sanitize(error): error.__traceback__ = None`)."""
        helper = self.ctx.functions.get(node.func.value) if isinstance(node.func, cst.Name) else None
        if helper is None:
            return False
        drops = _DropsTraceback(self.ctx)
        visit(helper.body, drops)
        return drops.found

    def visit_Return(self, node: cst.Return) -> None:
        value = node.value
        if value is None:
            return
        # a container, or an instance of a class of this file built around the exception
        # (`return ServerDescription(address, error=e)`: `holds` follows its `__init__`)
        wrapper = isinstance(value, cst.Call) and isinstance(value.func, cst.Name) \
            and value.func.value in self.ctx.classes
        if wrapper or isinstance(value, (cst.Tuple, cst.List, cst.Dict, cst.Set)) or (
            isinstance(value, cst.Name) and value.value in self.h.containers
        ):
            exc = self.holds(value)
            if exc is not None:
                holder = (f"the returned local `{value.value}`" if isinstance(value, cst.Name)
                          else f"the returned `{value.func.value}`" if wrapper
                          else "the returned container")
                self.h.stores.append(_Store(node, value, holder, "return", None, self.line, exc))

    def visit_Raise(self, node: cst.Raise) -> None:
        exc = node.exc
        if self.active and self.skip is not None and isinstance(exc, cst.Name) and (
            exc.value in self.names and exc.value not in self.h.containers
        ):
            self.h.reraised = True

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        # `e.__traceback__ = None`
        target = node.target
        if (
            self.active
            and isinstance(target, cst.Attribute)
            and target.attr.value == "__traceback__"
            and isinstance(target.value, cst.Name)
            and target.value.value in self.names
        ):
            self.h.dropped = True

    def visit_Del(self, node: cst.Del) -> None:
        target = node.target
        if self.active and isinstance(target, cst.Attribute) and target.attr.value == "__traceback__":
            self.h.dropped = True


def _reaches_exc(ctx, value, key: cst.Name, function) -> bool:
    """`reaches` without following local assignments (aliases are tracked explicitly)."""
    if isinstance(value, cst.Name):
        return value.value == key.value
    return reaches(ctx, value, key, None) is not None


def _exception_test(ctx, test: cst.BaseExpression, names: set,
                    handler: cst.ExceptHandler) -> Optional[tuple[str, bool]]:
    """`isinstance(n, T)` -> (n, True), `not isinstance(n, T)` -> (n, False), for a name
    `n` among `names` and types `T` that cover everything `handler` catches."""
    positive = True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, positive = test.expression, False
    if not (
        isinstance(test, cst.Call) and ctx.qualname(test.func) in ("isinstance", "builtins.isinstance")
        and len(test.args) == 2 and isinstance(test.args[0].value, cst.Name)
        and test.args[0].value.value in names
    ):
        return None
    if not _covers(_type_names(test.args[1].value), _type_names(handler.type)):
        return None
    return test.args[0].value.value, positive


def _type_names(kind: Optional[cst.BaseExpression]) -> Optional[set]:
    """The last parts of the names in an exception type or tuple of them (None: a bare
    `except:` or a type not spelled as names)."""
    if kind is None:
        return None
    kinds = [e.value for e in kind.elements] if isinstance(kind, cst.Tuple) else [kind]
    found = set()
    for k in kinds:
        if isinstance(k, cst.Name):
            found.add(k.value)
        elif isinstance(k, cst.Attribute):
            found.add(k.attr.value)
        else:
            return None
    return found


def _covers(checked: Optional[set], caught: Optional[set]) -> bool:
    """Does an `isinstance` check against `checked` match every exception a handler for
    `caught` binds? `BaseException` covers all; `Exception` all but what a bare `except:`
    or a handler for `BaseException` (or `KeyboardInterrupt`, ...) binds; otherwise each
    caught type must be checked."""
    if not checked:
        return False
    if "BaseException" in checked:
        return True
    if caught is None or caught & _NOT_EXCEPTIONS:
        return False
    return "Exception" in checked or caught <= checked


# What a handler may bind that is not an `Exception`.
_NOT_EXCEPTIONS = frozenset(
    {"BaseException", "BaseExceptionGroup", "KeyboardInterrupt", "SystemExit", "GeneratorExit"}
)


def _leaves_loop(block) -> bool:
    """Does the block (a handler directly in a loop) end by leaving that loop: `raise`,
    `return` or `break`, not `continue`?"""
    return _terminates(block) and not isinstance(_last_small(block), cst.Continue)


def _last_small(block) -> Optional[cst.BaseSmallStatement]:
    if isinstance(block, cst.IndentedBlock) and block.body and isinstance(block.body[-1], cst.SimpleStatementLine):
        return block.body[-1].body[-1] if block.body[-1].body else None
    if isinstance(block, cst.SimpleStatementSuite) and block.body:
        return block.body[-1]
    return None


def _terminates(block) -> bool:
    """Does the block end in `raise`, `return`, `continue` or `break`?"""
    if isinstance(block, cst.Else):
        block = block.body
    if isinstance(block, cst.IndentedBlock):
        if not block.body:
            return False
        last = block.body[-1]
        if not isinstance(last, cst.SimpleStatementLine):
            return False
        small = last.body
    elif isinstance(block, cst.SimpleStatementSuite):
        small = block.body
    else:
        return False
    return bool(small) and isinstance(small[-1], (cst.Raise, cst.Return, cst.Continue, cst.Break))
