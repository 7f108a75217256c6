"""RL203's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl203_global_callback_pins_instance/` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast
import re
from typing import Optional

from retainlint.project.nodes import dotted
from retainlint.project.prefilter import Prefilter


ATEXIT_REGISTER = "atexit.register"

SIGNAL = "signal.signal"

# `os.register_at_fork(before=..., after_in_child=..., after_in_parent=...)`: a process-wide
# list with no way to unregister
AT_FORK = "os.register_at_fork"
AT_FORK_KEYWORDS = ("before", "after_in_parent", "after_in_child")

# methods of process-wide event loops that keep a callback until it is removed (each call
# adds one): the callback's argument position, the methods that remove it, and what the
# registry is. Not asyncio's `loop.add_signal_handler`: it replaces the previous handler of
# the signal, and the loop (closed by `asyncio.run`) drops them all
LOOP_TRIGGERS = {
    # Twisted: `reactor.addSystemEventTrigger("during", "shutdown", self.close)`
    "addSystemEventTrigger": (2, ("removeSystemEventTrigger",), "the reactor's system event triggers"),
    # asyncio: `loop.add_reader(fd, self._ready)`, kept in the loop's selector (kombu's hub
    # also takes out all of a descriptor's callbacks with `hub.remove(fd)`)
    "add_reader": (1, ("remove_reader", "remove"), "the event loop's readers"),
    "add_writer": (1, ("remove_writer", "remove"), "the event loop's writers"),
}

# calls that start something running on its own with a callback (`runners.py`): a thread,
# a timer or an event-loop call (the rule asks whether it is re-armed by its own callback),
# an asyncio task of a coroutine of the instance, a Twisted looping call
TASK_STARTERS = frozenset({"create_task", "ensure_future"})
RUNNERS = frozenset({"Thread", "Timer", "LoopingCall", "call_later", "call_at", "callLater", *TASK_STARTERS})

# module-level containers that hold what is put in them strongly
LIST_CTORS = frozenset({"list", "builtins.list", "set", "builtins.set", "collections.deque"})

# methods that put an element in a list / set / deque (argument position of the element)
ADDERS = {"append": 0, "add": 0, "appendleft": 0, "insert": 1}

# `NAME = []` / `NAME: list[...] = set()` / `NAME = collections.deque(...)` at column 0
_MODULE_CONTAINER = re.compile(
    rb"^([A-Za-z_]\w*)[ \t]*(?::[^=\n]+)?=[ \t]*(?:\[|set\(|list\(|deque\(|collections\.deque\()",
    re.MULTILINE,
)

# -- structural prefilter (`ast`, from the index's pass) ----------------------------------
_CONTAINER_CTOR_NAMES = frozenset(q.rsplit(".", 1)[-1] for q in LIST_CTORS)


def imported_names(nodes) -> dict[str, str]:
    """Local name -> what it imports, for every import of the file (function-local ones
    too, as `FileContext.qualname` resolves them): `ae` -> `atexit`, `reg` -> `atexit.register`."""
    names: dict[str, str] = {}
    for node in nodes.of(ast.Import):
        for a in node.names:
            if a.asname:
                names[a.asname] = a.name
            else:
                head = a.name.split(".", 1)[0]
                names[head] = head
    for node in nodes.of(ast.ImportFrom):
        for a in node.names:
            names[a.asname or a.name] = f"{node.module}.{a.name}" if node.module and not node.level else a.name
    return names


def qualified(node: ast.AST, imports: dict[str, str]) -> Optional[str]:
    """`node` as a dotted name, its head resolved through `imports`."""
    name = dotted(node)
    if name is None:
        return None
    head, dot, rest = name.partition(".")
    return imports.get(head, head) + dot + rest


def _in_instance_method(nodes, node: ast.AST) -> bool:
    """Is the innermost function around `node` (through lambdas) a method taking `self`,
    not a static or class method (`ScopeState.method_class`, `is_instance_method`)?"""
    found = nodes.method_of(node)
    if found is None:
        return False
    fn = found[1]
    params = fn.args.posonlyargs or fn.args.args
    return bool(params) and params[0].arg == "self" and not any(
        isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in fn.decorator_list)


def _module_containers(tree: ast.Module) -> set[str]:
    """Module-level names bound to a list, set or deque (`visit_Module`; any callee
    named `list`, `set` or `deque`)."""
    return _containers(tree.body)


def _class_containers(nodes) -> set[str]:
    """Names class bodies bind to a list, set or deque (`_class_containers`)."""
    return {name for klass in nodes.of(ast.ClassDef) for name in _containers(klass.body)}


def _containers(body: list[ast.stmt]) -> set[str]:
    found = set()
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        if isinstance(value, ast.Call):
            func = value.func.value if isinstance(value.func, ast.Subscript) else value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name not in _CONTAINER_CTOR_NAMES:
                continue
        elif not isinstance(value, (ast.List, ast.Set)):
            continue
        found.add(target.id)
    return found


def registry_functions(nodes, containers: set[str]) -> set[str]:
    """Module-level functions that put one of their parameters, as given, into a module
    container (`def on_shutdown(handler): _handlers.append(handler)`: a registry API).
    Read from the calls of the file's node table, not a walk of every function."""
    found: set[str] = set()
    if not containers:
        return found
    top_level = {id(n) for n in nodes.tree.body}
    for n in nodes.of(ast.Call):
        func = n.func
        if not (isinstance(func, ast.Attribute) and func.attr in ADDERS and isinstance(func.value, ast.Name)
                and func.value.id in containers and len(n.args) > ADDERS[func.attr]
                and isinstance(n.args[ADDERS[func.attr]], ast.Name)):
            continue
        fn = None
        for fn in nodes.owners(n):
            pass  # the outermost function, class or lambda around the call
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or id(fn) not in top_level \
                or fn.name in found:
            continue
        params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
        rebound = {t.id for a in ast.walk(fn) if isinstance(a, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                   for t in (a.targets if isinstance(a, ast.Assign) else [a.target]) if isinstance(t, ast.Name)}
        if n.args[ADDERS[func.attr]].id in params - rebound:
            found.add(fn.name)
    return found


# `NAME.append` / `.add` / `.insert`, blanks and line continuations allowed around the
# dot; NAME starts where an identifier starts, so a long identifier is tried once.
_ADDED = re.compile(rb"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)"
                    rb"(?=[ \t\r\n\\]*\.[ \t\r\n\\]*(?:append|add|insert))")


def _added_names(source: bytes, names: set[str]) -> set[str]:
    """Those of `names` that `NAME.append` / `.add` / `.insert` are called on: one pass
    over the source, not a search per name (thousands of containers, each a scan)."""
    added = set(_ADDED.findall(source))
    return {name for name in names
            if (name.encode() in added if name.isascii() else _added_to(source, name.encode()))}


def _added_to(source: bytes, name: bytes) -> bool:
    """Does `NAME.append` / `.add` / `.insert` (spaces and line continuations allowed
    around the dot) appear in the source?"""
    at = source.find(name)
    while at != -1:
        i = _skip_blanks(source, at + len(name))
        if source.startswith(b".", i) and source.startswith((b"append", b"add", b"insert"),
                                                            _skip_blanks(source, i + 1)):
            return True
        at = source.find(name, at + 1)
    return False


def _skip_blanks(source: bytes, i: int) -> int:
    while i < len(source) and source[i] in b" \t\r\n\\":
        i += 1
    return i


def _runs_own_method(nodes, call: ast.Call, name: str) -> bool:
    """A runner started with a callback the rule may follow: a thread's `target=self.<m>`,
    a timer or loop call handed `self.<m>` inside `<m>` itself, a task of a coroutine of
    `self`, any looping call."""
    if name == "LoopingCall":
        return bool(call.args)
    if name in TASK_STARTERS:  # `create_task(self.poll())`
        coro = call.args[0] if call.args else None
        return isinstance(coro, ast.Call) and isinstance(coro.func, ast.Attribute) \
            and isinstance(coro.func.value, ast.Name) and coro.func.value.id == "self"
    callbacks = [k.value for k in call.keywords if k.arg in ("target", "function")] + call.args[1:2]
    own = {c.attr for c in callbacks if isinstance(c, ast.Attribute) and isinstance(c.value, ast.Name)
           and c.value.id == "self"}
    if name == "Thread":
        return bool(own)
    found = nodes.method_of(call)
    return found is not None and found[1].name in own


class GlobalCallbackPinsInstancePrefilter(Prefilter):
    code = "RL203"

    # what every registration the rule considers needs (the common ones first: the index
    # tests them in order)
    triggers = (".append(", ".add(", ".insert(", ".appendleft(", "atexit", "signal", "register_at_fork",
                *LOOP_TRIGGERS, *sorted(RUNNERS))

    scans = True

    @classmethod
    def scan(cls, nodes) -> bool:
        """In an instance method, `atexit.register(...)`, `signal.signal(sig, handler)`,
        `os.register_at_fork(...)`, an event loop's trigger (`LOOP_TRIGGERS`), an
        element added to a list, set or deque the module binds, or a call of a module
        function that adds its argument to one (`visit_Call`); in any
        function, an element added to a list, set or deque a class body binds."""
        source = nodes.source
        containers = _module_containers(nodes.tree)
        containers = _added_names(source, set(containers))
        registries = registry_functions(nodes, containers)
        # `cls._params.append(...)`: a class-level list (`_class_registry_pins`)
        in_class = _added_names(source, set(_class_containers(nodes)))
        # `signal.signal` resolves only through `signal.signal` spelled out or an import
        if not containers and not in_class and b"atexit" not in source and b"register_at_fork" not in source and not any(
                m.encode() in source for m in LOOP_TRIGGERS) and not any(
                m.encode() in source for m in RUNNERS) and not (b"signal" in source and (
                b"signal.signal" in source or b"import signal" in source or b"from signal " in source)):
            return False
        imports: Optional[dict[str, str]] = None
        for node in nodes.of(ast.Call):
            func = node.func
            kind = type(func)
            name = func.attr if kind is ast.Attribute else func.id if kind is ast.Name else None
            if name in ADDERS:
                if kind is ast.Attribute and type(func.value) is ast.Attribute and func.value.attr in in_class \
                        and len(node.args) > ADDERS[name]:
                    return True  # in any method: the rule follows it from `__init__`
                if kind is not ast.Attribute or type(func.value) is not ast.Name or \
                        func.value.id not in containers or len(node.args) <= ADDERS[name]:
                    continue
            elif name == "register" or name == "signal" or name == "register_at_fork":
                if imports is None:
                    imports = imported_names(nodes)
                name = qualified(func, imports)
                if not (name == ATEXIT_REGISTER and (node.args or node.keywords)
                        or name == SIGNAL and len(node.args) + len(node.keywords) >= 2
                        or name == AT_FORK and node.keywords):
                    continue
            elif name in LOOP_TRIGGERS:
                if kind is not ast.Attribute or len(node.args) <= LOOP_TRIGGERS[name][0]:
                    continue
            elif name in RUNNERS:
                if not _runs_own_method(nodes, node, name):
                    continue
            elif name in registries:
                if kind is not ast.Name or not (node.args or node.keywords):
                    continue
            else:
                continue
            if _in_instance_method(nodes, node):
                return True
        return False

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """The scan's answer; for a file `ast` cannot parse: `atexit` named, `signal.signal`
        called (or imported from `signal`), or `self` appended / added to a list, set or
        deque the file defines at module level."""
        summary = getattr(data, "summary", None)
        if summary is not None:
            return bool(summary.scans.get(cls.code))
        if b"atexit" in data or b"register_at_fork" in data or any(m.encode() in data for m in LOOP_TRIGGERS) \
                or any(m.encode() in data for m in RUNNERS):
            return True
        if b"signal" in data and (
            b"signal.signal(" in data or b"from signal import" in data or b"import signal as" in data
        ):
            return True
        if b".append(self" not in data and b".add(self" not in data and b".appendleft(self" not in data:
            return False
        for match in _MODULE_CONTAINER.finditer(data):
            name = match.group(1)
            if any(name + adder in data for adder in (b".append(self", b".add(self", b".appendleft(self")):
                return True
        return False
