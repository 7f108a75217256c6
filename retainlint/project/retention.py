"""The retention model of one module, from its `ast`: who holds what, what adds to it, what
drops from it, and the references objects keep to themselves.

Every retention bug is one fact: an object meant to go away stays reachable from a holder
that lives longer, through an edge nothing removes. The project index keeps these facts
per file (`FileSummary.retention`); `consequence` judges what an edge costs across the
project, and the checks (`rules/rl306_*`, `rl307_*`, `rl703_*`) report what it finds.

Holders, by lifetime:
- `module`: a container bound at module level (`_pending = {}`): lives for the process;
- `class`: a container in a class body (`_instances = []`): lives for the process, shared
  by every instance;
- `instance`: a container an instance keeps (`self._jobs = {}`): lives as long as the
  instance (a server or an engine often lives for the process).

A holder is named `module.name`, `module.Class.attr` or `module.Class().attr`, so that
other files' drops (`from pkg.state import _pending; _pending.pop(k)`) join with it.

Everything is plain data (tuples of strings and numbers): the project index caches it."""

from __future__ import annotations

import ast
from dataclasses import astuple, dataclass, replace
from functools import cached_property
from typing import Any, Iterator, Optional

from retainlint.project.frames import FrameCycle, frame_cycles
from retainlint.project.frames import own_nodes as _own
from retainlint.project.nodes import OWNERS, FileNodes, dotted

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

# Calls that make a container, by their last name (`collections.OrderedDict()` too).
CONTAINER_CALLS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter"})
_WEAK = frozenset({"WeakValueDictionary", "WeakKeyDictionary", "WeakSet"})
_ADDS = frozenset({"append", "extend", "add", "insert", "appendleft", "extendleft",
                   "setdefault", "__setitem__"})
_DROPS = frozenset({"pop", "popitem", "remove", "discard", "clear", "popleft", "__delitem__",
                    "difference_update", "intersection_update", "cancel"})
# Calls that read a container without keeping it or changing it.
_READERS = frozenset({"len", "list", "tuple", "sorted", "set", "frozenset", "dict", "iter",
                      "enumerate", "zip", "any", "all", "sum", "min", "max", "map", "filter",
                      "reversed", "repr", "str", "print", "bool", "isinstance", "hash", "id",
                      "format", "getattr", "hasattr"})
# Methods run once per object or per class, never per request (and names starting so).
_ONCE = ("__init_subclass__", "__set_name__", "__class_getitem__", "__post_init__",
         "__enter__", "__aenter__")
_ONCE_PREFIXES = ("setup", "build", "configure", "init", "load", "create", "prepare", "launch",
                  "start", "spawn", "warmup")
# Methods that tear their object down: what they empty is emptied once, at the end.
_TEARDOWN = ("close", "aclose", "stop", "shutdown", "teardown", "tear_down", "dispose", "terminate",
             "destroy", "cancel")
# Functions named as an API for registering things: how often they run is their callers'.
_REGISTERS = ("register", "add_", "subscribe", "attach", "install", "declare")


@dataclass(frozen=True)
class Site:
    """1-based start (line, character column), end, and the lines of the statement."""

    line: int
    column: int
    end_line: int
    end_column: int
    first: int
    last: int


@dataclass(frozen=True)
class Growth:
    """An edge that adds to a holder: `holder[key] = value`, `holder.append(value)`."""

    holder: str  # `module.name`, `module.Class.attr`, `module.Class().attr`
    kind: str  # "module", "class", "instance"
    shown: str  # the holder as the code spells it
    keyed: bool  # a slot per key (a dict) rather than one more item (a list, a set)
    key: str  # the key's code ("" when not keyed)
    value: str  # the added value's code ("" when not known)
    function: str  # the function that adds, as `Class.method` or `function`
    once: bool  # that function runs once per class or object (`__init_subclass__`, setup)
    in_init: bool  # the add is in `__init__`: one entry per instance made
    guarded: bool  # inside `if key not in holder` (a memo: one entry per distinct key)
    pins_self: bool  # the entry references the instance adding it (`self`, `self.m`)
    registers: bool  # the function exists to store what it is handed (see `_Function`)
    # the function itself removes the entry, but only once an `await` has returned, outside
    # `finally`: a call that fails or is cancelled there leaves its entry behind
    undone_on_success: bool
    site: Site


@dataclass(frozen=True)
class SelfReference:
    """An object keeping a reference back to itself: `self.cb = self.method`."""

    cls: str  # `module.Class`
    attr: str  # where it is kept, as the code spells it (`self._on_done`)
    how: str  # "bound method", "closure", "partial", "back-reference"
    shown: str  # the value's code
    function: str
    site: Site


# Positions in `ModuleFacts.plain()`, for questions that read every file's facts without
# decoding them; a plain growth holds `Growth`'s fields in order.
GROWTH, DROPS, BOUNDED, SELF_REFERENCES, LONG_LIVED, PER_CALL, COLLECTOR_OFF, FRAMES, \
    SUCCESS_DROPS, TEARDOWN_DROPS, SERVING = range(11)
GROWTH_KIND = 1


@dataclass
class ModuleFacts:
    growth: list[Growth]
    # holders something here removes from, rebinds or hands elsewhere; `.attr` when it
    # removes from some object's `attr` (a base class's method on the same instance)
    drops: set[str]
    bounded: set[str]  # holders whose size something here checks (`len(h) > n`)
    self_references: list[SelfReference]
    long_lived: set[str]  # classes (`module.Class`) made at module level or in an entry point
    made_per_call: set[str]  # the module's classes made in a loop or a per-request function
    collector_off: bool  # the module disables the cyclic collector
    frames: list[FrameCycle]  # functions whose frame keeps its own traceback (`frames.py`)
    # holders whose only drops here follow an `await` outside `finally` (a call cancelled or
    # failing there skips them), and those dropped only when the owner is torn down (`close()`)
    success_drops: set[str]
    teardown_drops: set[str]
    serving: set[str]  # classes (`module.Class`) whose methods serve requests (see `_serving`)

    def plain(self) -> tuple[object, ...]:
        """As stored in the index; the `GROWTH`... constants name its positions."""
        return ([astuple(g) for g in self.growth], sorted(self.drops), sorted(self.bounded),
                [astuple(r) for r in self.self_references], sorted(self.long_lived),
                sorted(self.made_per_call), self.collector_off,
                [astuple(f) for f in self.frames],
                sorted(self.success_drops), sorted(self.teardown_drops), sorted(self.serving))

    @classmethod
    def from_plain(cls, plain: tuple[Any, ...]) -> "ModuleFacts":
        (growth, drops, bounded, refs, long_lived, per_call, collector_off, frames,
         success, teardown, serving) = plain
        return cls([Growth(*g[:-1], Site(*g[-1])) for g in growth],  # type: ignore[call-arg]
                   set(drops), set(bounded),
                   [SelfReference(*r[:-1], Site(*r[-1])) for r in refs],  # type: ignore[call-arg]
                   set(long_lived), set(per_call), collector_off,
                   [FrameCycle(*f[:-1], Site(*f[-1])) for f in frames],  # type: ignore[call-arg]
                   set(success), set(teardown), set(serving))


# Tests true only while CUDA graphs are captured or code is compiled.
_WARMUP_TESTS = frozenset({"is_current_stream_capturing", "is_capturing", "is_compiling",
                           "is_dynamo_compiling"})


def _warms_up(test: ast.AST) -> bool:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_warms_up(v) for v in test.values)
    return isinstance(test, ast.Call) and _last_name(test.func) in _WARMUP_TESTS


def _last_name(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def container_kind(value: Optional[ast.AST]) -> Optional[str]:
    """"dict", "list", "set", "deque(bounded)"... for an expression making an empty or
    literal container; "weak" for a weak one; None for anything else."""
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return "dict"
    if isinstance(value, (ast.List, ast.ListComp)):
        return "list"
    if isinstance(value, (ast.Set, ast.SetComp)):
        return "set"
    if isinstance(value, ast.Call):
        name = _last_name(value.func)
        if name in _WEAK:
            return "weak"
        if name in CONTAINER_CALLS:
            if name == "deque" and (len(value.args) > 1 or any(k.arg == "maxlen" for k in value.keywords)):
                return "bounded"
            return name
    return None


class _Lines:
    """Turns `ast`'s byte offsets into 1-based character columns."""

    def __init__(self, source: bytes) -> None:
        self.lines = source.splitlines()

    def column(self, line: int, offset: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else b""
        return len(text[:offset].decode("utf-8", "replace")) + 1

    def site(self, node: ast.AST, statement: ast.AST) -> Site:
        end_line = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        end_col = getattr(node, "end_col_offset", None) or node.col_offset  # type: ignore[attr-defined]
        return Site(node.lineno, self.column(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                    end_line, self.column(end_line, end_col),
                    statement.lineno, statement.end_lineno or statement.lineno)  # type: ignore[attr-defined]


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class _Holders:
    """The holders a module declares, and how an expression inside a function names one."""

    def __init__(self, module: str, tree: ast.Module) -> None:
        self.module = module
        self.module_level: dict[str, str] = {}  # name -> container kind
        self.class_level: dict[str, dict[str, str]] = {}  # class -> attr -> kind
        self.instance: dict[str, dict[str, str]] = {}  # class -> attr -> kind
        self.methods: dict[str, set[str]] = {}  # class -> method names
        self.classes: dict[str, ast.ClassDef] = {}
        for node in tree.body:
            for target, value in _bindings(node):
                if isinstance(target, ast.Name) and not target.id.startswith("__"):  # `__all__`
                    kind = container_kind(value)
                    if kind is not None:
                        self.module_level[target.id] = kind
                    else:
                        self.module_level.pop(target.id, None)  # rebound to something else
            if isinstance(node, ast.ClassDef):
                self._class(node)

    def _class(self, node: ast.ClassDef) -> None:
        self.classes[node.name] = node
        own = self.class_level.setdefault(node.name, {})
        # Methods, not properties: `self.size` reads a value, it is no bound method.
        self.methods[node.name] = {f.name for f in node.body if isinstance(f, _FUNCTIONS)
                                   and not any("property" in (dotted(d) or "") or _last_name(d) in ("setter", "getter")
                                               for d in f.decorator_list)}
        for item in node.body:
            for target, value in _bindings(item):
                kind = container_kind(value)
                if isinstance(target, ast.Name) and kind is not None:
                    own[target.id] = kind
        kept = self.instance.setdefault(node.name, {})
        for method in node.body:
            if not isinstance(method, _FUNCTIONS) or method.name != "__init__" or not method.args.args:
                continue
            me = method.args.args[0].arg
            for sub in _statements(method.body):
                for target, value in _bindings(sub):
                    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                            and target.value.id == me):
                        kind = container_kind(value)
                        if kind is not None:
                            kept.setdefault(target.attr, kind)
        for attr in kept:
            own.pop(attr, None)  # assigned per instance: not the class's shared one

    def named(self, expr: ast.AST, cls: Optional[str], me: Optional[str],
              local: set[str]) -> Optional[tuple[str, str, str]]:
        """(holder, kind, container) for an expression naming a holder, else None."""
        if isinstance(expr, ast.Name):
            if expr.id in self.module_level and expr.id not in local:
                return f"{self.module}.{expr.id}", "module", self.module_level[expr.id]
            return None
        if not isinstance(expr, ast.Attribute) or not isinstance(expr.value, ast.Name):
            return None
        base, attr = expr.value.id, expr.attr
        if cls is not None and base == me:
            if attr in self.instance.get(cls, {}):
                return f"{self.module}.{cls}().{attr}", "instance", self.instance[cls][attr]
            owner = self._declaring(cls, attr)
            if owner is not None:
                return f"{self.module}.{owner}.{attr}", "class", self.class_level[owner][attr]
            return None
        owner = cls if (base == "cls" and cls is not None) else base
        if attr in self.class_level.get(owner, {}):
            return f"{self.module}.{owner}.{attr}", "class", self.class_level[owner][attr]
        return None

    def _declaring(self, cls: str, attr: str) -> Optional[str]:
        """The class of this module whose body binds `attr` as a container that `self.attr`
        in `cls` reaches: `cls` itself, else the nearest base defined in this module (a
        subclass appending to a list its base declared shares that one list), unless a
        class on the way assigns it per instance."""
        seen: set[str] = set()
        todo = [cls]
        while todo:
            name = todo.pop(0)
            if name in seen or name not in self.classes:
                continue
            seen.add(name)
            if attr in self.instance.get(name, {}):
                return None
            if attr in self.class_level.get(name, {}):
                return name
            todo += [b.id for b in self.classes[name].bases if isinstance(b, ast.Name)]
        return None


def _bindings(node: ast.AST) -> Iterator[tuple[ast.AST, Optional[ast.AST]]]:
    """(target, value) of an assignment; each element of an unpacking target, paired
    with its own value when the right side is a tuple of the same length."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from _unpacked(target, node.value)
    elif isinstance(node, ast.AnnAssign):
        yield node.target, node.value


def _unpacked(target: ast.AST, value: Optional[ast.AST]) -> Iterator[tuple[ast.AST, Optional[ast.AST]]]:
    if not isinstance(target, (ast.Tuple, ast.List)):
        yield target, value
        return
    values = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
    for i, element in enumerate(target.elts):
        inner = element.value if isinstance(element, ast.Starred) else element
        same = values is not None and len(values) == len(target.elts)
        yield from _unpacked(inner, values[i] if same and values is not None else None)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a function body, nested blocks included, nested definitions not."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for block in [*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())]:
            yield from _statements(block.body)


def _expressions(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of one statement, not of the statements nested in it."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        yield node
        for name, value in ast.iter_fields(node):
            if name in ("body", "orelse", "finalbody", "handlers", "cases") and isinstance(value, list):
                continue  # nested statements (a lambda's body is an expression: walked)
            if isinstance(value, ast.AST):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.AST))


class _Function:
    """What one function does to the module's holders."""

    def __init__(self, facts: "_Builder", node: ast.AST, cls: Optional[str],
                 outer_me: Optional[str] = None) -> None:
        """`outer_me`: for a function nested in a method, the method's name for the
        instance (a closure sees it)."""
        assert isinstance(node, _FUNCTIONS)
        self.facts, self.node, self.cls = facts, node, cls
        args = node.args
        self.params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        if outer_me is not None:
            self.me: Optional[str] = outer_me
        else:
            self.me = args.args[0].arg if cls is not None and args.args else None
        if any(_last_name(d) == "staticmethod" for d in node.decorator_list):
            self.me = None
        self.outer_me = outer_me
        self.name = f"{cls}.{node.name}" if cls else node.name
        # Named for set-up, but run per request when a handler calls it (`self._create_span()`
        # from `on_chain_start()`).
        self.once = _runs_once(node.name) and not (cls is not None and node.name in facts.called_by_handlers(cls))
        # A serve loop (`while True:`, `while not self.stopped:`) runs its body per request,
        # whatever the function around it is named.
        self.loops = [(w.lineno, w.end_lineno or w.lineno) for w in _own(node)
                      if isinstance(w, ast.While) and _serves_until_stopped(w)] if self.once else []
        # `if torch.cuda.is_current_stream_capturing():` runs while graphs are captured or code
        # is compiled, at start-up: what it adds is bounded whatever calls the function.
        self.warmup = [(i.body[0].lineno, i.body[-1].end_lineno or i.body[-1].lineno) for i in _own(node)
                       if isinstance(i, ast.If) and _warms_up(i.test)]
        # Tears the whole object down: named so, and handed no entry to remove
        # (`_stop_heartbeat(req_id)` ends one request's entry, not the object).
        required = len(args.posonlyargs) + len(args.args) - len(args.defaults) - (1 if cls is not None else 0)
        self.teardown = (node.name.lstrip("_").startswith(_TEARDOWN) and required <= 0) \
            or node.name in ("__exit__", "__aexit__", "__del__")
        # Path-sensitive drops (async functions only: cancellation reaches every `await`):
        # the lines of the awaits, and the statements under `finally` or an `except`.
        self.awaits: list[int] = []
        self.covered: set[int] = set()
        self.fragile = False  # the statement being read runs only if the awaits before it return
        self.in_callback = False  # the node being read is in a lambda: a callback
        self.success_drops: dict[str, int] = {}  # holder -> line of its first such drop here
        self.firm_drops: set[str] = set()

    @cached_property
    def local(self) -> set[str]:
        node = self.node
        declared_global = {n for s in ast.walk(node) if isinstance(s, ast.Global) for n in s.names}
        local = (self.params | {n.id for s in ast.walk(node) for n in _stored_names(s)}) - declared_global
        if self.outer_me is not None:
            local.discard(self.outer_me)
        return local

    @cached_property
    def registers(self) -> bool:
        """A function that exists to store what it is handed - a decorator returning it, a
        body that does nothing else (`def add_hook(h): _hooks.append(h)`), or one named as
        a registration API: how often it runs is its callers' choice, not a growth of its own."""
        node = self.node
        returned = {n.id for s in ast.walk(node) if isinstance(s, ast.Return) and s.value is not None
                    for n in [s.value] if isinstance(n, ast.Name)}
        inner = {d.name for d in node.body if isinstance(d, _FUNCTIONS)}
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        return bool(returned & (self.params | inner)) or (
            len(body) == 1 and node.name != "__init__" and _adds_a_parameter(body[0], self.params)
        ) or node.name.lstrip("_").startswith(_REGISTERS)

    @cached_property
    def closures(self) -> set[str]:
        """Nested functions that use the instance (`def cb(): self.x`)."""
        me = self.me
        return {d.name for d in self.node.body if isinstance(d, _FUNCTIONS) and me in _names_in(d)}

    def holder(self, expr: ast.AST) -> Optional[tuple[str, str, str]]:
        holders = self.facts.holders
        if isinstance(expr, ast.Name) and expr.id not in holders.module_level:
            return None  # the common case, without working out the function's locals
        if isinstance(expr, ast.Attribute) and not isinstance(expr.value, ast.Name):
            return None
        return holders.named(expr, self.cls, self.me, self.local if isinstance(expr, ast.Name) else set())

    def scan(self) -> None:
        guarded = self._looked_up()
        if isinstance(self.node, ast.AsyncFunctionDef):
            self._paths()
        first = len(self.facts.growth)
        for stmt in _statements(self.node.body):
            self.fragile = bool(self.awaits) and id(stmt) not in self.covered and self.awaits[0] < stmt.lineno
            self._statement(stmt, guarded)
        self.fragile = False
        for i in range(first, len(self.facts.growth)):
            g = self.facts.growth[i]
            line = self.success_drops.get(g.holder)
            if line is not None and g.holder not in self.firm_drops \
                    and any(g.site.line < a < line for a in self.awaits):
                self.facts.growth[i] = replace(g, undone_on_success=True)

    def _paths(self) -> None:
        for sub in _own(self.node):
            # Not `async with lock:`: a removal right under it runs once the lock is held.
            if isinstance(sub, (ast.Await, ast.AsyncFor)):
                self.awaits.append(sub.lineno)
            elif isinstance(sub, ast.Try) or type(sub).__name__ == "TryStar":
                for block in [getattr(sub, "finalbody"), *(h.body for h in getattr(sub, "handlers"))]:
                    self.covered.update(id(s) for s in _statements(block))
        self.awaits.sort()

    def _drop(self, holder: str) -> None:
        """Something here removes from, rebinds or hands on `holder`: a release wherever
        the call ends, only when it gets that far, or only when the owner is torn down.
        (In a lambda, a callback: it runs whenever it is called, `add_done_callback(lambda
        _: self.tasks.pop(k))` when the task ends, however this function goes on.)"""
        if self.in_callback:
            self.firm_drops.add(holder)
            self.facts.drops.add(holder)
        elif self.fragile:
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
        for target, value in _bindings(stmt):
            if isinstance(target, ast.Subscript):
                named = self.holder(target.value)
                if named and isinstance(target.slice, ast.Slice):
                    self._drop(named[0])
                elif named and not isinstance(target.slice, ast.Constant):
                    self._grow(named, target.value, True, target.slice, value, stmt, guarded)
            else:
                named = self.holder(target)
                if named and not (named[1] == "instance" and self.node.name == "__init__"):
                    self._drop(named[0])  # rebound: what it held goes
            aliased = self.holder(value) if value is not None else None
            if aliased:
                facts.drops.add(aliased[0])  # an alias: may be emptied through it
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Subscript):
            named = self.holder(stmt.target.value)
            if named and named[2] in ("defaultdict", "Counter") and not isinstance(stmt.target.slice, ast.Constant):
                self._grow(named, stmt.target.value, True, stmt.target.slice, None, stmt, guarded)
        if isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                inner = target.value if isinstance(target, ast.Subscript) else target
                if isinstance(inner, ast.Attribute):
                    self._drop("." + inner.attr)
                named = self.holder(target.value if isinstance(target, ast.Subscript) else target)
                if named:
                    self._drop(named[0])
        found = list(_expressions(stmt))
        called = {id(n.func) for n in found if isinstance(n, ast.Call)}
        callbacks = {id(sub) for n in found if isinstance(n, ast.Lambda) for sub in ast.walk(n.body)}
        for node in found:
            self.in_callback = id(node) in callbacks
            if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) and node.value is not None:
                named = self.holder(node.value)
                if named:
                    facts.drops.add(named[0])  # handed to the caller, who may empty it
            if isinstance(node, ast.Call):
                self._call(node, stmt, guarded)
            elif isinstance(node, ast.Attribute) and node.attr in _DROPS and id(node) not in called:
                named = self.holder(node.value)  # `task.add_done_callback(tasks.discard)`: runs
                if named:  # whenever the task ends, however this function goes on
                    facts.drops.add(named[0])
            if isinstance(node, ast.Compare):
                for sub in [node.left, *node.comparators]:
                    if isinstance(sub, ast.Call) and _last_name(sub.func) == "len" and sub.args:
                        named = self.holder(sub.args[0])
                        if named:
                            facts.bounded.add(named[0])

    def _call(self, call: ast.Call, stmt: ast.stmt, guarded: set[str]) -> None:
        facts = self.facts
        if isinstance(call.func, ast.Attribute) and call.func.attr in _DROPS \
                and isinstance(call.func.value, ast.Attribute):
            self._drop("." + call.func.value.attr)  # any class's `x.attr.pop(...)`
        if isinstance(call.func, ast.Attribute):
            named = self.holder(call.func.value)
            if named:
                method = call.func.attr
                if method in _DROPS:
                    self._drop(named[0])
                elif method in _ADDS or (method == "update" and named[2] != "set"):
                    keyed = method in ("setdefault", "__setitem__", "update")
                    key = call.args[0] if keyed and call.args and method != "update" else None
                    value = call.args[-1] if call.args else None
                    if not (keyed and isinstance(key, ast.Constant)):
                        self._grow(named, call.func.value, keyed, key, value, stmt, guarded)
        if _last_name(call.func) not in _READERS:
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                named = self.holder(arg.value if isinstance(arg, ast.Starred) else arg)
                if named:
                    facts.drops.add(named[0])  # handed to code that may empty it

    def _grow(self, named: tuple[str, str, str], expr: ast.AST, keyed: bool,
              key: Optional[ast.AST], value: Optional[ast.AST], stmt: ast.stmt,
              guarded: set[str]) -> None:
        holder, kind, container = named
        if container in ("bounded", "weak"):
            return
        pins = bool(self.me) and value is not None and self._pins_self(value)
        if container == "set" and self.node.name == "__init__" and not pins:
            return  # a value per distinct instance name or kind, not one per instance made
        self.facts.growth.append(Growth(
            holder, kind, ast.unparse(expr), keyed, ast.unparse(key) if key is not None else "",
            ast.unparse(value) if value is not None else "",
            self.name, (self.once and not any(a <= stmt.lineno <= b for a, b in self.loops))
            or any(a <= stmt.lineno <= b for a, b in self.warmup),
            self.node.name == "__init__", holder in guarded,
            pins, self.registers, False, self.facts.lines.site(stmt, stmt)))

    def _pins_self(self, value: ast.AST) -> bool:
        """Does the stored value keep the instance itself: `self`, a tuple holding it, a
        bound method or a function over it? (`self.name`, a value read off it, does not.)"""
        if isinstance(value, ast.Name):
            return value.id == self.me
        if isinstance(value, (ast.Tuple, ast.List)):
            return any(self._pins_self(e) for e in value.elts)
        return self.cls is not None and bool(self._refers_back(value))

    def _self_reference(self, target: ast.AST, value: ast.AST, stmt: ast.stmt) -> None:
        base = target.value if isinstance(target, (ast.Attribute, ast.Subscript)) else None
        while isinstance(base, (ast.Attribute, ast.Subscript)):
            base = base.value
        if not (isinstance(base, ast.Name) and base.id == self.me):
            return
        how = self._refers_back(value)
        if how:
            assert self.cls is not None
            self.facts.self_references.append(SelfReference(
                f"{self.facts.holders.module}.{self.cls}", ast.unparse(target), how,
                ast.unparse(value), self.name, self.facts.lines.site(stmt, stmt)))

    def _refers_back(self, value: ast.AST) -> str:
        """How `value` references the instance: "bound method", "closure", "partial",
        "back-reference"; "" when it does not (or only weakly)."""
        me, cls = self.me, self.cls
        assert cls is not None
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == me:
            return "bound method" if value.attr in self.facts.holders.methods.get(cls, ()) else ""
        if isinstance(value, ast.Lambda) and me in _names_in(value.body):
            return "closure"
        if isinstance(value, ast.Name) and value.id in self.closures:
            return "closure"
        if not isinstance(value, ast.Call):
            return ""
        callee = _last_name(value.func)
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
                if isinstance(passed, ast.Name) and passed.id == me:
                    return "back-reference"
        return ""


def _stored_names(node: ast.AST) -> Iterator[ast.Name]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        yield node


class _Builder:
    def __init__(self, module: str, tree: ast.Module, source: bytes, nodes: FileNodes,
                 imports: dict[str, str]) -> None:
        self.imports = imports
        self.lines = _Lines(source)
        self.holders = _Holders(module, tree)
        self.nodes = nodes
        self.growth: list[Growth] = []
        self.drops: set[str] = set()
        self.bounded: set[str] = set()
        self.success_drops: set[str] = set()
        self.teardown_drops: set[str] = set()
        self.self_references: list[SelfReference] = []
        self._kept: dict[str, list[tuple[Optional[int], str]]] = {}
        self._called: dict[str, set[str]] = {}
        self._holder_names: Optional[list[bytes]] = None
        self.tree = tree

    def called_by_handlers(self, cls: str) -> set[str]:
        """The methods of `cls` its handlers call on `self` (see `_serves`)."""
        if cls not in self._called:
            found: set[str] = set()
            node = self.holders.classes.get(cls)
            for method in (node.body if node is not None else ()):
                if isinstance(method, _FUNCTIONS) and _serves(method):
                    found.update(c.func.attr for c in _own(method) if isinstance(c, ast.Call)
                                 and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
                                 and c.func.value.id == "self")
            self._called[cls] = found
        return self._called[cls]

    def kept_params(self, cls: ast.ClassDef) -> list[tuple[Optional[int], str]]:
        """(position after `self`, name) of the `__init__` parameters the class stores
        on its instance as they are (`self.parent = parent`)."""
        if cls.name not in self._kept:
            kept: list[tuple[Optional[int], str]] = []
            init = next((f for f in cls.body if isinstance(f, _FUNCTIONS) and f.name == "__init__"), None)
            if init is not None and init.args.args:
                me = init.args.args[0].arg
                positional = [a.arg for a in init.args.args[1:]]
                stored = {v.id for s in _statements(init.body) for t, v in _bindings(s)
                          if isinstance(v, ast.Name) and isinstance(t, ast.Attribute)
                          and isinstance(t.value, ast.Name) and t.value.id == me}
                for name in stored:
                    if name in positional:
                        kept.append((positional.index(name), name))
                    elif name in {a.arg for a in init.args.kwonlyargs}:
                        kept.append((None, name))
            self._kept[cls.name] = kept
        return self._kept[cls.name]

    def build(self) -> ModuleFacts:
        holders = self.holders
        if holders.module_level or any(holders.class_level.values()) or any(holders.instance.values()):
            for node in self.tree.body:
                if isinstance(node, _FUNCTIONS):
                    self._function(node, None)
                elif isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, _FUNCTIONS):
                            self._function(item, node.name)
            self._module_level_drops()
        self._self_references()
        self.drops |= self._dropped_elsewhere()
        long_lived, per_call = self._instantiations()
        collector_off = self._collector_off()
        serving = self._serving(per_call)
        frames = [replace(f, per_call=self._runs_per_call(f.function, serving))
                  for f in frame_cycles(self.nodes, lambda node: self.lines.site(node, node))]
        return ModuleFacts(self.growth, self.drops, self.bounded, self.self_references,
                           long_lived, per_call, collector_off, frames,
                           self.success_drops - self.drops, self.teardown_drops - self.drops,
                           serving)

    def _runs_per_call(self, function: str, serving: set[str]) -> bool:
        """Does `function` (`Class.method` or `function`) run per request, message or job:
        named so (`handle_error`, `run_job`, `__call__`), or a method of a class that serves?"""
        cls, _, name = function.rpartition(".")
        return any(word in name.lower() for word in _PER_CALL_FUNCTIONS) or (
            bool(cls) and f"{self.holders.module}.{cls}" in serving)

    def _function(self, node: ast.AST, cls: Optional[str]) -> None:
        if not self._mentions_a_holder(node):
            return
        outer = _Function(self, node, cls)
        outer.scan()
        for inner in ast.walk(node):  # nested functions: same holders, their own locals
            if inner is not node and isinstance(inner, _FUNCTIONS):
                _Function(self, inner, cls if outer.me else None, outer.me).scan()

    def _mentions_a_holder(self, node: ast.AST) -> bool:
        """Does the function's text name one of the module's holders? (Most functions do
        not: they are then not walked for growth.)"""
        if self._holder_names is None:
            h = self.holders
            self._holder_names = [n.encode() for n in {*h.module_level, *(a for c in h.class_level.values() for a in c),
                                                        *(a for c in h.instance.values() for a in c)}]
        lines = self.lines.lines[node.lineno - 1:node.end_lineno]  # type: ignore[attr-defined]
        return any(name in line for line in lines for name in self._holder_names)

    def _self_references(self) -> None:
        """`self.x = <value>` in methods, read from the index's table of assignments."""
        owner_of = self.nodes.owner_of
        methods: dict[int, _Function] = {}
        for stmt in self.nodes.of(ast.Assign, ast.AnnAssign):
            method = owner_of.get(id(stmt))
            cls = owner_of.get(id(method)) if method is not None else None
            if not isinstance(method, _FUNCTIONS) or not isinstance(cls, ast.ClassDef):
                continue
            function = methods.get(id(method))
            if function is None:
                function = methods[id(method)] = _Function(self, method, cls.name)
            if function.me is None:
                continue
            for target, value in _bindings(stmt):
                if isinstance(target, (ast.Attribute, ast.Subscript)) and value is not None:
                    function._self_reference(target, value, stmt)  # type: ignore[arg-type]

    def _function_around(self, node: ast.AST) -> Optional[ast.AST]:
        """The innermost function around `node` (lambdas looked through); None at module
        level or in a class body."""
        owner = self.nodes.owner_of.get(id(node))
        while isinstance(owner, ast.Lambda):
            owner = self.nodes.owner_of.get(id(owner))
        return owner if isinstance(owner, _FUNCTIONS) else None

    def _class_called(self, func: ast.AST) -> Optional[str]:
        """`module.Class` for a call of one of the module's classes, or of a capitalised
        name it imports (`Engine(...)`, `engines.Engine(...)`); None otherwise."""
        if isinstance(func, ast.Name) and func.id in self.holders.classes:
            return f"{self.holders.module}.{func.id}"
        name = dotted(func)
        if not name or not name.rpartition(".")[2][:1].isupper():
            return None
        head, _, rest = name.partition(".")
        if head in self.imports:
            return f"{self.imports[head]}.{rest}" if rest else self.imports[head]
        return None

    def _collector_off(self) -> bool:
        """Does a `gc.disable()` here leave the collector off? gc.freeze() only exempts what
        exists when it runs (objects made per call later are still collected), and a function
        that turns it back on (`finally: gc.enable()`, `addCleanup(gc.enable)`) only pauses it."""
        enabling = {id(self.nodes.owner(n)) for n in self.nodes.of(ast.Attribute) if dotted(n) == "gc.enable"}
        return any(dotted(getattr(n, "func")) == "gc.disable" and id(self.nodes.owner(n)) not in enabling
                   for n in self.nodes.of(ast.Call))

    def _instantiations(self) -> tuple[set[str], set[str]]:
        """Classes (`module.Class`, the module's own or imported) made once: at module level,
        in a class body, or in an entry point (`main()`, `serve()`), so they live for the
        process; and the module's classes made many times: in a loop or comprehension, or
        in a function whose name says it runs per request (`handle`, `on_data`, `__call__`)."""
        module = self.holders.module
        long_lived = {f"{module}.{c}" for c in self.holders.classes
                      if any(a.lstrip("_") in ("instance", "singleton")
                             for a in self.holders.class_level.get(c, {}))}
        per_call: set[str] = set()
        calls = [(c, made) for c in self.nodes.of(ast.Call)
                 if (made := self._class_called(getattr(c, "func"))) is not None]
        if not calls:
            return long_lived, per_call
        loops: dict[int, list[tuple[int, int]]] = {}
        for loop in self.nodes.of(*_LOOPS):
            around = self._function_around(loop)
            if around is not None:
                loops.setdefault(id(around), []).append(
                    (loop.lineno, loop.end_lineno or loop.lineno))  # type: ignore[attr-defined]
        for call, made in calls:
            function = self._function_around(call)
            if function is None or getattr(function, "name") in _ENTRY_POINTS:
                long_lived.add(made)
                continue
            fname = getattr(function, "name")
            if fname == "__init__" or _runs_once(fname) or not made.startswith(module + "."):
                continue  # made once per owner, or at set-up; other modules' classes: theirs
            line = getattr(call, "lineno")
            if any(word in fname.lower() for word in _PER_CALL_FUNCTIONS) or any(
                    start <= line <= end for start, end in loops.get(id(function), ())):
                per_call.add(made)
        return long_lived, per_call

    def _serving(self, per_call: set[str]) -> set[str]:
        """The module's classes whose methods serve requests, so that one instance outlives
        many of them: a handler (`handle_*`, `on_*`, `*_request`, `*_handler`, also nested in
        a method, or a method decorated as a route), a serve loop (`while True:`, `while not
        self.stopped:`), or both `start()` and `stop()`/`shutdown()`. A class made per call
        here is no such server."""
        found: set[str] = set()
        for name, cls in self.holders.classes.items():
            qualified = f"{self.holders.module}.{name}"
            if qualified in per_call:
                continue
            methods = [f for f in cls.body if isinstance(f, _FUNCTIONS)]
            names = {f.name for f in methods}
            if "start" in names and names & {"stop", "shutdown"} or any(
                    _serves(f) or any(_serves(inner) for inner in _own(f) if isinstance(inner, _FUNCTIONS))
                    or _serve_loop(f) for f in methods):
                found.add(qualified)
        return found

    def _module_level_drops(self) -> None:
        """Module-level code runs once: what it adds is bounded, but what it drops counts."""
        for call in self.nodes.of(ast.Call):
            func = getattr(call, "func")
            if isinstance(func, ast.Attribute) and func.attr in _DROPS \
                    and self.nodes.owner_of.get(id(call)) is None:
                named = self.holders.named(func.value, None, None, set())
                if named:
                    self.drops.add(named[0])

    def _dropped_elsewhere(self) -> set[str]:
        """Holders of other modules this module drops from, rebinds or hands on: `from
        pkg.state import _pending` then `_pending.pop(k)`, `return _pending` or
        `f(_pending)`, or `state._pending.clear()`."""
        imports = self.imports
        found: set[str] = set()
        if not imports:
            return found

        def note(target: Optional[ast.AST]) -> None:
            name = dotted(target) if target is not None else None
            if name:
                head, _, rest = name.partition(".")
                if head in imports:
                    found.add(f"{imports[head]}.{rest}" if rest else imports[head])

        nodes = self.nodes
        for attribute in nodes.of(ast.Attribute):
            if getattr(attribute, "attr") in _DROPS:
                note(getattr(attribute, "value"))  # called, or handed on to be called
        for call in nodes.of(ast.Call):
            if _last_name(getattr(call, "func")) not in _READERS:
                for arg in [*getattr(call, "args"), *(k.value for k in getattr(call, "keywords"))]:
                    note(arg)
        for delete in nodes.of(ast.Delete):
            for t in getattr(delete, "targets"):
                note(t.value if isinstance(t, ast.Subscript) else t)
        for node in nodes.of(ast.Return, ast.Yield):
            note(getattr(node, "value"))
        for assign in nodes.of(ast.Assign):
            note(getattr(assign, "value"))  # an alias
            for t in getattr(assign, "targets"):
                if isinstance(t, ast.Attribute):
                    note(t)  # `state._pending = {}`: rebinding another module's holder
        return found


# Functions that run once per process: what they make lives as long.
_ENTRY_POINTS = frozenset({"main", "cli", "serve", "run_server", "start_server", "entrypoint",
                           "run_app", "create_app", "app"})
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _adds_a_parameter(stmt: ast.stmt, params: set[str]) -> bool:
    """`h.append(param)`, `h.add(param)`: one more item, exactly what the caller handed."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("append", "add", "appendleft", "insert")
            and bool(call.args) and isinstance(call.args[-1], ast.Name) and call.args[-1].id in params)


_ROUTES = frozenset({"route", "get", "post", "put", "delete", "patch", "websocket", "listener",
                     "middleware", "on_event", "exception_handler", "api_route", "handler"})


def _serves(function: ast.AST) -> bool:
    """Is this function a handler, run once per request, message or connection: `handle`,
    `handle_*`, `*_handler`, `on_*` for a request, message or connection, or a method
    decorated as a route? (`on_train_begin()`, `from_request()`: not named for serving.)"""
    name = getattr(function, "name").lstrip("_")
    return (name.startswith("handle") or name.endswith("_handler")
            or (name.startswith("on_") and any(w in name for w in _SERVED))
            or any(isinstance(d, ast.Call) and _last_name(d.func) in _ROUTES
                   and isinstance(d.func, ast.Attribute) for d in getattr(function, "decorator_list")))


# What an `on_*` handler is named after when it runs per request.
_SERVED = ("request", "message", "msg", "connect", "packet", "chunk", "recv", "receive")
# Calls a serve loop waits in for the next piece of work.
_WAITS = frozenset({"recv", "recv_multipart", "recv_pyobj", "recvfrom", "accept", "wait", "poll",
                    "select", "receive", "read_message", "get_nowait"})


def _serves_until_stopped(loop: ast.While) -> bool:
    """`while True:`, `while self.running:`, `while not self.stopped:` around a wait for the
    next request (an `await`, `sock.recv()`, `queue.get()`...): a loop that parses, retries
    or walks does not serve."""
    test = loop.test.operand if isinstance(loop.test, ast.UnaryOp) else loop.test
    if not ((isinstance(test, ast.Constant) and test.value is True) or (
            isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == "self")):
        return False
    for sub in _own(loop):
        if isinstance(sub, (ast.Await, ast.AsyncFor, ast.AsyncWith)):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and (
                sub.func.attr in _WAITS or (sub.func.attr == "get" and not sub.args
                                            and all(k.arg in ("timeout", "block") for k in sub.keywords))):
            return True
    return False


def _serve_loop(function: ast.AST) -> bool:
    """A serve loop in the method: it serves until stopped."""
    return any(isinstance(sub, ast.While) and _serves_until_stopped(sub) for sub in _own(function))


def _runs_once(name: str) -> bool:
    if name.startswith("__") and name.endswith("__"):
        return name in _ONCE
    return name.lstrip("_").startswith(_ONCE_PREFIXES)


# Words in a function's name that say it runs per request, message or item.
_PER_CALL_FUNCTIONS = ("handle", "process", "serve", "request", "dispatch", "on_", "call",
                       "submit", "step", "forward", "generate", "receive", "recv", "send",
                       "accept", "execute", "run", "query", "fetch", "invoke", "emit")


def module_facts(module: str, tree: ast.Module, source: bytes, nodes: Optional[FileNodes] = None,
                 imports: Optional[dict[str, str]] = None) -> ModuleFacts:
    """`nodes`: the module's node table as the project index made it (one walk for all);
    `imports`: local name -> absolute name (other modules' holders this one drops)."""
    return _Builder(module, tree, source, nodes or node_table(tree, source), imports or {}).build()


def node_table(tree: ast.Module, source: bytes) -> FileNodes:
    """The node table of a module read on its own (the index fills its own in its walk)."""
    nodes = FileNodes(tree, source)
    stack: list[tuple[ast.AST, Optional[ast.AST]]] = [(n, None) for n in tree.body]
    while stack:
        node, owner = stack.pop()
        nodes.by_type[type(node)].append(node)
        nodes.owner_of[id(node)] = owner
        inner = node if isinstance(node, OWNERS) else owner
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return nodes
