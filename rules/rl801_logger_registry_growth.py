"""RL801 logger-registry-growth."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions, decorator_names, is_self
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.analysis.heavy import find_param
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.once import once_per_process
from retainlint.rules.prefilters.rl801 import LoggerRegistryGrowthPrefilter
from retainlint.analysis.rule import Example, Rule
from retainlint.analysis.holding import ctx_code, has_heavy_attribute, reaches

_GET_LOGGER = frozenset({"logging.getLogger", "logging.Logger.manager.getLogger"})
# Functions that hand out a logger from the logging registry (their own or a wrapper's).
_LOGGER_FACTORY_NAMES = frozenset({"getLogger", "get_logger", "init_logger"})
# Calls whose result differs on every call.
_PER_CALL = frozenset(
    {
        "id", "builtins.id", "next", "builtins.next", "time.time", "time.time_ns",
        "time.monotonic", "time.monotonic_ns", "time.perf_counter", "time.perf_counter_ns",
        "datetime.datetime.now", "datetime.datetime.utcnow", "os.urandom",
        "secrets.token_hex", "secrets.token_urlsafe", "threading.get_ident",
    }
)
_PER_CALL_PREFIXES = ("uuid.", "random.", "itertools.count")
# Parts of identifiers that name per-request / per-connection values.
_VOLATILE_WORDS = frozenset(
    {
        "request", "requests", "req", "conn", "connection", "client", "session", "peer",
        "socket", "sock", "addr", "address", "remote", "uuid", "uid", "guid", "trace", "txn",
        "transaction", "job", "query", "user", "nonce", "counter", "count", "seq", "serial",
    }
)
_STABLE_ATTRS = frozenset({"__name__", "__qualname__", "__module__", "__class__"})
_NOT_INSTANCE = frozenset(
    {"staticmethod", "classmethod", "builtins.staticmethod", "builtins.classmethod"}
)
_MAX_DEPTH = 4


@dataclass
class _Call:
    node: cst.Call
    statement: Optional[cst.CSTNode]
    function: cst.FunctionDef
    cls: Optional[cst.ClassDef]  # the class of the method (or enclosing method)
    guards: tuple  # tests of the enclosing `if`/`while` statements, innermost last


class LoggerRegistryGrowth(Rule):
    prefilter = LoggerRegistryGrowthPrefilter
    name = "logger-registry-growth"
    summary = "Per-instance logger names and per-instance handlers on shared loggers grow the logging registry forever"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports two ways code makes the process-wide logging registry grow:

- `logging.getLogger(name)` inside a function, where `name` varies per instance or per
  call: an f-string, concatenation, `%`/`.format()` or `str()` built from `id(...)`, a
  uuid, a counter (`next(...)`, a variable incremented with `+=` somewhere in the file),
  the time, or a request/connection/session/client value (`request.request_id`,
  `conn.peer`, `session_id`, `sock.fileno()`), directly or through a local variable or a
  `self.<attr>` assigned so. `logger.getChild(suffix)` is the same registration (the child
  goes into the manager too). Names built from `__name__`, class names and configuration
  are stable, and a class (or function) that takes its loggers out of the manager again
  (`logging.root.manager.loggerDict.pop(name)`, `del ...loggerDict[name]`) is not reported.
- `logger.addHandler(...)` on a shared logger (a module-level logger, a named
  `logging.getLogger(...)`, the root logger, `self.logger` set from one) inside a method
  (`__init__` or any other: it runs per instance or per call) when no
  `removeHandler(...)` (or `handlers.clear()`) appears in the class, and the call is
  not guarded by a check that makes it idempotent (`if not logger.handlers:`,
  `if self._handler is None:`; not a test of a local the same call made, `if handler is
  not None:`). A plain function (or a static method) is taken for one-time configuration
  (`setup_logging()`, `log_to_stderr()`) unless it handles a request - it takes a
  `request`, `conn`, `session`, `client`... parameter - and builds the handler itself, or
  a method of the file that runs per instance calls it (`self.log = Client.null_logger()`
  in `__init__`). A method is taken for one-time configuration too when it runs once
  per process: it runs at most once per instance (`__init__`, a method that returns or
  raises when a flag it sets is already set, or one only such methods call), and the
  class's only instance is built at module level or by an entry point (a function called
  once, from module-level code such as `if __name__ == "__main__":`), by no other file.

Reported as an error when the handler holds `self` of a class holding a model, as a
warning otherwise.

Also, as an error, a `logging.handlers.MemoryHandler(...)` built without a target (no
third argument, no `target=`, and no `setTarget(...)` in the file) and put on a logger
with `addHandler`: `MemoryHandler.flush()` empties the buffer only into a target, so it
keeps every record for the life of the process (Tribler's log endpoint). A subclass that
trims the buffer in its own `flush()` is not reported.

## Why it leaks
`logging.getLogger` stores every logger it creates in `logging.Logger.manager.loggerDict`
for the life of the process, so a name per instance or per request is an unbounded
dictionary. A target-less `MemoryHandler` appends every record to its buffer and never
clears it; a record logged with `exc_info` keeps the traceback and its frames. A handler added to a shared logger stays on it until removed: one more per
instance, each with a lock and often an open file or a reference back to its creator.

## Example
```python
import logging

class Connection:
    def __init__(self, peer):
        self.log = logging.getLogger(f"net.conn.{id(self)}")  # RL801

    def connection_made(self, sock):
        self.log = self.log.getChild(str(sock.fileno()))  # RL801

class Job:
    def __init__(self, path):
        logging.getLogger("jobs").addHandler(logging.FileHandler(path))  # RL801
```

## Fix (suggestion only)
Use one module-level logger and carry per-instance context in a `logging.LoggerAdapter`
or `extra=`; remove handlers you add in the object's release method (`close()`,
`shutdown()`, `__exit__`).
"""

    valid = [
        # a MemoryHandler with a target, and a subclass that trims its buffer
        """
import logging
from logging.handlers import MemoryHandler

class RotatingMemoryHandler(MemoryHandler):
    def flush(self):
        self.buffer = self.buffer[-self.capacity:]

logging.getLogger().addHandler(MemoryHandler(100, logging.ERROR, logging.StreamHandler()))
logging.getLogger().addHandler(RotatingMemoryHandler(400))
""",
        # stable names: module, class name, configuration
        """
import logging

logger = logging.getLogger(__name__)

class Worker:
    def __init__(self, name):
        self.log = logging.getLogger(f"{__name__}.{type(self).__name__}")
        self.named = logging.getLogger(name)

def get_logger(name):
    return logging.getLogger(name)
""",
        # handler removed on release; idempotent setup; module-level setup
        """
import logging

logger = logging.getLogger("app")
logger.addHandler(logging.NullHandler())

class Capture:
    def __enter__(self):
        self.h = logging.StreamHandler()
        logger.addHandler(self.h)
        return self

    def __exit__(self, *exc):
        logger.removeHandler(self.h)

class Service:
    def __init__(self):
        if not logger.handlers:
            logger.addHandler(logging.StreamHandler())

def setup_logging():
    logger.addHandler(logging.StreamHandler())
""",
        # a child logger with a fixed suffix; per-call loggers taken out of the manager again
        """
import logging
import uuid

class Pool:
    def __init__(self, log):
        self.log = log.getChild("pool")

    def run(self, job):
        log = logging.getLogger(f"jobs.{uuid.uuid4()}")
        try:
            job(log)
        finally:
            logging.root.manager.loggerDict.pop(log.name, None)
""",
        # a handler on a logger the object owns is the object's business
        """
import logging

class Tool:
    def __init__(self):
        self.logger = logging.Logger("tool")
        self.logger.addHandler(logging.StreamHandler())
""",
    ]
    invalid = [
        # a target-less MemoryHandler on the root logger (Tribler)
        Example(
            """
import logging
from logging.handlers import MemoryHandler

recent = MemoryHandler(10000)
logging.getLogger().addHandler(recent)
""",
            lines=[5],
        ),
        Example(
            """
import logging
import uuid

class Connection:
    def __init__(self, peer):
        self.log = logging.getLogger(f"net.conn.{id(self)}")

def handle(request):
    log = logging.getLogger("req." + request.request_id)
    name = "job-%s" % uuid.uuid4()
    return log, logging.getLogger(name)
""",
            lines=[7, 10, 12],
        ),
        # a child logger per connection
        Example(
            """
import logging

class Transport:
    def __init__(self, name):
        self.log = logging.getLogger(name)

    def connection_made(self, sock):
        self.log = self.log.getChild(str(sock.fileno()))
""",
            lines=[9],
        ),
        # handlers on shared loggers, per instance and per call
        Example(
            """
import logging
from logging import getLogger

logger = getLogger("jobs")

class Job:
    def __init__(self, path):
        logging.getLogger("jobs").addHandler(logging.FileHandler(path))
        logger.addHandler(logging.StreamHandler())

def run_request(request):
    handler = logging.FileHandler(request.log_path)
    logging.getLogger().addHandler(handler)
""",
            lines=[9, 10, 14],
        ),
        # set-up that refuses a second call, but one instance per request; a method with
        # no such guard
        Example(
            """
import logging

class App:
    def __init__(self):
        self._ready = False

    def setup(self):
        if self._ready:
            return
        self._ready = True
        logging.getLogger("app").addHandler(logging.StreamHandler())

    def reload(self):
        logging.getLogger("app").addHandler(logging.StreamHandler())

def handle(request):
    app = App()
    app.setup()

if __name__ == "__main__":
    for request in range(3):
        handle(request)
""",
            lines=[12, 15],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._get_logger: list[_Call] = []
        self._add_handler: list[_Call] = []
        self._removes: set[int] = set()  # ids of classes / functions that remove handlers
        self._forgets: set[int] = set()  # ... that take loggers out of `loggerDict`
        self._incremented: set[str] = set()  # code of targets of `+=`
        self._guards: list[cst.BaseExpression] = []
        self._module_loggers: Optional[dict[str, cst.BaseExpression]] = None
        self._memory_handlers: list[tuple[cst.Call, Optional[cst.CSTNode]]] = []
        self._attached: set[str] = set()  # code of what `addHandler` is given
        self._sets_target = False

    # -- collection ----------------------------------------------------------------
    def visit_If(self, node: cst.If) -> None:
        self._guards.append(node.test)

    def leave_If(self, node: cst.If) -> None:
        self._guards.pop()

    def visit_While(self, node: cst.While) -> None:
        self._guards.append(node.test)

    def leave_While(self, node: cst.While) -> None:
        self._guards.pop()

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
            self._incremented.add(ctx_code(self.ctx, node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # a call, or a reference handed to a callback (`stack.callback(log.removeHandler, h)`)
        if node.attr.value == "removeHandler":
            self._mark_removal()
        # `manager.loggerDict.pop(name)`, `del ...loggerDict[name]`: loggers made per call
        # are forgotten again (annotated-logger)
        elif node.attr.value in _FORGETTERS and _is_logger_dict(node.value):
            self._mark_removal(self._forgets)

    def visit_Del(self, node: cst.Del) -> None:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = t.value if isinstance(t, cst.Element) else t
            if isinstance(t, cst.Subscript) and _is_logger_dict(t.value):
                self._mark_removal(self._forgets)

    def visit_Call(self, node: cst.Call) -> None:
        scope = self.ctx.scope
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "clear" and (
            isinstance(func.value, cst.Attribute) and func.value.attr.value == "handlers"
        ):
            self._mark_removal()
            return
        if self.ctx.qualname(func) == _MEMORY_HANDLER and not _has_target(node):
            self._memory_handlers.append((node, scope.statement))
        if isinstance(func, cst.Attribute) and func.attr.value == "setTarget":
            self._sets_target = True
        if isinstance(func, cst.Attribute) and func.attr.value == "addHandler" and node.args:
            self._attached.add(ctx_code(self.ctx, node.args[0].value))
        fn = scope.function
        if fn is None:
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "addHandler":
            self._add_handler.append(self._call(node))
        elif node.args and (self.ctx.qualname(func) in _GET_LOGGER or (
                isinstance(func, cst.Attribute) and func.attr.value == "getChild")):
            self._get_logger.append(self._call(node))  # `getChild` registers its child too

    def visit_Assign(self, node: cst.Assign) -> None:
        # `logger.handlers = []` also removes handlers
        for t in node.targets:
            if isinstance(t.target, cst.Attribute) and t.target.attr.value == "handlers":
                self._mark_removal()

    def _mark_removal(self, into: Optional[set[int]] = None) -> None:
        into = self._removes if into is None else into
        scope = self.ctx.scope
        for c in scope.classes:
            into.add(id(c))
        for f in scope.functions:
            into.add(id(f))

    def _call(self, node: cst.Call) -> _Call:
        scope = self.ctx.scope
        cls = None
        for fn in reversed(scope.functions):
            for c in reversed(scope.classes):
                if any(f is fn for f in body_functions(c)):
                    cls = c
                    break
            if cls is not None:
                break
        return _Call(node, scope.statement, scope.function, cls, tuple(self._guards))

    # -- judgement -----------------------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        for call in self._get_logger:
            self._judge_get_logger(call)
        for call in self._add_handler:
            self._judge_add_handler(call)
        if not self._sets_target:
            for handler, statement in self._memory_handlers:
                self._judge_memory_handler(handler, statement)

    def _judge_memory_handler(self, handler: cst.Call, statement: Optional[cst.CSTNode]) -> None:
        """`MemoryHandler(capacity)` with no target, put on a logger: its `flush()` only
        empties the buffer into a target, so the buffer keeps every record."""
        code = ctx_code(self.ctx, handler)
        names = {code}
        line = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and statement.body else None
        if isinstance(line, cst.Assign) and line.value is handler:
            names |= {ctx_code(self.ctx, t.target) for t in line.targets}
        if not names & self._attached:
            return
        self.report(
            handler,
            f"`{_short(code)}` has no target, so its buffer is never emptied (`MemoryHandler.flush()` "
            "clears it only after handing the records to a target): once on a logger it keeps "
            "every record - message, arguments and, for `logger.exception`, the traceback "
            "with its frames - for the life of the process; give it a target, or subclass it "
            "with a `flush()` that trims the buffer",
            severity=Severity.ERROR,
            statement=statement,
            consequence=Consequence("every record logged to it, with its arguments and any traceback's frames",
                                    f"the buffer of `{_short(code)}`", "the process", "one record per message it handles"),
        )

    def _name_arg(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        for arg in call.args:
            if arg.keyword is None and not arg.star:
                return arg.value
            if arg.keyword is not None and arg.keyword.value == "name":
                return arg.value
        return None

    def _judge_get_logger(self, call: _Call) -> None:
        name = self._name_arg(call.node)
        if name is None:
            return
        why = self._varies(name, call.function, call.cls, 0)
        if why is None or self._forgotten(call):
            return
        what = "child logger name" if _is_get_child(call.node) else "logger name"
        self.report(
            call.node,
            f"{what} `{_short(ctx_code(self.ctx, name))}` varies per instance or call "
            f"({why}): the logging manager keeps every logger created for the life of the "
            "process; use one module-level logger with a `LoggerAdapter` or `extra=` for the "
            "per-instance context",
            statement=call.statement,
            consequence=Consequence(f"each {what.removesuffix(' name')} named by `{_short(ctx_code(self.ctx, name))}`",
                                    "the logging manager's `loggerDict`", "the process",
                                    f"one logger per distinct value of {why}"),
        )

    def _forgotten(self, call: _Call) -> bool:
        """Does the class (or function) that makes the logger also take loggers out of
        the manager's `loggerDict`?"""
        return id(call.function) in self._forgets or (call.cls is not None and id(call.cls) in self._forgets)

    # -- does a logger name vary per instance / per call? --------------------------
    def _varies(self, expr, fn, cls, depth: int) -> Optional[str]:
        if expr is None or depth > _MAX_DEPTH:
            return None
        nxt = depth + 1
        if isinstance(expr, cst.FormattedString):
            for part in expr.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    why = self._varies(part.expression, fn, cls, nxt)
                    if why:
                        return why
            return None
        if isinstance(expr, cst.ConcatenatedString):
            return self._varies(expr.left, fn, cls, nxt) or self._varies(expr.right, fn, cls, nxt)
        if isinstance(expr, cst.BinaryOperation):
            if isinstance(expr.operator, cst.Add):
                return self._varies(expr.left, fn, cls, nxt) or self._varies(expr.right, fn, cls, nxt)
            if isinstance(expr.operator, cst.Modulo):
                return self._varies(expr.right, fn, cls, nxt)
            return None
        if isinstance(expr, (cst.Tuple, cst.List)):
            for e in expr.elements:
                why = self._varies(e.value, fn, cls, nxt)
                if why:
                    return why
            return None
        if isinstance(expr, cst.Call):
            return self._call_varies(expr, fn, cls, nxt)
        if isinstance(expr, cst.Name):
            return self._name_varies(expr, fn, cls, nxt)
        if isinstance(expr, cst.Attribute):
            return self._attribute_varies(expr, fn, cls, nxt)
        if isinstance(expr, cst.Subscript):
            return self._varies(expr.value, fn, cls, nxt)
        return None

    def _call_varies(self, call: cst.Call, fn, cls, depth) -> Optional[str]:
        qualified = self.ctx.qualname(call.func) or ""
        if qualified in _PER_CALL or qualified.startswith(_PER_CALL_PREFIXES):
            return f"`{_short(ctx_code(self.ctx, call))}`"
        func = call.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in ("format", "join"):
                for arg in call.args:
                    why = self._varies(arg.value, fn, cls, depth)
                    if why:
                        return why
                return self._varies(func.value, fn, cls, depth) if method == "format" else None
            if method in ("lower", "upper", "strip", "replace", "removeprefix", "removesuffix"):
                return self._varies(func.value, fn, cls, depth)
            # what a per-request object answers varies with it (`sock.fileno()`)
            receiver = func.value
            if isinstance(receiver, cst.Name) and fn is not None and self._volatile(receiver.value) \
                    and find_param(fn, receiver.value) is not None:
                return f"`{_short(ctx_code(self.ctx, call))}`"
            return None
        if qualified in ("str", "repr", "hex", "format", "builtins.str") and call.args:
            return self._varies(call.args[0].value, fn, cls, depth)
        return None

    def _volatile(self, identifier: str) -> bool:
        parts = [p for p in identifier.lower().split("_") if p]
        return any(p in _VOLATILE_WORDS for p in parts)

    def _name_varies(self, name: cst.Name, fn, cls, depth) -> Optional[str]:
        value = name.value
        if value in self._incremented:
            return f"counter `{value}`"
        if fn is None:
            return None
        if find_param(fn, value) is not None:
            return f"`{value}`" if self._volatile(value) else None
        for assigned, _ in self.ctx.heavy.local_assignments(fn).get(value, ()):
            why = self._varies(assigned, fn, cls, depth)
            if why:
                return why
        return None

    def _attribute_varies(self, attr: cst.Attribute, fn, cls, depth) -> Optional[str]:
        name = attr.attr.value
        if name in _STABLE_ATTRS:
            return None
        text = ctx_code(self.ctx, attr)
        if text in self._incremented:
            return f"counter `{text}`"
        if self._volatile(name):
            return f"`{_short(text)}`"
        owner = attr.value
        if is_self(owner) and cls is not None:
            # what the class assigns to `self.<name>`
            for method in self.ctx.methods(cls).values():
                for assigned, _ in self.ctx.heavy.local_assignments(method).get(f"self.{name}", ()):
                    why = self._varies(assigned, method, cls, depth)
                    if why:
                        return why
            return None
        if isinstance(owner, cst.Name):
            if self._volatile(owner.value) and fn is not None and find_param(fn, owner.value) is not None:
                return f"`{_short(text)}`"
            return None
        return self._varies(owner, fn, cls, depth)  # `uuid.uuid4().hex`

    # -- handlers on shared loggers -----------------------------------------------
    def _judge_add_handler(self, call: _Call) -> None:
        node = call.node
        receiver = node.func.value
        if not call.node.args:
            return
        handler = call.node.args[0].value
        fn = call.function
        shared = self._shared_logger(receiver, fn, call.cls, 0)
        if shared is None:
            return
        if id(fn) in self._removes or (call.cls is not None and id(call.cls) in self._removes):
            return
        if self._guarded(call, receiver, handler):
            return
        is_method = self._per_instance(fn, call)
        if not is_method and not (self._built_here(handler, fn) and (
                self._handles_requests(fn) or self._called_per_instance(fn) or self._called_in_a_loop(fn))):
            return
        if is_method and call.cls is not None and once_per_process(self.ctx, call.cls, fn):
            return  # the start-up of the process's one instance configures logging once
        reached = call.cls is not None and reaches(self.ctx, handler, cst.Name("self"), fn, call.cls) is not None
        heavy = reached and call.cls is not None and has_heavy_attribute(self.ctx, call.cls)
        where = "per instance" if is_method and fn.name.value == "__init__" else "per call"
        owner = call.cls.name.value if call.cls is not None else ""
        in_method = call.cls is not None and any(f is fn for f in body_functions(call.cls))
        kept = f"each handler `{_short(ctx_code(self.ctx, handler))}` added" + (
            f", with the `{owner}` instance it reaches" + (" (heavy)" if heavy else "") if reached else "")
        method = f"{owner}.{fn.name.value}" if in_method else fn.name.value
        self.report(
            node,
            f"`{_short(ctx_code(self.ctx, node))}` adds a handler to the shared logger "
            f"{shared} {where}, and nothing removes it: handlers accumulate on the logger "
            "for the life of the process; remove it on release (`removeHandler` in "
            "`close()`/`shutdown()`), or configure handlers once at start-up",
            severity=Severity.ERROR if heavy else Severity.WARNING,
            statement=call.statement,
            consequence=Consequence(kept, f"the handlers of the shared logger {shared}", "the process",
                                    f"one handler per `{owner}` made" if where == "per instance"
                                    else f"one handler per call of `{method}()`"),
        )

    def _per_instance(self, fn: cst.FunctionDef, call: _Call) -> bool:
        """Runs per instance (or per call of an instance method): a method that is not a
        static or class method, or a closure inside a method."""
        if call.cls is None:
            return False
        if any(f is fn for f in body_functions(call.cls)):
            return not (decorator_names(self.ctx, fn) & _NOT_INSTANCE)
        return True

    def _called_per_instance(self, fn: cst.FunctionDef) -> bool:
        """Does an instance method of the file call `fn` by its name (`self.fn()`,
        `Cls.fn()`, `fn()`), where the process does not make that class's one instance at
        start-up: `fn` then runs once per instance made, whatever it is named. Not when that
        class removes handlers: its release undoes what `fn` added for it."""
        name = fn.name.value
        for cls in self.ctx.classes.values():
            if id(cls) in self._removes:
                continue
            for method in body_functions(cls):
                if method is fn or decorator_names(self.ctx, method) & _NOT_INSTANCE:
                    continue
                if any(isinstance(n, cst.Call) and (
                        isinstance(n.func, cst.Name) and n.func.value == name
                        or isinstance(n.func, cst.Attribute) and n.func.attr.value == name)
                       for n in iter_nodes(method.body)) and not once_per_process(self.ctx, cls, method):
                    return True
        return False

    def _called_in_a_loop(self, fn: cst.FunctionDef) -> bool:
        """Does the file call `fn` by its name inside the body of a loop (`for call in
        workflow.calls: run_task(call)`): it runs once per item, whatever it is named."""
        return fn.name.value in self._called_in_loops

    @cached_property
    def _called_in_loops(self) -> frozenset[str]:
        """The names (`f`, `x.f`'s `f`) the file calls inside a loop's body: read once per file."""
        return frozenset(n.func.value if isinstance(n.func, cst.Name) else n.func.attr.value
                         for loop in iter_nodes(self.ctx.module) if isinstance(loop, (cst.For, cst.While))
                         for n in iter_nodes(loop.body)
                         if isinstance(n, cst.Call) and isinstance(n.func, (cst.Name, cst.Attribute)))

    def _shared_logger(self, expr, fn, cls, depth) -> Optional[str]:
        """How to name `expr` when it is a logger from the logging registry (module
        level, named, root), else None."""
        if depth > _MAX_DEPTH:
            return None
        text = f"`{_short(ctx_code(self.ctx, expr))}`"
        if isinstance(expr, cst.Call):
            qualified = self.ctx.qualname(expr.func) or ""
            last = qualified.rsplit(".", 1)[-1]
            if qualified in _GET_LOGGER or last in _LOGGER_FACTORY_NAMES:
                name = self._name_arg(expr)
                if name is not None and self._varies(name, fn, cls, 0):
                    return None  # reported as a per-instance name already
                return text
            return None
        if isinstance(expr, cst.Attribute):
            if self.ctx.qualname(expr) == "logging.root":
                return text
            if is_self(expr.value) and cls is not None:
                for method in self.ctx.methods(cls).values():
                    for assigned, _ in self.ctx.heavy.local_assignments(method).get(
                            f"self.{expr.attr.value}", ()):
                        if assigned is not None and self._shared_logger(assigned, method, cls, depth + 1):
                            return text
            return None
        if isinstance(expr, cst.Name):
            if fn is not None and find_param(fn, expr.value) is not None:
                return None
            local = self.ctx.heavy.local_assignments(fn).get(expr.value, ()) if fn is not None else ()
            if local:
                for assigned, _ in local:
                    if assigned is not None and self._shared_logger(assigned, fn, cls, depth + 1):
                        return text
                return None
            module_value = self._module_logger_values().get(expr.value)
            if module_value is not None and self._shared_logger(module_value, None, None, depth + 1):
                return f"{text} (module global)"
        return None

    def _module_logger_values(self) -> dict[str, cst.BaseExpression]:
        if self._module_loggers is None:
            found: dict[str, cst.BaseExpression] = {}
            for stmt in self.ctx.module.body:
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
                            for t in small.targets:
                                if isinstance(t.target, cst.Name):
                                    found.setdefault(t.target.value, small.value)
                        elif (isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)
                              and isinstance(small.value, cst.Call)):
                            found.setdefault(small.target.value, small.value)
            self._module_loggers = found
        return self._module_loggers

    def _guarded(self, call: _Call, receiver, handler) -> bool:
        """Inside an `if`/`while` that makes the call idempotent: its test looks at the
        logger's handlers, at the handler, or at the logger itself. Not a test of a local
        of the function (`if handler is not None:`): made fresh by every call, it says
        nothing about what the logger holds already."""
        names = {ctx_code(self.ctx, receiver)}
        local = isinstance(handler, cst.Name) and bool(self.ctx.heavy.local_assignments(call.function).get(
            handler.value))
        if isinstance(handler, (cst.Name, cst.Attribute)) and not local:
            names.add(ctx_code(self.ctx, handler))
        for test in call.guards:
            text = ctx_code(self.ctx, test)
            if "handlers" in text or "hasHandlers" in text or "propagate" in text:
                return True
            if any(n and n in text for n in names):
                return True
        return False

    def _built_here(self, handler, fn) -> bool:
        if isinstance(handler, cst.Call):
            return True
        if isinstance(handler, cst.Name) and fn is not None:
            return any(
                isinstance(v, cst.Call)
                for v, _ in self.ctx.heavy.local_assignments(fn).get(handler.value, ())
            )
        return False

    def _handles_requests(self, fn: cst.FunctionDef) -> bool:
        """A plain function runs per request when it takes one (`request`, `conn`,
        `session_id`, ...); other functions are taken for one-time configuration
        (`setup_logging()`, `log_to_stderr()`)."""
        params = fn.params
        return any(
            self._volatile(p.name.value)
            for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        )


_FORGETTERS = frozenset({"pop", "popitem", "clear", "__delitem__"})


_MEMORY_HANDLER = "logging.handlers.MemoryHandler"


def _has_target(call: cst.Call) -> bool:
    """`MemoryHandler(capacity, flushLevel, target)` or `target=...` (not `None`)."""
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args):
        return True
    target = positional[2].value if len(positional) >= 3 else next(
        (a.value for a in call.args if a.keyword is not None and a.keyword.value == "target"), None)
    return target is not None and not (isinstance(target, cst.Name) and target.value == "None")


def _is_logger_dict(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == "loggerDict"


def _is_get_child(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "getChild"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
