"""What one function does to its module's holders: adds, drops, bounds, and the
references an object keeps to itself."""

from __future__ import annotations

import ast
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Optional

from retainlint.project.nodes import TRY_STAR, dotted
from retainlint.project.retention_facts import ITEMS, Growth, SelfReference
from retainlint.project.retention_holders import property_attribute
from retainlint.project.retention_shapes import (
    FUNCTIONS, MEMOS, ADD_CALLS, ITEM_ADDS, DROP_CALLS, READERS, TEARDOWN, REGISTERS, warms_up, diagnostic_switch, last_name,
    container_kind,
    names_in, bindings, statements, expressions, stored_names, adds_a_parameter,
    serves_until_stopped, sets_up, keeps_what_it_is_handed, resource_kept,
    cycle_broken, used_on_release)

if TYPE_CHECKING:
    from retainlint.project.retention import ModuleBuilder

# Calls that read a container's entries or views: what they give is what it holds.
_VIEWS = frozenset({"values", "items", "get", "__getitem__"})
# Exceptions that say an entry is not there: a handler for one skips no removal.
_MISSING = frozenset({"KeyError", "LookupError", "IndexError"})


class FunctionFacts:
    """What one function does to the module's holders."""

    def __init__(self, facts: "ModuleBuilder", node: ast.AST, cls: Optional[str],
                 outer_me: Optional[str] = None, defaults: Optional[dict[str, str]] = None) -> None:
        """`outer_me`: for a function nested in a method, the method's name for the
        instance (a closure sees it). `defaults`: the parameters whose container default
        lives as long as the function (`container_defaults`; none for a nested function,
        whose defaults are made anew each time the outer one runs)."""
        assert isinstance(node, FUNCTIONS)
        self.facts, self.node, self.cls = facts, node, cls
        args = node.args
        self.params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        self.defaults = defaults or {}
        if outer_me is not None:
            self.me: Optional[str] = outer_me
        else:
            self.me = args.args[0].arg if cls is not None and args.args else None
        if any(last_name(d) == "staticmethod" for d in node.decorator_list):
            self.me = None
        self.outer_me = outer_me
        self.name = f"{cls}.{node.name}" if cls else node.name
        # Named for set-up, but run per request when a handler or another ordinary method
        # calls it (`self._create_span()` from `on_chain_start()`).
        # A helper only `__init__` calls (`self.__spawn()`) runs once per instance made, as
        # `__init__`'s own body does, whatever it is named.
        self.in_init = node.name == "__init__" or (
            cls is not None and outer_me is None and node.name in facts.called_only_from_init(cls))
        self.once = sets_up(node) and not self.in_init and not (
            cls is not None and node.name in facts.called_per_call(cls))
        # A serve loop (`while True:`, `while not self.stopped:`) runs its body per request,
        # whatever the function around it is named.
        own = facts.nodes.own
        self.loops = [(w.lineno, w.end_lineno or w.lineno) for w in own(node, ast.While)
                      if serves_until_stopped(w)] if self.once else []
        # `if torch.cuda.is_current_stream_capturing():` runs while graphs are captured or code
        # is compiled, at start-up: what it adds is bounded whatever calls the function.
        self.warmup = [(i.body[0].lineno, i.body[-1].end_lineno or i.body[-1].lineno) for i in own(node, ast.If)
                       if warms_up(i.test)]
        # Tears the whole object down: named so, and handed no entry to remove
        # (`_stop_heartbeat(req_id)` ends one request's entry, not the object).
        required = len(args.posonlyargs) + len(args.args) - len(args.defaults) - (1 if cls is not None else 0)
        self.teardown = (node.name.lstrip("_").startswith(TEARDOWN) and required <= 0) \
            or node.name in ("__exit__", "__aexit__", "__del__")
        # Path-sensitive drops: in an async function cancellation reaches every `await`; in a
        # context manager's generator the `with` block's exception is raised at the `yield`.
        # The lines of those points, and the statements under `finally` or an `except`.
        self.awaits: list[int] = []
        self.exit_lines: set[int] = set()  # lines of `except` handlers that leave the function
        self.past_exits: set[str] = set()  # holders dropped past such handlers only (no `await`)
        self.covered: set[int] = set()
        self.fragile = False  # the statement being read runs only if the awaits before it return
        self.in_callback = False  # the node being read is in a lambda: a callback
        self.entry_stores: set[int] = set()  # `d.setdefault(k, {})` stored into: its slots grow, not `d`'s
        self.success_drops: dict[str, int] = {}  # holder -> line of its first such drop here
        self.firm_drops: set[str] = set()

    @cached_property
    def local(self) -> set[str]:
        node = self.node
        declared_global = {n for s in ast.walk(node) if isinstance(s, ast.Global) for n in s.names}
        local = (self.params | {n.id for s in ast.walk(node) for n in stored_names(s)}) - declared_global
        if self.outer_me is not None:
            local.discard(self.outer_me)
        return local

    @cached_property
    def switched(self) -> list[tuple[int, int, str]]:
        """(first, last line, switch) of each `if TRACK_STEP_TIMES:` body: what it adds, it
        adds only while someone debugs (read when the function adds something)."""
        own = self.facts.nodes.own
        assigned = {t.id: a.value for a in own(self.node, ast.Assign) for t in a.targets if isinstance(t, ast.Name)}
        return [(i.body[0].lineno, i.body[-1].end_lineno or i.body[-1].lineno, switch)
                for i in own(self.node, ast.If) if (switch := diagnostic_switch(i.test, assigned))]

    @cached_property
    def failing(self) -> list[tuple[int, int]]:
        """(first, last line) of each block of an `except` that ends by raising (the
        handler's body, or a block nested in it): what it adds, it adds once per failed call
        (read when the function adds something)."""
        spans = []
        for handler in self.facts.nodes.own(self.node, ast.ExceptHandler):
            for stmt in (handler, *statements(handler.body)):
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(stmt, field, None)
                    if isinstance(block, list) and block and isinstance(block[-1], ast.Raise):
                        spans.append((block[0].lineno, block[-1].end_lineno or block[-1].lineno))
        return spans

    @cached_property
    def exposes(self) -> bool:
        """A read-only property returning an attribute as it is (`return self._tasks`)."""
        return self.cls is not None and property_attribute(self.node) is not None

    @cached_property
    def memoised(self) -> bool:
        """Under a cache decorator (`@functools.cache`, `@lru_cache(maxsize=2)`): the body
        runs once per distinct argument, like a memo guarded by `if key not in h`."""
        return any(last_name(d.func if isinstance(d, ast.Call) else d) in MEMOS
                   for d in getattr(self.node, "decorator_list"))

    @cached_property
    def registers(self) -> bool:
        """A function that exists to store what it is handed - a decorator returning it, a
        body that does nothing else but check it (`def add_hook(h): _hooks.append(h)`), or one named as
        a registration API: how often it runs is its callers' choice, not a growth of its own."""
        node = self.node
        returned = {n.id for s in ast.walk(node) if isinstance(s, ast.Return) and s.value is not None
                    for n in [s.value] if isinstance(n, ast.Name)}
        inner = {d.name for d in node.body if isinstance(d, FUNCTIONS)}
        # a docstring, and a check that refuses bad input (`if not ok: raise ...`), do nothing else
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                and not (isinstance(s, ast.If) and not s.orelse and all(isinstance(b, ast.Raise) for b in s.body))]
        return bool(returned & (self.params | inner)) or (
            len(body) == 1 and node.name != "__init__" and adds_a_parameter(body[0], self.params)
        ) or node.name.lstrip("_").startswith(REGISTERS)

    @cached_property
    def closures(self) -> set[str]:
        """Nested functions that use the instance (`def cb(): self.x`)."""
        me = self.me
        return {d.name for d in self.node.body if isinstance(d, FUNCTIONS) and me in names_in(d)}

    def holder(self, expr: ast.AST) -> Optional[tuple[str, str, str]]:
        if isinstance(expr, ast.Name) and expr.id in self.defaults:
            return f"{self.facts.holders.module}.{self.name}({expr.id}=)", "default", self.defaults[expr.id]
        holders = self.facts.holders
        if isinstance(expr, ast.Name) and expr.id not in holders.module_level:
            return None  # the common case, without working out the function's locals
        if isinstance(expr, ast.Attribute) and not isinstance(expr.value, (ast.Name, ast.Attribute, ast.Call)):
            return None
        return holders.named(expr, self.cls, self.me, self.local if isinstance(expr, ast.Name) else set())

    def scan(self) -> None:
        guarded = self._looked_up()
        exits = self._except_exits()
        if isinstance(self.node, ast.AsyncFunctionDef) or self._context_manager or exits:
            self._paths()
            self.awaits = sorted(self.awaits + exits)
        first = len(self.facts.growth)
        for stmt in statements(self.node.body):
            self.fragile = id(stmt) not in self.covered and any(
                a < stmt.lineno and not self._apart(a, stmt.lineno) for a in self.awaits)
            self._statement(stmt, guarded)
        self.fragile = False
        # A removal past an `except` that leaves is skipped only by the calls that fail there:
        # one that adds the entry itself leaves it behind; one that only removes (a loop
        # handling replies) had no entry of its own, and an entry added elsewhere is removed
        # when its reply is handled.
        # (A teardown's removal of its own entry, `conn._cursors.remove(self)` in `close()`,
        # still counts as skipped: a close that fails leaves that entry.)
        added = {name for g in self.facts.growth[first:] for name in (g.holder, "." + g.holder.rpartition(".")[2])}
        for holder in set() if self.teardown else self.past_exits - added - self.firm_drops:
            self.firm_drops.add(holder)
            self.facts.drops.add(holder)
        for i in range(first, len(self.facts.growth)):
            g = self.facts.growth[i]
            line = self.success_drops.get(g.holder)
            if line is not None and g.holder not in self.firm_drops \
                    and any(g.site.line < a < line and not self._apart(a, line) for a in self.awaits):
                self.facts.growth[i] = g = replace(g, undone_on_success=True)
            if g.awaits_reply and (g.holder in self.firm_drops or line is not None):
                self.facts.growth[i] = replace(g, awaits_reply=False)  # it removes the entry itself

    def _apart(self, first: int, then: int) -> bool:
        """Are lines `first` and `then` in branches no run takes both of: the `if` and the
        `else` (an `elif` included) of one `if`, two handlers of one `try`, two cases of one
        `match`, none of them inside a loop of this function (a pass through one branch may
        come before the next pass through the other)?"""
        return any(a[0] <= first <= a[1] and b[0] <= then <= b[1] for a, b in self._branch_pairs)

    @cached_property
    def _branch_pairs(self) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """(earlier, later) line spans of branches that exclude each other, outside loops."""
        loops = [(n.lineno, n.end_lineno or n.lineno)
                 for n in self.facts.nodes.own(self.node, ast.For, ast.AsyncFor, ast.While)]
        pairs = []
        for node in self.facts.nodes.own(self.node, ast.If, ast.Try, ast.Match, *TRY_STAR):
            if any(start <= node.lineno <= end for start, end in loops):
                continue
            if isinstance(node, ast.If):
                spans = [(b[0].lineno, b[-1].end_lineno or b[-1].lineno) for b in (node.body, node.orelse) if b]
            else:  # a handler from its `except` line: an `except` that leaves counts there
                parts = node.cases if isinstance(node, ast.Match) else getattr(node, "handlers")
                spans = [(getattr(p, "lineno", p.body[0].lineno), p.body[-1].end_lineno or p.body[-1].lineno)
                         for p in parts]
            pairs += [(x, y) for i, x in enumerate(spans) for y in spans[i + 1:]]
        return pairs

    @cached_property
    def _context_manager(self) -> bool:
        """A generator made a context manager (`@contextmanager`, `@asynccontextmanager`)."""
        return any(last_name(d.func if isinstance(d, ast.Call) else d) in ("contextmanager", "asynccontextmanager")
                   for d in self.node.decorator_list)

    def _paths(self) -> None:
        if self._context_manager:
            self.awaits += _unconditional_yields(self.node.body)
        for sub in self.facts.nodes.own(self.node, ast.Await, ast.AsyncFor, ast.Try, *TRY_STAR):
            # Not `async with lock:`: a removal right under it runs once the lock is held.
            if isinstance(sub, (ast.Await, ast.AsyncFor)):
                self.awaits.append(sub.lineno)
            else:
                # a cancelled coroutine raises `CancelledError`, a `BaseException`: only
                # `finally` and a handler catching it (bare, `BaseException`,
                # `CancelledError`) run then; a plain function has no cancellation
                cancellable = isinstance(self.node, ast.AsyncFunctionDef)
                for block in [getattr(sub, "finalbody"), *(h.body for h in getattr(sub, "handlers")
                                                           if not cancellable or _catches_cancellation(h))]:
                    self.covered.update(id(s) for s in statements(block))
        self.awaits.sort()

    def _except_exits(self) -> list[int]:
        """The lines of `except` handlers that leave the function (`except X: return`,
        `raise`): a statement after their `try` runs only when nothing was raised there.
        Not a handler for a missing key (`KeyError`, `LookupError`): the entry is not there."""
        found = []
        for handler in self.facts.nodes.own(self.node, ast.ExceptHandler):
            caught = {last_name(t) for t in ([handler.type] if not isinstance(handler.type, ast.Tuple)
                                              else handler.type.elts) if t is not None}
            if caught & _MISSING or not handler.body:
                continue
            if isinstance(handler.body[-1], (ast.Return, ast.Raise)):
                found.append(handler.lineno)
        self.exit_lines = set(found)
        return found

    def _drop(self, holder: str, owner: Optional[ast.AST] = None, whole: bool = False) -> None:
        """Something here removes from, rebinds or hands on `holder`: a release wherever
        the call ends, only when it gets that far, or only when the owner is torn down.
        (In a lambda, a callback: it runs whenever it is called, `add_done_callback(lambda
        _: self.tasks.pop(k))` when the task ends, however this function goes on.) `owner`:
        the object whose attribute `holder` is, when the code spells it (`x` of
        `x.attr.pop()`); another object's container emptied as this one is torn down
        (`self._connection.cursors.remove(self)` in a cursor's `close()`) loses an entry
        each time one of these objects ends, not once when its holder does. `whole`: the
        drop empties the whole container (`clear()`, rebinding it): past an `await` or an
        early exit it still sweeps, on the next call that gets there, what the calls that
        stopped short left, so only a teardown's emptying waits for the owner's end."""
        foreign = owner is not None and not (isinstance(owner, ast.Name) and owner.id == self.me)
        # one entry taken out of a table every instance shares (module- or class-level) as one
        # instance ends: each instance's own entry goes with it (`__exit__` of a `with X(id)`)
        foreign = foreign or (bool(self.me) and not whole and "()." not in holder and not holder.startswith("."))
        if self.in_callback or (self.teardown and foreign and not self.fragile) or (whole and not self.teardown):
            self.firm_drops.add(holder)
            self.facts.drops.add(holder)
        elif self.fragile:
            if all(a in self.exit_lines for a in self.awaits if a < self._line and not self._apart(a, self._line)):
                self.past_exits.add(holder)
            self.success_drops.setdefault(holder, 10 ** 9)
            line = self._line
            if line < self.success_drops[holder]:
                self.success_drops[holder] = line
            self.facts.success_drops.add(holder)
        elif self.teardown:
            self.facts.teardown_drops.add(holder)
        else:
            self.firm_drops.add(holder)
            self.facts.drops.add(holder)

    def _looked_up(self) -> set[str]:
        """Holders the function looks a key up in (`k in h`, `h.get(k)`): what it adds is a
        memo, one entry per distinct key, not one per call."""
        found: set[str] = set()
        for sub in ast.walk(self.node):
            if isinstance(sub, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in sub.ops):
                for c in sub.comparators:
                    named = self.holder(c)
                    if named:
                        found.add(named[0])
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "get":
                named = self.holder(sub.func.value)
                if named:
                    found.add(named[0])
            if isinstance(sub, (ast.If, ast.IfExp, ast.While)):  # `if not h: h.append(...)`
                test = sub.test.operand if isinstance(sub.test, ast.UnaryOp) and isinstance(sub.test.op, ast.Not) else sub.test
                named = self.holder(test)
                if named:
                    found.add(named[0])
        return found

    def _statement(self, stmt: ast.stmt, guarded: set[str]) -> None:
        facts = self.facts
        self._line = stmt.lineno
        self.in_callback = False
        for target, value in bindings(stmt):
            if isinstance(target, ast.Subscript):
                named = self.holder(target.value)
                entry = None if named else self._entry(target.value)
                if named and isinstance(target.slice, ast.Slice):
                    self._drop(named[0], whole=True)
                elif named and not isinstance(target.slice, ast.Constant):
                    self._grow(named, target.value, True, target.slice, value, stmt, guarded)
                elif entry and not isinstance(target.slice, (ast.Constant, ast.Slice)):
                    # `d.setdefault(k, {})[k2] = v`: the dict under a key gains a slot per `k2`
                    self.entry_stores.add(id(target.value))
                    self._grow((entry[0] + ITEMS, *entry[1:]), target.value, True, target.slice, value,
                               stmt, guarded)
            else:
                named = self.holder(target)
                if named and named[1] != "default" and not (named[1] == "instance" and self.node.name == "__init__") \
                        and id(stmt) not in self.facts.holders.made_when_missing \
                        and not (self.once and id(stmt) in self.facts.holders.made_in_setup):
                    self._drop(named[0], whole=True)  # rebound: what it held goes
                    if named[1] == "instance":  # on a subclass's instance too, which names it its own
                        self._drop("." + named[0].rpartition(".")[2], whole=True)
            if value is not None:
                self._handed_on(value)  # an alias: may be emptied through it
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Subscript):
            named = self.holder(stmt.target.value)
            if named and named[2] in ("defaultdict", "Counter") and not isinstance(stmt.target.slice, ast.Constant):
                self._grow(named, stmt.target.value, True, stmt.target.slice, None, stmt, guarded)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add):
            named = self.holder(stmt.target)  # `self._log += [entry]`: `extend` spelled as `+=`
            if named and named[2] in ("list", "deque"):  # a batch of items: no membership test guards it
                self._grow(named, stmt.target, False, None, stmt.value, stmt, set())
        if isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                inner = target.value if isinstance(target, ast.Subscript) else target
                if isinstance(inner, ast.Attribute):
                    self._drop("." + inner.attr, inner.value)
                named = self.holder(target.value if isinstance(target, ast.Subscript) else target)
                entry = None if named or not isinstance(target, ast.Subscript) \
                    else self._entry(target.value, made_on_read=False)
                if named:
                    self._drop(named[0], whole=not isinstance(target, ast.Subscript)
                               or isinstance(target.slice, ast.Slice))
                elif entry:  # `del d[k][k2]` takes out what `d.setdefault(k, {})[k2] = v` put in
                    self._drop(entry[0] + ITEMS)
        found = list(expressions(stmt))
        called = {id(n.func) for n in found if isinstance(n, ast.Call)}
        callbacks = {id(sub) for n in found if isinstance(n, ast.Lambda) for sub in ast.walk(n.body)}
        for node in found:
            self.in_callback = id(node) in callbacks
            # to the caller, who may empty it - unless this is a property exposing it as it
            # is (`return self._tasks`): a removal through the property counts as one instead
            if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) and node.value is not None \
                    and not self.exposes:
                self._handed_on(node.value)
            if isinstance(node, ast.Call):
                self._call(node, stmt, guarded)
            elif isinstance(node, ast.Attribute) and node.attr in DROP_CALLS and id(node) not in called:
                named = self.holder(node.value)  # `task.add_done_callback(tasks.discard)`: runs
                if named:  # whenever the task ends, however this function goes on
                    facts.drops.add(named[0])
            if isinstance(node, ast.Compare):
                for sub in [node.left, *node.comparators]:
                    if isinstance(sub, ast.Call) and last_name(sub.func) == "len" and sub.args:
                        named = self.holder(sub.args[0])
                        if named:
                            facts.bounded.add(named[0])

    def _call(self, call: ast.Call, stmt: ast.stmt, guarded: set[str]) -> None:
        if self.node.name == "__del__" and isinstance(call.func, ast.Attribute) and call.func.attr in DROP_CALLS \
                and any(isinstance(a, ast.Name) and a.id == self.me for a in call.args):
            return  # `registry.remove(self)`: `__del__` cannot run while the registry holds it
        if isinstance(call.func, ast.Attribute) and call.func.attr in DROP_CALLS \
                and isinstance(call.func.value, ast.Attribute):
            self._drop("." + call.func.value.attr, call.func.value.value)  # any class's `x.attr.pop(...)`
        if isinstance(call.func, ast.Attribute):
            named = self.holder(call.func.value)
            if named:
                method = call.func.attr
                if method in DROP_CALLS:
                    self._drop(named[0], whole=method == "clear")
                elif method in ADD_CALLS or (method == "update" and named[2] != "set"):
                    keyed = method in ("setdefault", "__setitem__", "update")
                    key = call.args[0] if keyed and call.args and method != "update" else None
                    value = call.args[-1] if call.args else None
                    if not (keyed and isinstance(key, ast.Constant)) and id(call) not in self.entry_stores:
                        self._grow(named, call.func.value, keyed, key, value, stmt, guarded)
            elif call.func.attr in ITEM_ADDS:
                entry = self._entry(call.func.value)
                if entry:  # the list under a key gains one more item per call, whatever the key
                    self._grow((entry[0] + ITEMS, *entry[1:]), call.func.value, False, None,
                               call.args[-1] if call.args else None, stmt, guarded)
            elif call.func.attr in DROP_CALLS and call.func.attr != "cancel":  # `d[k].cancel()` keeps `d[k]`
                entry = self._entry(call.func.value, made_on_read=False)
                if entry:  # `d[k].remove(x)` takes out what `d[k].append(x)` put in, not the key's slot
                    self._drop(entry[0] + ITEMS)
        if last_name(call.func) not in READERS:
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                self._handed_on(arg.value if isinstance(arg, ast.Starred) else arg)  # to code that may empty it

    def _handed_on(self, expr: ast.AST) -> None:
        """`expr` goes elsewhere (aliased, returned, passed): if it names a holder, that
        code may empty it - unless it is a default value, which stays the default."""
        named = self.holder(expr)
        if named and named[1] != "default":
            self.facts.drops.add(named[0])

    def _entry(self, expr: ast.AST, made_on_read: bool = True) -> Optional[tuple[str, str, str]]:
        """The holder whose entry `expr` is: `d[k]`, `d.setdefault(k, [])`, `d.get(k)`. With
        `made_on_read`, only where reading the entry makes it (`d[k]` of a `defaultdict`,
        `setdefault`): an add through it is an add to the holder."""
        if isinstance(expr, ast.Subscript):
            named = self.holder(expr.value)
            return named if named and (named[2] == "defaultdict" or not made_on_read) else None
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and (
                expr.func.attr == "setdefault" or expr.func.attr == "get" and not made_on_read):
            return self.holder(expr.func.value)
        return None

    def _grow(self, named: tuple[str, str, str], expr: ast.AST, keyed: bool,
              key: Optional[ast.AST], value: Optional[ast.AST], stmt: ast.stmt,
              guarded: set[str]) -> None:
        holder, kind, container = named
        if container in ("bounded", "weak"):
            return
        pins = bool(self.me) and value is not None and self._pins_self(value)
        if container == "set" and self.node.name == "__init__" and not pins:
            return  # a value per distinct instance name or kind, not one per instance made
        if container == "set" and value is not None and holder not in guarded and not self.memoised:
            if isinstance(value, ast.Constant):
                return
            keyed, key = True, value  # a set holds each value once: a slot per distinct value
        self.facts.growth.append(Growth(
            holder, kind, ast.unparse(expr), keyed, self._key_text(key),
            ast.unparse(value) if value is not None else "",
            self.name, (self.once and not any(a <= stmt.lineno <= b for a, b in self.loops)
                        and not self._starts_and_returns(value))
            or any(a <= stmt.lineno <= b for a, b in self.warmup),
            self.in_init, holder in guarded or self.memoised,
            pins, self.registers and not self._made_here(value), False,
            key is not None and self._advances(key),
            holder not in guarded and not self.memoised and self._hands_out(value, expr, key),
            keyed and isinstance(value, ast.Name) and self._waits_for(value.id),
            next((switch for a, b, switch in self.switched if a <= stmt.lineno <= b), ""),
            any(a <= stmt.lineno <= b for a, b in self.failing),
            self.facts.lines.site(stmt, stmt)))

    def _key_text(self, key: Optional[ast.AST]) -> str:
        """The key as the code spells it - or, for a local this function binds once to a tuple
        or to another object's attribute (`bucket = (route.webhook_id, route.webhook_token)`),
        what it is bound to: that says what each key is of."""
        if isinstance(key, ast.Name):
            bound = self._bound(key.id)
            value = bound[0] if len(bound) == 1 else None
            # another object's field (a name's, not a call result's, which its callers may keep
            # and reuse; not the instance's own, which may be a counter), or a tuple of values
            field = dotted(value) if isinstance(value, ast.Attribute) else None
            if value is not None and (isinstance(value, ast.Tuple)
                                      or field and field.partition(".")[0] not in ("self", "cls")):
                return ast.unparse(value)
        return ast.unparse(key) if key is not None else ""

    def _waits_for(self, name: str) -> bool:
        """Is `name` a future, queue or event this function makes (for other code to resolve
        or fill: a task resolves itself), and does it wait for it (`await fut`, `await
        wait_for(fut, 5)`, `await queue.get()`, `fut.result(timeout)`, `event.wait(timeout)`)?"""
        if not any(made in _REPLIES for made in self._made_by(name)):
            return False

        def named(node: ast.AST) -> bool:
            return isinstance(node, ast.Name) and node.id == name

        def waits(call: ast.AST, methods: tuple[str, ...]) -> bool:
            return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                and call.func.attr in methods and named(call.func.value)

        own = self.facts.nodes.own
        for a in own(self.node, ast.Await):
            value = a.value
            if named(value) or waits(value, ("get", "wait")) or isinstance(value, ast.Call) and any(
                    named(arg) or waits(arg, ("get", "wait")) for arg in value.args):  # `wait_for(fut, 5)`
                return True
        # a blocking wait gives up only with a timeout: `fut.result()` returns with the reply or
        # never, so it abandons no entry (the code delivering the reply removes it)
        return any(waits(c, ("result", "wait")) and bool(c.args or c.keywords) for c in own(self.node, ast.Call))

    def _hands_out(self, value: Optional[ast.AST], holder: ast.AST, key: Optional[ast.AST]) -> bool:
        """Is the added value an object this call makes (`c = Cursor(...)`, a class by its
        capital) and returns (`return c`, or the slot it was stored in: `self._conns[k] =
        Conn(k); return self._conns[k]`)? (Not in a memo, which hands the same one out again.)"""
        returned = [r.value for r in self.facts.nodes.own(self.node, ast.Return) if r.value is not None]
        if isinstance(value, ast.Call) and key is not None:
            slot = f"{ast.unparse(holder)}[{ast.unparse(key)}]"
            return last_name(value.func)[:1].isupper() and any(ast.unparse(r) == slot for r in returned)
        if not isinstance(value, ast.Name):
            return False
        return any(made[:1].isupper() for made in self._made_by(value.id)) and self._returns(value.id)

    def _bound(self, name: str) -> list[ast.AST]:
        """What this function binds the local `name` to (`recv: Receiver[T] = Receiver(...)` too)."""
        return [value for a in self.facts.nodes.own(self.node, ast.Assign, ast.AnnAssign)
                for target, value in bindings(a)
                if value is not None and isinstance(target, ast.Name) and target.id == name]

    def _made_by(self, name: str) -> list[str]:
        """The names of the calls this function binds the local `name` to (`c = Cursor()`: "Cursor")."""
        return [last_name(value.func) for value in self._bound(name) if isinstance(value, ast.Call)]

    def _returns(self, name: str) -> bool:
        """Does this function return the local `name` (`return c`)?"""
        return any(isinstance(r.value, ast.Name) and r.value.id == name
                   for r in self.facts.nodes.own(self.node, ast.Return))

    def _made_here(self, value: Optional[ast.AST]) -> bool:
        """Is the stored value a callback this call makes (a nested `def`, a lambda, a
        `partial`), or a thread, process or task it starts: a new one per call, whatever the
        function is named (`add_handler()` storing its own `on_disconnect`, `add_thread()`
        storing the `Thread` it starts), not something its caller registers."""
        if isinstance(value, ast.Lambda):
            return True
        if isinstance(value, ast.Call):
            return last_name(value.func) in ("partial", *_STARTED)
        return isinstance(value, ast.Name) and (any(
            isinstance(d, FUNCTIONS) and d.name == value.id for d in ast.walk(self.node) if d is not self.node)
            or any(made in _STARTED for made in self._made_by(value.id)))

    def _starts_and_returns(self, value: Optional[ast.AST]) -> bool:
        """Does the call start the thread or task it stores, and return it (`task =
        asyncio.create_task(coro); cls.tasks.append(task); return task`)? Then it is a
        factory its callers use per job, however it is named (`create_task()`), not set-up."""
        return isinstance(value, ast.Name) and any(made in _STARTED for made in self._made_by(value.id)) \
            and self._returns(value.id)

    def _advances(self, key: ast.AST) -> bool:
        """Is `key` (`self._request_id`) an attribute this function counts up
        (`self._request_id += 1`, `= self._request_id + 1`): a fresh key per call?"""
        if not (isinstance(key, ast.Attribute) and isinstance(key.value, ast.Name) and key.value.id == self.me):
            return False
        spelled = dotted(key)
        for stmt in self.facts.nodes.own(self.node, ast.AugAssign, ast.Assign):
            if isinstance(stmt, ast.AugAssign):
                if isinstance(stmt.op, ast.Add) and dotted(stmt.target) == spelled:
                    return True
            elif isinstance(stmt, ast.Assign) and any(dotted(t) == spelled for t in stmt.targets) \
                    and isinstance(value := stmt.value, ast.BinOp) and isinstance(value.op, ast.Add) \
                    and spelled in (dotted(value.left), dotted(value.right)):
                return True
        return False

    def _pins_self(self, value: ast.AST) -> bool:
        """Does the stored value keep the instance itself: `self`, a tuple holding it, a
        bound method or a function over it? (`self.name`, a value read off it, does not.)"""
        if isinstance(value, ast.Name):
            return value.id == self.me
        if isinstance(value, (ast.Tuple, ast.List)):
            return any(self._pins_self(e) for e in value.elts)
        return self.cls is not None and bool(self._refers_back(value))

    def _self_reference(self, target: ast.AST, value: ast.AST, stmt: ast.AST) -> None:
        base = target.value if isinstance(target, (ast.Attribute, ast.Subscript)) else None
        while isinstance(base, (ast.Attribute, ast.Subscript)):
            base = base.value
        if not isinstance(base, ast.Name) or self.me is None or self._on_the_class():
            return
        if base.id != self.me and not (base.id in self._held and isinstance(target, ast.Attribute)
                                       and target.value is base and isinstance(value, ast.Name)
                                       and value.id == self.me):
            return  # not the instance, nor a child it holds handed the instance (`col.parent = self`)
        if isinstance(value, ast.Name) and value.id in self._made_here_once:
            value = self._made_here_once[value.id]  # `col = Column(self); self.columns[k] = col`
        how = "held child" if base.id != self.me else self._refers_back(value)
        if not how:
            return
        assert self.cls is not None
        cls = self.facts.holders.classes.get(self.cls)  # None: a class defined under an `if`
        spelled = ast.unparse(target)
        if cls is not None and not cycle_broken(cls, spelled, self.node) and not used_on_release(cls, spelled):
            self.facts.self_references.append(SelfReference(
                f"{self.facts.holders.module}.{self.cls}", ast.unparse(target), how,
                ast.unparse(value), self.name, resource_kept(cls),
                self.facts.lines.site(self._culprit(stmt, value), stmt)))

    def added_to_self(self, call: ast.Call) -> None:
        """`self.children.append(Child(self))`, `self.layers.setdefault(k, layer)`: an add
        to a container of the instance, read as a store of the added value."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ADD_CALLS and call.args \
                and self._rooted_in_me(func.value):
            self._self_reference(func.value, call.args[-1], call)

    @cached_property
    def _made_here_once(self) -> dict[str, ast.Call]:
        """Locals the function binds once, to what a call returns (`col = Column(self, n)`)."""
        seen: dict[str, list[Optional[ast.AST]]] = {}
        for stmt in statements(getattr(self.node, "body")):
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                for n in ast.walk(stmt.target):
                    if isinstance(n, ast.Name):
                        seen.setdefault(n.id, []).append(None)
            for target, value in bindings(stmt):
                for n in ast.walk(target):  # `col.parent = x` binds no name: `col` is read
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        seen.setdefault(n.id, []).append(value if n is target else None)
        return {name: values[0] for name, values in seen.items()
                if len(values) == 1 and isinstance(values[0], ast.Call) and name not in self.params}

    @cached_property
    def _held(self) -> set[str]:
        """Locals naming an object the instance holds: a loop variable over one of its
        containers (`for v in self.overloaded.values()`), an entry read from one (`col =
        self.columns[name]`), or a value this function stores on it (`self.columns[name] =
        col`, `self.children.append(child)`)."""
        found: set[str] = set()
        for stmt in statements(getattr(self.node, "body")):
            if isinstance(stmt, (ast.For, ast.AsyncFor)) and self._rooted_in_me(stmt.iter):
                found.update(n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name))
            for target, value in bindings(stmt):
                if isinstance(target, ast.Name) and isinstance(value, (ast.Subscript, ast.Call)) \
                        and self._rooted_in_me(value):
                    found.add(target.id)
                elif isinstance(target, (ast.Attribute, ast.Subscript)) and isinstance(value, ast.Name) \
                        and self._rooted_in_me(target):
                    found.add(value.id)
            if isinstance(stmt, ast.Expr) and isinstance(call := stmt.value, ast.Call) \
                    and isinstance(call.func, ast.Attribute) and call.func.attr in ADD_CALLS and call.args \
                    and isinstance(call.args[-1], ast.Name) and self._rooted_in_me(call.func.value):
                found.add(call.args[-1].id)
        found.discard(self.me or "")
        return found

    def _rooted_in_me(self, expr: ast.AST) -> bool:
        """An attribute chain on the instance, or an entry or view of one (`self.cols`,
        `self.cols[k]`, `self.cols.get(k)`, `self.cols.values()`), not the instance itself."""
        if not isinstance(expr, (ast.Attribute, ast.Subscript, ast.Call)):
            return False
        while isinstance(expr, (ast.Attribute, ast.Subscript, ast.Call)):
            if isinstance(expr, ast.Call):
                if not (isinstance(expr.func, ast.Attribute) and expr.func.attr in _VIEWS):
                    return False
                expr = expr.func.value
            else:
                expr = expr.value
        return isinstance(expr, ast.Name) and expr.id == self.me

    def _on_the_class(self) -> bool:
        """A classmethod, `__init_subclass__` or `__new__`: its first parameter is the class
        (`cls._registry[name] = cls` registers the class, no instance)."""
        return self.node.name in ("__init_subclass__", "__new__", "__class_getitem__") or any(
            last_name(d) == "classmethod" for d in self.node.decorator_list)

    def _culprit(self, stmt: ast.AST, value: ast.AST) -> ast.AST:
        """Where the cycle closes: the argument that hands the instance (or a callback into
        it) to the object made (`on_remove=self._gc`, often lines below the statement's
        start); the whole statement otherwise."""
        if isinstance(value, ast.Call) and last_name(value.func) not in ("partial", "MethodType", "partialmethod"):
            for arg in [*value.args, *value.keywords]:
                if self._is_me_or_mine(arg.value if isinstance(arg, ast.keyword) else arg):
                    return arg
        return stmt

    def _refers_back(self, value: ast.AST) -> str:
        """How `value` references the instance: "bound method", "closure", "partial",
        "back-reference"; "" when it does not (or only weakly)."""
        me, cls = self.me, self.cls
        assert cls is not None
        if isinstance(value, ast.Name) and value.id == me:
            return "back-reference"  # `self.child.parent = self`
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == me:
            return "bound method" if value.attr in self.facts.holders.methods.get(cls, ()) else ""
        if isinstance(value, ast.Lambda) and me in names_in(value.body):
            return "closure"
        if isinstance(value, ast.Name) and value.id in self.closures:
            return "closure"
        if not isinstance(value, ast.Call):
            return ""
        callee = last_name(value.func)
        if callee in ("ref", "proxy", "WeakMethod", "finalize") or "weak" in (dotted(value.func) or "").lower():
            return ""
        args = [*value.args, *(k.value for k in value.keywords)]
        if callee in ("partial", "MethodType", "partialmethod") and any(
                (isinstance(a, ast.Name) and a.id == me) or self._refers_back(a) == "bound method"
                for a in args):
            return "partial"
        other = self.facts.holders.classes.get(callee)
        if other is not None and other.name != cls:
            for position, keyword in self.facts.kept_params(other):
                passed = (value.args[position] if position is not None and position < len(value.args)
                          else next((k.value for k in value.keywords if k.arg == keyword), None))
                if passed is not None and self._is_me_or_mine(passed):
                    return "back-reference"
            return ""
        # A class from elsewhere: a callback it is handed is kept (what else is it for), the
        # instance itself may be kept weakly (an owner or sender often is), so not counted.
        if keeps_what_it_is_handed(value.func) and any(self._calls_back(a) for a in args):
            return "back-reference"
        return ""

    def _calls_back(self, value: ast.AST) -> bool:
        """A bound method of the instance, a lambda or nested function over it, a partial."""
        return self._refers_back(value) in ("bound method", "closure", "partial")

    def _is_me_or_mine(self, value: ast.AST) -> bool:
        """The instance itself, or something that calls back into it (a bound method, a
        lambda or nested function over it, a partial of either)."""
        if isinstance(value, ast.Starred):
            value = value.value
        return (isinstance(value, ast.Name) and value.id == self.me) or self._calls_back(value)


# What starts work that ends on its own: each call makes a new one.
_STARTED = frozenset({"Thread", "Process", "Timer", "create_task", "ensure_future", "submit",
                      "run_coroutine_threadsafe"})
# What a call makes for another party to resolve or fill: a reply to wait for.
_REPLIES = frozenset({"create_future", "Future", "Queue", "LifoQueue", "PriorityQueue", "SimpleQueue",
                      "Event", "Condition"})


def _catches_cancellation(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True  # a bare `except:`
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(last_name(t) in ("BaseException", "CancelledError") for t in caught)


def container_defaults(node: ast.AST) -> dict[str, str]:
    """Parameters whose default value is a container (`def f(x, seen=[])`), with its kind.
    The default is made once, when the `def` runs, and lives as long as the function: what
    a call adds to it stays for every later call. A parameter the body binds anew to
    anything but what a call handed it returns (`acc = list(acc)`) is left out: the adds
    after it go to a new container (`acc += items` adds in place)."""
    args = node.args  # type: ignore[attr-defined]
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    found = {a.arg: kind for a, d in pairs if (kind := container_kind(d)) not in (None, "weak", "bounded")}
    if found:
        nodes = list(ast.walk(node))
        handed_back = {id(n) for a in nodes if isinstance(a, ast.Assign) and isinstance(a.value, ast.Call)
                       for t in a.targets for n in ast.walk(t) if isinstance(n, ast.Name) and n.id in names_in(a.value)}
        handed_back |= {id(a.target) for a in nodes if isinstance(a, ast.AugAssign)}  # `acc += x` adds in place
        for sub in nodes:
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and id(sub) not in handed_back:
                found.pop(sub.id, None)
    return found


def _unconditional_yields(body: list[ast.stmt]) -> list[int]:
    """Lines of a context manager's `yield` statements that run on every path (not under an
    `if` or a loop: a generator that yields early in one branch and returns removes, in the
    others, before its own `yield`)."""
    found: list[int] = []
    for stmt in body:
        if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, (ast.Yield, ast.YieldFrom)):
            found.append(stmt.lineno)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)):
            found += _unconditional_yields(stmt.body)
    return found

