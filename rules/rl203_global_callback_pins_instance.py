"""RL203 global-callback-pins-instance."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import (
    body_functions,
    body_statements,
    call_args,
    decorator_names,
    is_instance_method,
    is_self,
    name_bindings,
)
from retainlint.analysis.fix_preconditions import append_at_end, end_reachable
from retainlint.analysis.hooks import iter_nodes
from retainlint.core.finding import Applicability, Severity
from retainlint.analysis.heavy import find_param
from retainlint.project.index import instantiated_in_functions
from retainlint.analysis.module_caches import removed_in_project
from retainlint.analysis.release import FINALIZER, fix_release_method, release_names
from retainlint.rules.prefilters.rl203 import (
    AT_FORK,
    AT_FORK_KEYWORDS,
    ATEXIT_REGISTER,
    LOOP_TRIGGERS,
    GlobalCallbackPinsInstancePrefilter,
    SIGNAL,
    ADDERS,
    LIST_CTORS,
)
from retainlint.analysis.rule import Example, Rule
from retainlint.analysis.severity import Facts, instances_meant_to_go, level
from retainlint.analysis.walk import visit

ATEXIT_UNREGISTER = "atexit.unregister"
_PARTIALS = frozenset({"functools.partial", "functools.partialmethod"})
_STATIC = frozenset({"staticmethod", "builtins.staticmethod", "classmethod", "builtins.classmethod"})
_PROPERTIES = frozenset({"property", "builtins.property", "functools.cached_property"})
_LOGGERS = frozenset({"logging.Logger", "logging.LoggerAdapter"})
# methods that take elements out
_REMOVERS = frozenset({"remove", "discard", "pop", "popleft", "popitem", "clear", "__delitem__"})
# builtins that only read a container handed to them
_READERS = frozenset({
    "len", "list", "tuple", "sorted", "iter", "bool", "any", "all", "repr", "str", "print",
    "id", "isinstance", "set", "frozenset", "enumerate", "reversed", "min", "max", "sum",
    "next", "zip", "map", "filter",
})
_TRIGGER_REMOVERS = frozenset(remover for _, remover, _ in LOOP_TRIGGERS.values())
# module-level dicts a function may keep instances in, one per key
_DICT_CTORS = frozenset({"dict", "builtins.dict", "collections.defaultdict", "collections.OrderedDict"})
_THREADS = frozenset({"threading.Thread"})


@dataclass
class _Registration:
    kind: str  # "atexit" | "signal" | "append" | "fork" | a method of `LOOP_TRIGGERS`
    call: cst.Call
    callback: cst.BaseExpression
    what: str  # what the callback is, for the message
    pins_self: bool  # True: pins the instance; False: pins another heavy object
    cls: cst.ClassDef
    function: cst.FunctionDef
    statement: Optional[cst.CSTNode]
    container: Optional[str] = None  # the module global appended to
    through: Optional[str] = None  # the module function that appends it (`on_shutdown`)
    saved_as: Optional[str] = None  # `self.<attr> = signal.signal(...)`: the old handler


def _is_own_receiver(expr: cst.BaseExpression) -> bool:
    """`self` or `super()`: a method of the object itself."""
    return is_self(expr) or (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name)
                             and expr.func.value == "super")


def _mentions_self(node: cst.CSTNode) -> bool:
    found = False

    class _Finder(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            nonlocal found
            if name.value == "self":
                found = True

    visit(node, _Finder())
    return found


class GlobalCallbackPinsInstance(Rule):
    prefilter = GlobalCallbackPinsInstancePrefilter
    name = "global-callback-pins-instance"
    summary = (
        "A bound method or the instance itself is registered in a process-wide registry "
        "(atexit, signal handlers, a module-level list) and never taken out"
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    docs = """
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
  `removeSystemEventTrigger` in a method of the class (asyncio's `loop.add_signal_handler`
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

when nothing undoes it: no method of the class (other than `__del__`, which cannot run
while the registry holds the instance) calls `atexit.unregister(...)` for that callback or
installs another handler for the signal (restoring the old one, `SIG_DFL`), the saved old
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
grows by one per instance).

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

    valid = [
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
    invalid = [
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

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._registrations: list[_Registration] = []
        # per class name: texts of `atexit.unregister(...)` arguments, `signal.signal`
        # calls (the call nodes) outside `__del__`
        self._unregistered: dict[str, list[cst.BaseExpression]] = {}
        self._signals: dict[str, list[tuple[cst.Call, cst.FunctionDef]]] = {}
        self._handlers_reinstalled: list[cst.BaseExpression] = []  # any signal.signal handler
        # per class name: the loop-trigger removers it calls (`removeSystemEventTrigger`)
        self._triggers_removed: dict[str, set[str]] = {}
        self._containers: dict[str, cst.CSTNode] = {}  # module-level list/set/deque -> name node
        self._emptied: set[str] = set()  # names removed from / rebound / handed away
        self._cleared: set[str] = set()  # containers emptied all at once (`.clear()`)
        # module functions that add a parameter, as given, to a module container:
        # name -> (position, parameter, container)
        self._registry_functions: dict[str, tuple[int, str, str]] = {}
        # class -> how it is instantiated: "module", "singleton", "other", "entry:<function>"
        # (in a function that may be a process entry point), "registry:<dict>" (kept in a
        # module dict by the function that makes it)
        self._instantiated: dict[str, set[str]] = {}
        self._registries: set[str] = set()  # module-level dicts
        self._entry_points: set[str] = set()  # functions `__main__` runs, `Process` targets
        self._called_by_functions: set[str] = set()  # names called by bare name in a function
        self._global_names: dict[int, set[str]] = {}
        # module containers: every mention, and the mentions that do not read them (the
        # definition, `global` declarations, receivers of append/add): the difference says
        # whether the file ever reads the container
        self._uses: dict[str, int] = {}
        self._not_reads: dict[str, int] = {}

    # -- collection ----------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        for target, value in name_bindings(node.body):
            if self._strong_container(value):
                self._containers[target.value] = target
                self._not_reads[target.value] = self._not_reads.get(target.value, 0) + 1
            elif self._dict(value):
                self._registries.add(target.value)
        for stmt in node.body:
            if isinstance(stmt, cst.FunctionDef):
                stored = self._stored_parameter(stmt)
                if stored is not None:
                    self._registry_functions[stmt.name.value] = stored
        for stmt in node.body:
            if isinstance(stmt, cst.If) and _is_main_guard(stmt.test):
                self._entry_points |= _called_names(stmt.body)

    def _stored_parameter(self, fn: cst.FunctionDef) -> Optional[tuple[int, str, str]]:
        """`def on_shutdown(handler): _handlers.append(handler)`: the parameter a module
        function adds, as given (never rebound: `handler = _Weak(handler)` first stores
        something else), to a module-level list, set or deque."""
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        keyword_only = [p.name.value for p in fn.params.kwonly_params]
        rebound = self.ctx.heavy.local_assignments(fn)
        for node in iter_nodes(fn.body):
            if not (
                isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in ADDERS and isinstance(node.func.value, cst.Name)
                and node.func.value.value in self._containers
            ):
                continue
            positional, _ = call_args(node)
            position = ADDERS[node.func.attr.value]
            if len(positional) <= position or not isinstance(positional[position].value, cst.Name):
                continue
            name = positional[position].value.value
            container = node.func.value.value
            if name in rebound or container in rebound:
                continue
            if name in params:
                return params.index(name), name, container
            if name in keyword_only:
                return -1, name, container
        return None

    def _dict(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Dict):
            return True
        if isinstance(value, cst.Call):
            func = value.func.value if isinstance(value.func, cst.Subscript) else value.func
            return self.ctx.qualname(func) in _DICT_CTORS
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self._containers:
            self._uses[node.value] = self._uses.get(node.value, 0) + 1

    def _strong_container(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, (cst.List, cst.Set)):
            return True
        if isinstance(value, cst.Call):
            func = value.func.value if isinstance(value.func, cst.Subscript) else value.func
            return self.ctx.qualname(func) in LIST_CTORS
        return False

    def visit_Global(self, node: cst.Global) -> None:
        fn = self.ctx.scope.function
        for n in node.names:
            self._not_reads[n.name.value] = self._not_reads.get(n.name.value, 0) + 1
        if fn is not None:
            names = {n.name.value for n in node.names}
            self._global_names.setdefault(id(fn), set()).update(names)
            assigned = self.ctx.heavy.local_assignments(fn)
            self._emptied.update(n for n in names if (n in self._containers or n in self._registries)
                                 and n in assigned)  # rebound

    def visit_Del(self, node: cst.Del) -> None:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = t.value if isinstance(t, cst.Element) else t
            base = t.value if isinstance(t, cst.Subscript) else t
            if isinstance(base, cst.Name) and self._container_here(base.value):
                self._emptied.add(base.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if (
                isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)
                and target.value.value in self._containers and self._container_here(target.value.value)
            ):
                self._emptied.add(target.value.value)  # `_l[:] = [...]` (`_d[k] = v` stores)
        self._escape(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if (
            isinstance(node.target, cst.Name) and not isinstance(node.operator, cst.AddAssign)
            and self._container_here(node.target.value)
        ):
            self._emptied.add(node.target.value)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._escape(node.value)

    def _escape(self, value: cst.BaseExpression) -> None:
        """`x = _l`, `return _l`: other code may prune it."""
        if isinstance(value, cst.Name) and self._container_here(value.value):
            self._emptied.add(value.value)

    def _container_here(self, name: str) -> bool:
        """Does `name` denote one of the module-level containers (or dicts) where the
        traversal is?"""
        if name not in self._containers and name not in self._registries:
            return False
        for fn in reversed(self.ctx.scope.functions):
            if name in self._global_names.get(id(fn), ()):
                return True
            if self._local(name, fn):
                return False
        return True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if (
            node.attr.value in _REMOVERS and isinstance(node.value, cst.Name)
            and self._container_here(node.value.value)
        ):
            (self._cleared if node.attr.value == "clear" else self._emptied).add(node.value.value)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualname(node.func)
        scope = self.ctx.scope
        cls = scope.classes[-1] if scope.classes else None
        if isinstance(node.func, cst.Name) and node.func.value in self.ctx.classes:
            self._instantiation(node.func.value, node)
        target = _process_target(node)
        if target is not None:
            self._entry_points.add(target)
        if isinstance(node.func, cst.Name) and scope.function is not None:
            self._called_by_functions.add(node.func.value)
        if qualified not in _READERS:
            for arg in node.args:  # handed to code that may prune it
                self._escape(arg.value)
        if qualified == ATEXIT_UNREGISTER and cls is not None and node.args:
            if not (scope.function is not None and scope.function.name.value == FINALIZER):
                self._unregistered.setdefault(cls.name.value, []).append(node.args[0].value)
        if qualified == SIGNAL and len(node.args) >= 2:
            self._handlers_reinstalled.append(node.args[1].value)
            if cls is not None and scope.function is not None and (
                scope.function.name.value != FINALIZER
            ):
                self._signals.setdefault(cls.name.value, []).append((node, scope.function))
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _TRIGGER_REMOVERS and cls is not None \
                and not (scope.function is not None and scope.function.name.value == FINALIZER):
            self._triggers_removed.setdefault(cls.name.value, set()).add(node.func.attr.value)
        adder = (
            isinstance(node.func, cst.Attribute) and node.func.attr.value in ADDERS
            and isinstance(node.func.value, cst.Name) and node.func.value.value in self._containers
        )
        if adder:
            name = node.func.value.value
            self._not_reads[name] = self._not_reads.get(name, 0) + 1
        fn = scope.function
        cls = scope.method_class
        if cls is None or fn is None or not is_instance_method(self.ctx, fn):
            return
        if qualified == ATEXIT_REGISTER and node.args:
            positional, _ = call_args(node)
            self._consider("atexit", node, node.args[0].value, cls, fn,
                           extra=[a.value for a in positional[1:]])
        elif qualified == SIGNAL and len(node.args) >= 2:
            self._consider("signal", node, node.args[1].value, cls, fn)
        elif qualified == AT_FORK:
            # several hooks in one call: one finding, for the first that pins
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in AT_FORK_KEYWORDS and \
                        self._consider("fork", node, arg.value, cls, fn):
                    break
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in LOOP_TRIGGERS \
                and not _is_own_receiver(node.func.value):
            # (a loop's own method, `self.addSystemEventTrigger(...)`, fills its own table:
            # the entries live and die with the object, a self-cycle at most)
            position = LOOP_TRIGGERS[node.func.attr.value][0]
            positional, _ = call_args(node)
            if len(positional) > position:
                self._consider(node.func.attr.value, node, positional[position].value, cls, fn,
                               extra=[a.value for a in positional[position + 1:]])
        elif (
            isinstance(node.func, cst.Name) and node.func.value in self._registry_functions
            and not self._local(node.func.value, fn)
        ):
            position, param, container = self._registry_functions[node.func.value]
            positional, keywords = call_args(node)
            given = positional[position].value if 0 <= position < len(positional) else (
                keywords[param].value if param in keywords else None)
            if given is not None:
                self._consider("append", node, given, cls, fn, container=container,
                               through=node.func.value)
        elif adder:
            container = node.func.value.value
            position = ADDERS[node.func.attr.value]
            positional, _ = call_args(node)
            if len(positional) > position and not self._local(container, fn):
                self._consider("append", node, positional[position].value, cls, fn,
                               container=container)

    def _instantiation(self, name: str, call: cst.Call) -> None:
        scope = self.ctx.scope
        fn = scope.function
        if fn is None:
            kind = "module" if not scope.classes else "other"
        elif self._cached(fn) or self._assigns_global(fn):
            kind = "singleton"
        else:
            registry = self._kept_in_registry(fn, call)
            if registry is not None:
                kind = f"registry:{registry}"
            elif len(scope.functions) == 1 and not scope.classes and not self._in_loop(call):
                kind = f"entry:{fn.name.value}"  # once per call of a module-level function
            else:
                kind = "other"
        self._instantiated.setdefault(name, set()).add(kind)

    def _in_loop(self, call: cst.Call) -> bool:
        """Is `call` in a loop (or a comprehension) of the innermost function?"""
        statements = self.ctx.scope.statements
        fn = self.ctx.scope.function
        inner = statements[statements.index(fn) + 1:] if fn in statements else statements
        if any(isinstance(s, (cst.For, cst.While)) for s in inner):
            return True
        statement = self.ctx.scope.statement
        return statement is not None and any(
            isinstance(n, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp))
            and any(m is call for m in iter_nodes(n))
            for n in iter_nodes(statement))

    def _kept_in_registry(self, fn: cst.FunctionDef, call: cst.Call) -> Optional[str]:
        """The module dict the new instance is stored in by the function that makes it:
        `_R[key] = Cls(...)`, `x = Cls(...)` then `_R[key] = x`, `_R.setdefault(key, x)`."""
        statement = self.ctx.scope.statement
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        names: set[str] = set()
        for small in statement.body:
            if isinstance(small, cst.Assign) and small.value is call:
                for t in small.targets:
                    registry = self._registry_item(fn, t.target)
                    if registry is not None:
                        return registry
                    if isinstance(t.target, cst.Name):
                        names.add(t.target.value)
        for node in iter_nodes(fn.body):
            if isinstance(node, cst.Assign) and _is_value(node.value, call, names):
                for t in node.targets:
                    registry = self._registry_item(fn, t.target)
                    if registry is not None:
                        return registry
            elif (
                isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "setdefault" and len(node.args) == 2
                and _is_value(node.args[1].value, call, names)
            ):
                registry = node.func.value
                if isinstance(registry, cst.Name) and self._module_registry(registry.value, fn):
                    return registry.value
        return None

    def _registry_item(self, fn: cst.FunctionDef, target: cst.BaseExpression) -> Optional[str]:
        """`_R[key]` for a module dict `_R`: its name."""
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                and self._module_registry(target.value.value, fn):
            return target.value.value
        return None

    def _module_registry(self, name: str, fn: cst.FunctionDef) -> bool:
        return name in self._registries and not self._local(name, fn)

    def _cached(self, fn: cst.FunctionDef) -> bool:
        return any(self.ctx.index.is_cache_decorator(d) for d in decorator_names(self.ctx, fn))

    def _assigns_global(self, fn: cst.FunctionDef) -> bool:
        """`global _x` then `_x = Cls(...)` in this statement."""
        statement = self.ctx.scope.statement
        names = self._global_names.get(id(fn), set())
        if not names or not isinstance(statement, cst.SimpleStatementLine):
            return False
        return any(
            isinstance(small, cst.Assign)
            and any(isinstance(t.target, cst.Name) and t.target.value in names for t in small.targets)
            for small in statement.body
        )

    def _local(self, name: str, fn: cst.FunctionDef) -> bool:
        """Is `name` a local of `fn` (a parameter or assigned without `global`)?"""
        if name in self._global_names.get(id(fn), set()):
            return False
        return find_param(fn, name) is not None or name in self.ctx.heavy.local_assignments(fn)

    def _consider(self, kind, call, callback, cls, fn, extra=(), container=None, through=None) -> bool:
        what = self._pins_self(callback, fn, cls, 0)
        pins_self = what is not None
        if what is None:
            for value in extra:  # `atexit.register(cleanup, self)`
                if isinstance(value, cst.Name) and value.value == "self":
                    what, pins_self = "`self` (passed as an argument)", True
                    break
        if what is None:
            what = self._pins_heavy_other(callback, fn, cls)
        if what is None:
            return False
        statement = self.ctx.scope.statement
        saved_as = None
        if kind == "signal" and isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1:
                    target = small.targets[0].target
                    if isinstance(target, cst.Attribute):
                        saved_as = target.attr.value
                    elif isinstance(target, cst.Name):
                        saved_as = target.value
        self._registrations.append(
            _Registration(kind, call, callback, what, pins_self, cls, fn, statement,
                          container=container, saved_as=saved_as, through=through)
        )
        return True

    # -- what a callback keeps alive -----------------------------------------------
    def _pins_self(self, expr, fn, cls, depth: int) -> Optional[str]:
        """A description of how `expr` holds the instance, or None."""
        if depth > 3:
            return None
        code = self.ctx.code
        if isinstance(expr, cst.Name):
            if expr.value == "self":
                return "the instance itself"
            nested = _nested_function(fn, expr.value)
            if nested is not None and _mentions_self(nested.body):
                return f"the closure `{expr.value}` (it uses `self`)"
            for value, _ in self.ctx.heavy.local_assignments(fn).get(expr.value, ()):
                if value is not None and self._pins_self(value, fn, cls, depth + 1):
                    return f"`{expr.value}` (built from `self`)"
            return None
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            if self._bound_method(cls, expr.attr.value, depth):
                return f"the bound method `{code(expr)}`"
            return None
        if isinstance(expr, cst.Lambda):
            return "a lambda using `self`" if _mentions_self(expr.body) else None
        if isinstance(expr, cst.Call):
            if self.ctx.qualname(expr.func) in _PARTIALS:
                if any(self._pins_self(a.value, fn, cls, depth + 1) for a in expr.args):
                    return f"`{code(expr.func)}(...)` over `self`"
                return None
            func = expr.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
                method = self._method(cls, func.attr.value)
                if method is not None and _returns_closure_over_self(method):
                    return f"the closure returned by `{code(func)}()` (it uses `self`)"
        return None

    def _bound_method(self, cls: cst.ClassDef, attr: str, depth: int) -> bool:
        """Is `self.<attr>` a bound method of the instance (or an attribute holding one)?"""
        method = self._method(cls, attr)
        if method is not None:
            decorators = decorator_names(self.ctx, method)
            return not (decorators & _STATIC or decorators & _PROPERTIES)
        assigned = False
        for m in self._class_chain_methods(cls):
            for value, _ in self.ctx.heavy.local_assignments(m).get(f"self.{attr}", ()):
                assigned = True
                if value is not None and self._pins_self(value, m, cls, depth + 1):
                    return True
        if assigned or self._class_level(cls, attr):
            return False
        # not defined in this file: a method of a base class in another file?
        return self._inherited_method(cls, attr)

    def _method(self, cls: cst.ClassDef, name: str) -> Optional[cst.FunctionDef]:
        for c in self._class_chain(cls):
            method = self.ctx.methods(c).get(name)
            if method is not None:
                return method
        return None

    def _class_chain(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """`cls` and its base classes defined in this file."""
        chain, pending = [], [cls]
        while pending:
            c = pending.pop(0)
            if c in chain:
                continue
            chain.append(c)
            for base in c.bases:
                if isinstance(base.value, cst.Name) and base.value.value in self.ctx.classes:
                    pending.append(self.ctx.classes[base.value.value])
        return chain

    def _class_chain_methods(self, cls: cst.ClassDef) -> list[cst.FunctionDef]:
        return [m for c in self._class_chain(cls) for m in body_functions(c)]

    def _class_level(self, cls: cst.ClassDef, attr: str) -> bool:
        for c in self._class_chain(cls):
            body = c.body.body if isinstance(c.body, cst.IndentedBlock) else ()
            for stmt in body:
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        targets = (
                            [t.target for t in small.targets] if isinstance(small, cst.Assign)
                            else [small.target] if isinstance(small, cst.AnnAssign) else []
                        )
                        if any(isinstance(t, cst.Name) and t.value == attr for t in targets):
                            return True
        return False

    def _inherited_method(self, cls: cst.ClassDef, attr: str) -> bool:
        """Through the project index: a method of a base class in another file; for bases
        outside the project (or unknown), assume it is one."""
        index = self.ctx.index
        pending = [self.ctx.qualname(b.value) for c in self._class_chain(cls) for b in c.bases
                   if not (isinstance(b.value, cst.Name) and b.value.value in self.ctx.classes)]
        pending = [q for q in pending if q and q not in ("object", "builtins.object")]
        seen: set[str] = set()
        while pending:
            qualified = index.resolve(pending.pop(0))
            if not qualified or qualified in seen:
                continue
            seen.add(qualified)
            summary = index.classes.get(qualified)
            if summary is None:
                return True  # outside the project: `nn.Module`, `threading.Thread`, ...
            method = summary.methods.get(attr)
            if method is not None:
                return not any(d in _STATIC or d in _PROPERTIES for d in method.decorators)
            pending.extend(summary.bases)
        return False

    def _pins_heavy_other(self, expr, fn, cls) -> Optional[str]:
        """`x.method` (a bound method of another object) where `x` is heavy."""
        if not isinstance(expr, cst.Attribute):
            return None
        owner = expr.value
        if isinstance(owner, cst.Name) and (owner.value == "self" or owner.value in self.ctx.classes):
            return None
        if not self._local_or_self(owner, fn):
            return None  # an imported module or class (`shutil.rmtree`), a module global
        if self.ctx.heavy.is_heavy_value(owner, fn, cls):
            return f"the bound method `{self.ctx.code(expr)}` of a heavy object"
        return None

    def _local_or_self(self, owner, fn) -> bool:
        root = owner
        while isinstance(root, cst.Attribute):
            root = root.value
        return isinstance(root, cst.Name) and (root.value == "self" or self._local(root.value, fn))

    # -- decision ------------------------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        for reg in self._registrations:
            if self._undone(reg):
                continue
            if reg.pins_self and self._lives_as_long_as_process(reg.cls):
                continue
            self._report(reg)
        for cls in self.ctx.classes.values():
            self._class_registry_pins(cls)

    # -- class-level lists keeping what each instance was given -----------------------
    def _class_registry_pins(self, cls: cst.ClassDef) -> None:
        """`cls._params.append((target, name, func))` in a method that `__init__` calls with
        one of its own arguments (`self._register(engine, "connect", ...)`), or the append in
        `__init__` itself: a list, set or deque of the class body keeps every object an
        instance was given, for as long as the class lives. Entries taken out one by one
        (`remove`, `pop`, `del`) undo it; a `clear()` resets every instance at once and
        does not. Bound methods and `self` are left to the rules for registries of
        instances (a class-level `_instances` list is a singleton's)."""
        registries = self._class_containers(cls)
        if not registries:
            return
        methods = self._class_chain_methods(cls)
        registries -= self._pruned_one_by_one(methods, registries, cls)
        init = self._method(cls, "__init__")
        if not registries or init is None or self._lives_as_long_as_process(cls):
            return
        given = {p.name.value for p in (*init.params.params, *init.params.kwonly_params)[1:]}
        for method in methods:
            for call, registry, params in self._class_appends(method, registries, cls):
                pinned = [p for p in params if p in given] if method is init else [
                    a for p in params for a in self._init_arguments(init, method, p, cls) if a in given]
                if pinned:
                    self._report_class_registry(cls, init, method, call, registry, pinned[0])
                    break

    def _class_containers(self, cls: cst.ClassDef) -> set[str]:
        """Names the class body binds to a list, set or deque."""
        return {target.value for target, value in name_bindings(body_statements(cls))
                if self._strong_container(value)}

    def _class_ref(self, expr: cst.BaseExpression, registries: set[str], cls: cst.ClassDef,
                   fn: cst.FunctionDef) -> Optional[str]:
        """`cls.X`, `Klass.X`, `type(self).X`, `self.__class__.X` for a class container X."""
        if not (isinstance(expr, cst.Attribute) and expr.attr.value in registries):
            return None
        owner = expr.value
        params = fn.params.posonly_params or fn.params.params
        first = params[0].name.value if params else None
        if isinstance(owner, cst.Name) and (
                owner.value == cls.name.value or owner.value == first == "cls"):
            return expr.attr.value
        if isinstance(owner, cst.Call) and self.ctx.code(owner) == "type(self)":
            return expr.attr.value
        if isinstance(owner, cst.Attribute) and self.ctx.code(owner) == "self.__class__":
            return expr.attr.value
        return None

    def _class_appends(self, fn, registries, cls):
        """(call, container, parameters of `fn` stored by it) for each element added to a
        class container in `fn` - the value itself or an item of a tuple/list literal."""
        own = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
        for node in iter_nodes(fn.body):
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                    and node.func.attr.value in ADDERS):
                continue
            registry = self._class_ref(node.func.value, registries, cls, fn)
            positional, _ = call_args(node)
            position = ADDERS[node.func.attr.value]
            if registry is None or len(positional) <= position:
                continue
            value = positional[position].value
            items = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [value]
            stored = [i.value for i in items if isinstance(i, cst.Name) and i.value in own
                      and i.value not in ("self", "cls")]
            if stored:
                yield node, registry, stored

    def _pruned_one_by_one(self, methods, registries: set[str], cls: cst.ClassDef) -> set[str]:
        pruned = set()
        for fn in methods:
            if fn.name.value == FINALIZER:
                continue
            for node in iter_nodes(fn.body):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                        node.func.attr.value in _REMOVERS - {"clear"}:
                    name = self._class_ref(node.func.value, registries, cls, fn)
                elif isinstance(node, cst.Del):
                    target = node.target
                    name = self._class_ref(target.value, registries, cls, fn) if isinstance(
                        target, cst.Subscript) else None
                else:
                    continue
                if name is not None:
                    pruned.add(name)
        return pruned

    def _init_arguments(self, init: cst.FunctionDef, helper: cst.FunctionDef, param: str,
                        cls: cst.ClassDef) -> list[str]:
        """The names `__init__` passes as `param` of `helper` (`self._register(engine, ...)`,
        `cls`/`Klass._register(...)`)."""
        params = [p.name.value for p in (*helper.params.posonly_params, *helper.params.params)]
        bound = bool(params) and params[0] in ("self", "cls")
        positional_names = params[1:] if bound else params
        found = []
        for node in iter_nodes(init.body):
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                    and node.func.attr.value == helper.name.value
                    and isinstance(node.func.value, cst.Name)
                    and node.func.value.value in ("self", cls.name.value)):
                continue
            positional, keywords = call_args(node)
            arg = keywords.get(param)
            if arg is None and param in positional_names and positional_names.index(param) < len(positional):
                arg = positional[positional_names.index(param)]
            if arg is not None and isinstance(arg.value, cst.Name):
                found.append(arg.value.value)
        return found

    def _report_class_registry(self, cls, init, method, call, registry, given: str) -> None:
        param = find_param(init, given)
        heavy = param is not None and param.annotation is not None and \
            self.ctx.heavy.is_heavy_annotation(param.annotation.annotation)
        via = "" if method is init else f" through `{method.name.value}`"
        self.report(
            call,
            f"class-level `{cls.name.value}.{registry}` keeps `{given}`, passed to "
            f"`{cls.name.value}.__init__`, for every instance{via}: each object an instance was "
            f"given stays alive as long as the class (the process), after the instance is "
            f"gone; nothing takes single entries out (a `clear()` resets every instance at "
            f"once). Keep a `weakref.ref` to it, or remove the entry when the instance is released",
            severity=Severity.ERROR if heavy else Severity.WARNING,
        )

    def _level(self, reg: _Registration, heavy: bool) -> Severity:
        """A module-global container keeping every instance (`_LIVE.append(self)`) grows by
        one per instance made: each is one its owner meant to drop, unless the project makes
        just one for the process. A handler list of the interpreter (atexit, a signal, at-fork)
        keeps one per instance too, but what that costs depends on how many are made."""
        meant = instances_meant_to_go(self.ctx, reg.cls)
        if reg.kind == "append":
            return level(Facts(heavy=heavy, grows=True, meant_to_go=True if meant is None else meant))
        if reg.kind == "signal" and not self._chains_handlers(reg):
            # the table has one slot per signal: it keeps the latest instance, not all of them
            return level(Facts(heavy=heavy, grows=False, meant_to_go=meant))
        return level(Facts(heavy=heavy, meant_to_go=meant))

    def _chains_handlers(self, reg: _Registration) -> bool:
        """Does the class keep the handler it replaces (`old = signal.signal(...)`,
        `signal.getsignal(...)`) - so each new handler keeps the previous instance, and the
        chain grows by one per instance?"""
        return reg.saved_as is not None or any(
            isinstance(n, cst.Call) and self.ctx.qualname(n.func) == "signal.getsignal"
            for n in iter_nodes(reg.cls))

    def _undone(self, reg: _Registration) -> bool:
        names = [c.name.value for c in self._class_chain(reg.cls)]
        code = self.ctx.code
        if reg.kind == "atexit":
            wanted = code(reg.callback)
            last = reg.callback.attr.value if isinstance(reg.callback, cst.Attribute) else None
            for name in names:
                for arg in self._unregistered.get(name, ()):
                    if code(arg) == wanted:
                        return True
                    if last is not None and isinstance(arg, cst.Attribute) and arg.attr.value == last:
                        return True
            return False
        if reg.kind == "signal":
            for name in names:
                for call, fn in self._signals.get(name, ()):
                    if (
                        call is not reg.call and _same_signal(call.args[0].value, reg.call.args[0].value, code)
                        and self._pins_self(call.args[1].value, fn, reg.cls, 0) is None
                    ):
                        return True  # another handler installed: the old one restored, SIG_DFL
            if reg.saved_as is not None:
                for handler in self._handlers_reinstalled:
                    if (
                        (isinstance(handler, cst.Attribute) and handler.attr.value == reg.saved_as)
                        or (isinstance(handler, cst.Name) and handler.value == reg.saved_as)
                    ):
                        return True
            return False
        if reg.kind == "fork":
            return False  # `os.register_at_fork` has no unregister
        if reg.kind in LOOP_TRIGGERS:
            remover = LOOP_TRIGGERS[reg.kind][1]
            return any(remover in self._triggers_removed.get(name, ()) for name in names)
        # appended to a module-level container; through a registry function, only entries
        # taken out one by one undo it (a `clear()` of all at shutdown or a reset does not)
        if reg.container in self._emptied or (reg.through is None and reg.container in self._cleared):
            return True
        qualified = f"{self.ctx.module_name}.{reg.container}"
        if not self._read_anywhere(reg.container, qualified):
            # only ever added to: a keep-alive anchor, retaining on purpose ("poisoned
            # clients keep their buffers until process exit")
            return True
        return removed_in_project(self.ctx.index, qualified)

    def _read_anywhere(self, name: str, qualified: str) -> bool:
        """Is the container read in this file, or imported by another file?"""
        if self._uses.get(name, 0) > self._not_reads.get(name, 0):
            return True
        return self.ctx.index.ask(_imported_elsewhere, (qualified, os.path.abspath(self.ctx.path)))

    def _lives_as_long_as_process(self, cls: cst.ClassDef) -> bool:
        """Process-lifetime objects: singletons, module-level instances, loggers."""
        for base in cls.bases:
            if self.ctx.qualname(base.value) in _LOGGERS:
                return True
        for keyword in cls.keywords:
            if keyword.keyword is not None and keyword.keyword.value == "metaclass":
                if "singleton" in self.ctx.code(keyword.value).lower():
                    return True
        if any("singleton" in name.lower() for name in self._decorators(cls)):
            return True
        methods = self.ctx.methods(cls)
        if "__new__" in methods or self._class_level(cls, "_instance") or self._class_level(cls, "_instances"):
            return True
        if self._server_component(cls):
            return True
        kinds = self._instantiated.get(cls.name.value, set())
        if not kinds or not all(self._process_lifetime_kind(k) for k in kinds):
            return False
        # created only at import time or by a singleton getter in this file: and by no
        # function of another file
        return not self.ctx.index.ask(_instantiated_elsewhere, (
            f"{self.ctx.module_name}.{cls.name.value}", os.path.abspath(self.ctx.path)))

    def _process_lifetime_kind(self, kind: str) -> bool:
        """Does this way of making an instance make one that lives until exit?"""
        how, _, name = kind.partition(":")
        if how in ("module", "singleton"):
            return True
        if how == "entry":  # made once by the process's entry point, which nothing else calls
            return name in self._entry_points and name not in self._called_by_functions and not (
                self.ctx.index.ask(instantiated_in_functions, f"{self.ctx.module_name}.{name}"))
        if how == "registry":  # one per key, in a module dict nothing takes them out of
            return name not in self._emptied and name not in self._cleared and not removed_in_project(
                self.ctx.index, f"{self.ctx.module_name}.{name}")
        return False

    def _server_component(self, cls: cst.ClassDef) -> bool:
        """A component that runs until the process exits by design: it starts a daemon
        thread on a method of its own that nothing joins (the thread alone keeps it alive
        for good), and has no release method an owner could call before dropping it - its
        registered exit callback is its only teardown."""
        methods = self._class_chain_methods(cls)
        names = {m.name.value for m in methods}
        if any(n in names for n in release_names(self.ctx)):
            return False
        threads = [t for m in methods for t in self._daemon_threads(m, cls)]
        if not threads:
            return False
        joined = {n.func.value.attr.value for m in methods for n in iter_nodes(m.body)
                  if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                  and n.func.attr.value == "join" and isinstance(n.func.value, cst.Attribute)
                  and is_self(n.func.value.value)}
        return any(t is None or t not in joined for t in threads)

    def _daemon_threads(self, method: cst.FunctionDef, cls: cst.ClassDef) -> list[Optional[str]]:
        """`threading.Thread(target=self.<method>, daemon=True)` calls in `method`: the
        attribute of `self` each is stored in (None: not stored on `self`)."""
        found: list[Optional[str]] = []
        for node in iter_nodes(method.body):
            if not isinstance(node, (cst.Assign, cst.Expr)):
                continue
            call = node.value
            if not (isinstance(call, cst.Call) and self.ctx.qualname(call.func) in _THREADS):
                continue
            _, keywords = call_args(call)
            target, daemon = keywords.get("target"), keywords.get("daemon")
            if not (
                target is not None and isinstance(target.value, cst.Attribute) and is_self(target.value.value)
                and self._method(cls, target.value.attr.value) is not None
                and daemon is not None and isinstance(daemon.value, cst.Name) and daemon.value.value == "True"
            ):
                continue
            stored = None
            if isinstance(node, cst.Assign):
                t = node.targets[0].target
                stored = t.attr.value if isinstance(t, cst.Attribute) and is_self(t.value) else None
            found.append(stored)
        return found

    def _decorators(self, cls: cst.ClassDef) -> list[str]:
        names = []
        for d in cls.decorators:
            target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            names.append(self.ctx.qualname(target) or self.ctx.code(target))
        return names

    def _report(self, reg: _Registration) -> None:
        cls_name = reg.cls.name.value
        where = f"`{cls_name}.{reg.function.name.value}`"
        heavy = self._holds_heavy(reg.cls) if reg.pins_self else True
        held = "the instance" if reg.pins_self else "that object"
        held += " and the models/tensors it holds stay" if heavy else " stays"
        until = "the handler is replaced" if reg.kind == "signal" else "the interpreter exits"
        if reg.kind == "atexit":
            registry = "`atexit`'s callback list"
            undo = f"no method of `{cls_name}` calls `atexit.unregister(...)` for it"
            if any(m.name.value == FINALIZER for m in self._class_chain_methods(reg.cls)
                   if self._unregisters_in(m, reg.callback)):
                undo += " (`__del__` cannot: it never runs while the registry holds the instance)"
        elif reg.kind == "signal":
            registry = "the signal-handler table"
            undo = f"no method of `{cls_name}` restores the previous handler"
        elif reg.kind == "fork":
            registry = "`os.register_at_fork`'s hooks"
            undo = ("they can never be unregistered: register a function that reaches the instance "
                    "through a `weakref.WeakMethod` and does nothing once it is gone")
        elif reg.kind in LOOP_TRIGGERS:
            _, remover, registry = LOOP_TRIGGERS[reg.kind]
            until = "it is removed"
            undo = f"no method of `{cls_name}` calls `{remover}(...)`"
        elif reg.through is not None:
            registry = f"module global `{reg.container}` (through `{reg.through}()`)"
            undo = ("nothing takes single entries out again"
                    + (" (only a `clear()` of them all)" if reg.container in self._cleared else ""))
        else:
            registry = f"module global `{reg.container}`"
            undo = "nothing takes it out again"
        message = (
            f"{reg.what} is registered in {registry} by {where}: {held} alive until {until}; "
            f"{undo}"
        )
        others = self._other_holders(reg) if reg.kind == "atexit" and reg.pins_self else []
        if others and self._unregister_target(reg) is not None:
            # unregistering this one alone would free nothing: say what else keeps it
            message += "; " + ", ".join(
                f"`{self.ctx.code(o.callback)}` (registered by `{cls_name}.{o.function.name.value}`)"
                for o in others[:3]) + " also keep" + ("s" if len(others) == 1 else "") + " the instance"
        self.report(
            reg.call,
            message,
            severity=self._level(reg, heavy),
            # unregistering something light frees nothing that matters: no fix for it
            fix=self._fix(reg) if reg.kind == "atexit" and heavy else None,
            statement=reg.statement,
        )

    def _holds_heavy(self, cls: cst.ClassDef) -> bool:
        """A heavy class, or one that assigns a heavy value to an attribute in this file
        (`self.model = model` with `model: nn.Module`)."""
        oracle = self.ctx.heavy
        if oracle.is_heavy_class(cls):
            return True
        for method in self._class_chain_methods(cls):
            for key, assignments in oracle.local_assignments(method).items():
                if not key.startswith("self."):
                    continue
                for value, ann in assignments:
                    param = find_param(method, value.value) if isinstance(value, cst.Name) else None
                    if param is not None and _holds_heavy_items(oracle, param.annotation):
                        return True
                    if oracle.is_heavy_annotation(ann) or _holds_heavy_items(oracle, ann) or (
                        value is not None and oracle.is_heavy_value(value, method, cls)
                    ):
                        return True
        return False

    def _unregisters_in(self, method: cst.FunctionDef, callback) -> bool:
        code = self.ctx.code(callback)
        found = False

        class _Finder(cst.CSTVisitor):
            def visit_Call(inner, node: cst.Call) -> None:
                nonlocal found
                if (
                    self.ctx.qualname(node.func) == ATEXIT_UNREGISTER and node.args
                    and self.ctx.code(node.args[0].value) == code
                ):
                    found = True

        visit(method.body, _Finder())
        return found

    # -- fix -----------------------------------------------------------------------
    def _unregister_target(self, reg: _Registration) -> Optional[cst.FunctionDef]:
        """The release method `atexit.unregister(self.<m>)` may go into: only where what the
        registration would do at exit has then been done - the release is the callback
        itself or calls it on `self` -, and where the release's end is reached."""
        callback = reg.callback
        if not (
            reg.kind == "atexit" and isinstance(callback, cst.Attribute) and isinstance(callback.value, cst.Name)
            and callback.value.value == "self" and self._method(reg.cls, callback.attr.value) is not None
        ):
            return None  # only `self.<method>` can be named again in the release method
        release = fix_release_method(self.ctx, reg.cls)
        if release is None or release is reg.function or not end_reachable(release):
            return None
        name = callback.attr.value
        if name != release.name.value and name not in self.ctx.release.called_on_self(reg.cls, release.name.value):
            return None  # the exit call's work (`cleanup_files()`) would no longer happen
        return release

    def _other_holders(self, reg: _Registration) -> list[_Registration]:
        """Registrations of the same class that keep the instance too and that no fix
        takes out: unregistering this one alone frees nothing."""
        return [other for other in self._registrations
                if other is not reg and other.cls is reg.cls and other.pins_self and not self._undone(other)
                and self._unregister_target(other) is None]

    def _fix(self, reg: _Registration):
        release = self._unregister_target(reg)
        if release is None or (reg.pins_self and self._other_holders(reg)):
            return None
        callback = reg.callback
        spelling, imports = _unregister_spelling(self.ctx)
        stmt = cst.parse_statement(f"{spelling}({self.ctx.code(callback)})")
        edited = append_at_end(release, [stmt])
        if edited is None:
            return None
        message = f"Call `atexit.unregister({self.ctx.code(callback)})` at the end of `{release.name.value}()`"
        target = self._method(reg.cls, callback.attr.value)
        if target is None or not _returns_when_done(target):
            # after an explicit `close()`, the exit-time call no longer runs: the same only
            # when a second call does nothing, which the model proves by an early return
            return self.fix(f"{message}: `{self.ctx.code(callback)}()` no longer runs again at exit "
                            f"after an explicit `{release.name.value}()`",
                            {release: edited}, imports=imports,
                            applicability=Applicability.UNSAFE)
        return self.fix(message, {release: edited}, imports=imports)


def _holds_heavy_items(oracle, ann) -> bool:
    """A container annotated with heavy items (`dict[str, torch.Tensor]`, `list[nn.Module]`)."""
    expr = ann.annotation if isinstance(ann, cst.Annotation) else ann
    if not isinstance(expr, cst.Subscript):
        return False
    return any(isinstance(e.slice, cst.Index) and (
        oracle.is_heavy_annotation(e.slice.value) or _holds_heavy_items(oracle, e.slice.value))
        for e in expr.slice)


def _returns_when_done(fn: cst.FunctionDef) -> bool:
    """Does `fn` begin (after its docstring) with `if <test of self.x>: return` and assign
    that `self.x` on its way: a second call returns at once?"""
    statements = [s for s in body_statements(fn)
                  if not (isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Expr)
                          and isinstance(s.body[0].value, cst.SimpleString))]
    if not statements or not isinstance(statements[0], cst.If) or statements[0].orelse is not None:
        return False
    first = statements[0]
    inner = list(first.body.body)  # statements, or the small statements of `if x: return`
    last = inner[-1] if len(inner) == 1 else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    if not (isinstance(last, cst.Return) and last.value is None):
        return False
    tested = {n.attr.value for n in iter_nodes(first.test)
              if isinstance(n, cst.Attribute) and is_self(n.value)}
    assigned = set()
    for node in iter_nodes(fn.body):
        if isinstance(node, cst.Assign):
            assigned |= {t.target.attr.value for t in node.targets
                         if isinstance(t.target, cst.Attribute) and is_self(t.target.value)}
    return bool(tested & assigned)


def _is_main_guard(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    return any(isinstance(x, cst.Name) and x.value == "__name__" for x in sides) and any(
        isinstance(x, cst.SimpleString) and x.evaluated_value == "__main__" for x in sides)


def _called_names(node: cst.CSTNode) -> set[str]:
    """Functions called by bare name anywhere under `node`."""
    return {n.func.value for n in iter_nodes(node) if isinstance(n, cst.Call) and isinstance(n.func, cst.Name)}


def _process_target(call: cst.Call) -> Optional[str]:
    """`Process(target=run)`, `ctx.Process(target=run, ...)`: the function a new process runs."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if name != "Process":
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "target" and isinstance(arg.value, cst.Name):
            return arg.value.value
    return None


def _is_value(value: cst.BaseExpression, call: cst.Call, names: set[str]) -> bool:
    """Is `value` the instance `call` makes: the call itself or a name it was bound to?"""
    return value is call or (isinstance(value, cst.Name) and value.value in names)


def _same_signal(a: cst.BaseExpression, b: cst.BaseExpression, code) -> bool:
    """The same signal, or one of them a variable (`for sig in (...): signal.signal(sig, h)`)."""
    return code(a) == code(b) or isinstance(a, cst.Name) or isinstance(b, cst.Name)


def _nested_function(fn: cst.FunctionDef, name: str) -> Optional[cst.FunctionDef]:
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            return stmt
    return None


def _returns_closure_over_self(method: cst.FunctionDef) -> bool:
    """`def make_handler(self): def handler(...): self.x(); return handler`."""
    body = method.body.body if isinstance(method.body, cst.IndentedBlock) else ()
    nested = {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Return) and small.value is not None:
                    value = small.value
                    if isinstance(value, cst.Lambda) and _mentions_self(value.body):
                        return True
                    if isinstance(value, cst.Name) and value.value in nested and _mentions_self(nested[value.value].body):
                        return True
    return False


def _unregister_spelling(ctx) -> tuple[str, tuple[str, ...]]:
    """How a method spells `atexit.unregister`: only module-level imports count."""
    top = ctx.module_imports
    local = top.local_name_for("atexit")
    if local is not None:
        return f"{local}.unregister", ()
    local = top.local_name_for(ATEXIT_UNREGISTER)
    if local is not None:
        return local, ()
    return ATEXIT_UNREGISTER, ("atexit",)


def _imported_elsewhere(index, key: tuple[str, str]) -> bool:
    """Does a project file other than `here` import `qualified`?"""
    qualified, here = key
    suffix = "." + qualified.rsplit(".", 1)[-1]
    return any(
        summary.path != here and any(
            target == qualified or (target.endswith(suffix) and index.resolve(target) == qualified)
            for target in summary.imports.values())
        for summary in index.files.values())


def _instantiated_elsewhere(index, key: tuple[str, str]) -> bool:
    qualified, here = key
    return instantiated_in_functions(index, qualified, outside=here)
