"""Holders that run on their own: a thread whose target method never returns, a timer or an
event-loop call that its own callback arms again, an asyncio task whose coroutine never
returns or starts itself again, a Twisted `LoopingCall`. While it runs it
keeps its callback, and a callback over the instance keeps the instance, until the class's
release path stops it (cancels the timer, stops the looping call, sets the flag the loop
tests)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import call_args, self_attribute
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.release import FINALIZER, release_names
from retainlint.analysis.statement_order import ordered
from retainlint.analysis.walk import children
from retainlint.rules.prefilters.rl203 import TASK_STARTERS

THREAD = "threading.Thread"
TIMER = "threading.Timer"
LOOPING_CALLS = frozenset({"twisted.internet.task.LoopingCall"})
# event-loop methods that schedule one later call (position of the callback)
SCHEDULERS = {"call_later": 1, "call_at": 1, "callLater": 1}
# what stops each kind, for the message, and the holder
STOPPERS = {"thread": None, "timer": "cancel", "looping": "stop", "task": "cancel"}
HOLDERS = {
    "thread": "a thread that never ends",
    "timer": "the event loop's (or a timer thread's) scheduled calls",
    "looping": "the reactor's looping calls",
    "task": "the event loop's pending tasks",
}


# methods the framework calls when a connection ends (asyncio's and Twisted's protocols)
CONNECTION_ENDS = frozenset({"connection_lost", "connectionLost"})


def stopping_methods(ctx, methods: list[cst.FunctionDef], fn: cst.FunctionDef) -> list[cst.FunctionDef]:
    """The methods that may stop a runner `fn` started: what the class's release methods
    (and the end of its connection) run, through the methods of `self` they call - a stop
    the release path cannot reach does not count; without a release method, any method
    but `fn` and `__init__`."""
    ends = (set(release_names(ctx)) | CONNECTION_ENDS) - {FINALIZER}
    todo = [m for m in methods if m.name.value in ends]
    if not todo:
        return [m for m in methods if m is not fn and m.name.value != "__init__"]
    by_name = {m.name.value: m for m in reversed(methods)}  # the class's own first
    reached: list[cst.FunctionDef] = []
    while todo:
        method = todo.pop()
        if any(m is method for m in reached):
            continue
        reached.append(method)
        todo.extend(by_name[name] for node in iter_nodes(method.body)
                    if isinstance(node, cst.Call) and (name := self_attribute(node.func)) in by_name)
    return reached


def started_runner(ctx, classes, call: cst.Call, qualified: Optional[str], fn: cst.FunctionDef,
                   cls: cst.ClassDef) -> Optional[tuple[str, cst.BaseExpression]]:
    """(kind, callback) when `call` (`qualified`: what it calls), in method `fn` of `cls`,
    starts something that runs on its own with that callback: "thread" (its target never
    returns), "timer" (re-armed by its own callback, `fn`), "looping" (a `LoopingCall`)."""
    scheduler = isinstance(call.func, cst.Attribute) and call.func.attr.value in SCHEDULERS
    task = _starts_task(call)
    if not (scheduler or task or qualified in (THREAD, TIMER) or qualified in LOOPING_CALLS):
        return None  # (every call of every method comes here: leave early)
    positional, keywords = call_args(call)
    if task:
        # a coroutine of the instance that never ends, or that starts itself again
        coro = positional[0].value if positional else None
        method = _own_method(classes, cls, coro.func) if isinstance(coro, cst.Call) else None
        if method is None or method.asynchronous is None:
            return None
        assert isinstance(coro, cst.Call)
        if method is fn or _restarts(method, coro) \
                or never_ends(method, stopping_methods(ctx, classes.class_chain_methods(cls), method)):
            return "task", coro.func
        return None
    if qualified in LOOPING_CALLS:
        return ("looping", positional[0].value) if positional else None
    if qualified == THREAD:
        given = keywords.get("target") or (positional[1] if len(positional) > 1 else None)
        method = _own_method(classes, cls, given.value) if given is not None else None
        if method is not None and never_ends(method, stopping_methods(ctx, classes.class_chain_methods(cls), method)):
            return "thread", given.value
        return None
    if qualified == TIMER:
        given = keywords.get("function") or (positional[1] if len(positional) > 1 else None)
    else:
        assert isinstance(call.func, cst.Attribute)
        position = SCHEDULERS[call.func.attr.value]
        given = positional[position] if len(positional) > position else None
    if given is not None and self_attribute(given.value) == fn.name.value:
        return "timer", given.value  # `self._tick` arms `self._tick` again: it runs until cancelled
    return None


def stopped(kind: str, call: cst.Call, fn: cst.FunctionDef, saved_as: Optional[str],
            stoppers: list[cst.FunctionDef], slot_of: Optional[str] = None) -> bool:
    """Can one of `stoppers` (`stopping_methods`) stop the runner: `.cancel()` / `.stop()`
    on the attribute it is kept in, or on a slot of the dict it is kept in, or (a re-armed
    timer) a flag of the instance that guards the re-arming?"""
    stopper = STOPPERS[kind]
    if stopper is None:
        return False  # `never_ends` already asked whether a flag stops the thread's loop
    if saved_as is not None and any(
            isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == stopper
            and self_attribute(n.func.value) == saved_as
            for m in stoppers for n in iter_nodes(m.body)):
        return True
    if slot_of is not None and any(_stops_a_slot(m, slot_of, stopper) for m in stoppers):
        return True
    if kind == "task" and _cancelled_from_a_set(fn, call, saved_as, stoppers):
        return True
    if kind in ("timer", "task"):
        return any((flags := _flags(guard)) and _set_elsewhere(flags, fn, stoppers) for guard in _guards(fn, call))
    return False


def _stops_a_slot(method: cst.FunctionDef, table: str, stopper: str) -> bool:
    """Does `method` stop a runner kept in a slot of `self.<table>`: `self.t[key].cancel()`,
    `self.t.pop(key).cancel()`, or `for task in self.t.values(): task.cancel()`?"""
    def of_table(expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Subscript):
            return self_attribute(expr.value) == table
        return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value in ("pop", "get", "values") and self_attribute(expr.func.value) == table

    for node in iter_nodes(method.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == stopper \
                and of_table(node.func.value):
            return True
        if isinstance(node, cst.For) and of_table(node.iter) and _stops_each_item(node, stopper):
            return True
    return False


def _stops_each_item(loop: cst.For, stopper: str) -> bool:
    """`for task in ...: task.cancel()`: the loop stops each item it goes over."""
    return isinstance(loop.target, cst.Name) and any(
        isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == stopper
        and isinstance(n.func.value, cst.Name) and n.func.value.value == loop.target.value
        for n in iter_nodes(loop.body))


def _cancelled_from_a_set(fn: cst.FunctionDef, call: cst.Call, saved_as: Optional[str],
                          stoppers: list[cst.FunctionDef]) -> bool:
    """Is the task put in a container of the instance (`self.tasks.add(self._task)`) whose
    items a stopper cancels (`for task in self.tasks: task.cancel()`)?"""
    def is_task(arg: cst.BaseExpression) -> bool:
        return arg is call or saved_as is not None and (
            self_attribute(arg) == saved_as or isinstance(arg, cst.Name) and arg.value == saved_as)

    holders = {self_attribute(n.func.value) for n in iter_nodes(fn.body)
               if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
               and n.func.attr.value in ("add", "append") and n.args and is_task(n.args[0].value)}
    holders.discard(None)
    for method in stoppers:
        for loop in iter_nodes(method.body):
            if isinstance(loop, cst.For) and self_attribute(loop.iter) in holders and _stops_each_item(loop, "cancel"):
                return True
    return False


def _starts_task(call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    return name in TASK_STARTERS


def _restarts(method: cst.FunctionDef, started: cst.Call) -> bool:
    """Does the coroutine start itself again (`create_task(self.do_tick())` in `do_tick`),
    unless `started` turns that off: a parameter the restart is guarded by (`if requeue:`)
    given as `False`, `None` or `0` (`self.do_tick(requeue=False)`)?"""
    params = [p.name.value for p in (*method.params.posonly_params, *method.params.params)][1:]
    positional, keywords = call_args(started)
    off = {name for name, arg in keywords.items() if _falsy(arg.value)}
    off |= {params[i] for i, arg in enumerate(positional) if i < len(params) and _falsy(arg.value)}
    for n in iter_nodes(method.body):
        if isinstance(n, cst.Call) and _starts_task(n) and n.args and isinstance(n.args[0].value, cst.Call) \
                and self_attribute(n.args[0].value.func) == method.name.value:
            guarded_by = {node.value for guard in _guards(method, n) for node in iter_nodes(guard)
                          if isinstance(node, cst.Name)}
            if not guarded_by & off:
                return True
    return False


def _falsy(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value in ("False", "None") \
        or isinstance(value, cst.Integer) and value.value == "0"


def never_ends(method: cst.FunctionDef, stoppers: list[cst.FunctionDef]) -> bool:
    """Does `method` reach a `while` loop with no way out (no `break` of its own, no `return`
    or `raise` in it) whose test is always true, or tests only flags of the instance
    (`while not self._stop.is_set()`, `while self.running`) that none of `stoppers` sets -
    and does none of `stoppers` close what it reads (`_closed_elsewhere`)?"""
    for loop in ordered(method):
        if not isinstance(loop, cst.While) or _exits(loop) or _closed_elsewhere(method, loop, stoppers):
            continue
        test = loop.test
        if isinstance(test, (cst.Name, cst.Integer)) and test.value in ("True", "1"):
            return True
        flags = _flags(test)
        if flags and not _set_elsewhere(flags, method, stoppers) and not _cleared_in(loop, flags):
            return True
    return False


def _cleared_in(loop: cst.While, flags: set[str]) -> bool:
    """Does the loop itself set a flag it tests to a false value (`while self._pending:
    self._pending = False; ...`)? Then it ends unless something sets the flag again."""
    return any(isinstance(n, cst.Assign) and _falsy(n.value)
               and any(self_attribute(t.target) in flags for t in n.targets)
               for n in iter_nodes(loop.body))


# what ends a loop that waits on the object it is called on (a socket, a queue, a pool)
_CLOSERS = frozenset({"close", "term", "shutdown", "disconnect", "terminate"})


def _closed_elsewhere(method: cst.FunctionDef, loop: cst.While, stoppers: list[cst.FunctionDef]) -> bool:
    """Does another method close something of the instance whose methods the loop calls
    (`self.receivers[peer].close()` while it awaits `receiver.recv()`, `receiver` bound from
    `self.receivers[peer]`), outside a `try` that catches every error? The call on it then
    raises, and the loop ends with it."""
    def owner(node: cst.BaseExpression) -> Optional[str]:
        while isinstance(node, cst.Subscript):
            node = node.value
        return self_attribute(node)

    bound = {t.target.value: name for n in iter_nodes(method.body) if isinstance(n, cst.Assign)
             and (name := owner(n.value)) is not None for t in n.targets if isinstance(t.target, cst.Name)}
    # what the loop calls a method of (`self.sock.recv()`, `receiver.recv()`), where an error
    # is not caught: a call on a closed object raises
    receivers = [n.func.value for n in _outside_broad_handlers(loop.body)
                 if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)]
    read = {name for node in receivers if (name := owner(node)) is not None}
    read |= {bound[node.value] for node in receivers if isinstance(node, cst.Name) and node.value in bound}
    for other in stoppers:
        if other is method:
            continue
        for node in iter_nodes(other.body):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and node.func.attr.value in _CLOSERS:
                if owner(node.func.value) in read:
                    return True
    return False


_BROAD = frozenset({"Exception", "BaseException", "OSError", "IOError", "error"})


def _outside_broad_handlers(node: cst.CSTNode):
    """The nodes under `node`, leaving out the bodies of `try`s that catch every error (bare
    `except`, `Exception`, `OSError`): what fails there, the loop survives."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, cst.Try) and any(
                h.type is None or any(isinstance(n, (cst.Name, cst.Attribute)) and
                                      (n.value if isinstance(n, cst.Name) else n.attr.value) in _BROAD
                                      for n in iter_nodes(h.type)) for h in current.handlers):
            stack.extend(h for h in current.handlers)
            continue
        stack.extend(children(current))


def _own_method(classes, cls: cst.ClassDef, target: cst.BaseExpression) -> Optional[cst.FunctionDef]:
    name = self_attribute(target)
    return classes.method(cls, name) if name is not None else None


def _exits(loop: cst.While) -> bool:
    """Does the loop's body `return`, `raise` or `break` out of this loop (a loop inside it
    has `break`s of its own)?"""
    def walk(node: cst.CSTNode, inner: bool) -> bool:
        for child in children(node):
            if isinstance(child, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                continue
            if isinstance(child, (cst.Return, cst.Raise)) or isinstance(child, cst.Break) and not inner:
                return True
            if walk(child, inner or isinstance(child, (cst.While, cst.For))):
                return True
        return False

    return walk(loop.body, False)


def _flags(test: cst.BaseExpression) -> set[str]:
    """The attributes of `self` a loop or guard tests (`self._stop` of
    `not self._stop.is_set()`, `self.running`); none when it also calls anything else
    (`while self._step():` ends when the method says so)."""
    found = set()
    for node in [test, *ordered(test)]:
        name = self_attribute(node)
        if name is not None:
            found.add(name)
        if isinstance(node, cst.Call) and not (
                isinstance(node.func, cst.Attribute) and self_attribute(node.func.value) is not None):
            return set()
    return found


def _set_elsewhere(flags: set[str], fn: cst.FunctionDef, stoppers: list[cst.FunctionDef]) -> bool:
    """Does one of `stoppers` other than `fn` name one of `flags`: `self._stop.set()`,
    `self.running = False`, `getattr(self, "_stop", None)`? (Any mention may stop the loop.)"""
    for method in stoppers:
        if method is fn:
            continue
        for node in iter_nodes(method.body):
            if self_attribute(node) in flags or isinstance(node, cst.SimpleString) \
                    and node.value.strip("\"'") in flags:
                return True
    return False


def _guards(fn: cst.FunctionDef, call: cst.Call) -> list[cst.BaseExpression]:
    """The tests of the `if`s in `fn` around `call`, and of the `if`s before it that leave
    the function (`if not self.running: return`)."""
    found: list[cst.BaseExpression] = []

    def holds(node: cst.CSTNode) -> bool:
        return node is call or any(n is call for n in ordered(node))

    def walk(node: cst.CSTNode) -> None:
        if isinstance(node, cst.BaseSuite):
            for stmt in node.body:
                if holds(stmt):
                    walk(stmt)
                    return
                if isinstance(stmt, cst.If) and any(isinstance(n, cst.Return) for n in ordered(stmt.body)):
                    found.append(stmt.test)
            return
        if isinstance(node, cst.If):
            found.append(node.test)
        for part in children(node):
            if holds(part):
                walk(part)
                return

    walk(fn.body)
    return found
