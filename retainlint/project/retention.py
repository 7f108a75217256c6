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
  instance (a server or an engine often lives for the process);
- `default`: a container given as a parameter's default value (`def f(x, seen=[])`): made
  once, when the `def` runs, and kept by the function for every later call.

A holder is named `module.name`, `module.Class.attr`, `module.Class().attr` or
`module.function(param=)`, so that
other files' drops (`from pkg.state import _pending; _pending.pop(k)`) join with it.

Everything is plain data (tuples of strings and numbers): the project index caches it.
This module builds the facts (`module_facts`); `retention_facts` defines them,
`retention_holders` finds the holders, `retention_function` reads one function, and
`retention_shapes` names the shapes of code all of them recognise."""

from __future__ import annotations

import ast
from dataclasses import replace
from functools import cached_property
from typing import Iterator, Optional

from retainlint.project.frames import frame_cycles
from retainlint.project.nodes import OWNERS, FileNodes, dotted
from retainlint.project.retention_facts import Growth, SelfReference, ModuleFacts
from retainlint.project.retention_shapes import (
    ADD_CALLS, DROP_CALLS, ENTRY_POINTS, FUNCTIONS, INPUT_READERS, LOOPS, READERS, TEARDOWN, WORKER_POOLS,
    bindings, installs_signal_handler, last_name, named_per_call, process_entry, runs_once, serves, sets_up, serves_until_stopped, statements, walks_a_model, walks_a_tree)
from retainlint.project.retention_holders import Holders, Lines
from retainlint.project.retention_function import FunctionFacts, container_defaults


class ModuleBuilder:
    def __init__(self, module: str, tree: ast.Module, source: bytes, nodes: FileNodes,
                 imports: dict[str, str]) -> None:
        self.imports = imports
        self.source = source
        self.lines = Lines(source)
        self.holders = Holders(module, tree)
        self.nodes = nodes
        self.growth: list[Growth] = []
        self.drops: set[str] = set()
        self.bounded: set[str] = set()
        self.success_drops: set[str] = set()
        self.teardown_drops: set[str] = set()
        self.self_references: list[SelfReference] = []
        self._kept: dict[str, list[tuple[Optional[int], str]]] = {}
        self._called: dict[str, tuple[set[str], set[str]]] = {}  # see `_callers`
        self._holder_names: Optional[list[bytes]] = None
        self.tree = tree

    def called_per_call(self, cls: str) -> set[str]:
        """The methods of `cls` that its handlers (see `serves`) or its other ordinary
        methods - neither `__init__`, nor named for set-up or teardown - call on `self`:
        a `_start_thread()` that `enqueue()` calls runs per job, whatever it is named."""
        return self._callers(cls)[0]

    def called_only_from_init(self, cls: str) -> set[str]:
        """The methods of `cls` that its `__init__` calls on `self` and no other method does:
        they run once per instance made, as `__init__`'s own body does."""
        return self._callers(cls)[1]

    def _callers(self, cls: str) -> tuple[set[str], set[str]]:
        """(`called_per_call`, `called_only_from_init`), found once per class from what each
        method calls on `self`."""
        if cls not in self._called:
            per_call: set[str] = set()
            by_init: set[str] = set()
            elsewhere: set[str] = set()
            node = self.holders.classes.get(cls)
            for method in (node.body if node is not None else ()):
                if not isinstance(method, FUNCTIONS):
                    continue
                called = {c.func.attr for c in self.nodes.own(method, ast.Call)
                          if isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
                          and c.func.value.id == "self"}
                (by_init if method.name == "__init__" else elsewhere).update(called)
                if serves(method) or not (method.name == "__init__" or runs_once(method.name)
                                          or method.name.lstrip("_").startswith(TEARDOWN)):
                    per_call.update(called)
            self._called[cls] = (per_call, by_init - elsewhere)
        return self._called[cls]

    def kept_params(self, cls: ast.ClassDef) -> list[tuple[Optional[int], str]]:
        """(position after `self`, name) of the `__init__` parameters the class stores
        on its instance as they are (`self.parent = parent`); a class without an `__init__`
        of its own is made by the one it inherits from a class of this module."""
        if cls.name not in self._kept:
            kept: list[tuple[Optional[int], str]] = []
            init = self._init_of(cls)
            if init is not None and init.args.args:
                me = init.args.args[0].arg
                positional = [a.arg for a in init.args.args[1:]]
                stored = {v.id for s in statements(init.body) for t, v in bindings(s)
                          if isinstance(v, ast.Name) and isinstance(t, ast.Attribute)
                          and isinstance(t.value, ast.Name) and t.value.id == me}
                for name in stored:
                    if name in positional:
                        kept.append((positional.index(name), name))
                    elif name in {a.arg for a in init.args.kwonlyargs}:
                        kept.append((None, name))
            self._kept[cls.name] = kept
        return self._kept[cls.name]

    def _init_of(self, cls: ast.ClassDef, depth: int = 0) -> Optional[ast.FunctionDef]:
        init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if init is not None or depth > 5:
            return init
        for base in cls.bases:
            known = self.holders.classes.get(base.id) if isinstance(base, ast.Name) else None
            if known is not None and known is not cls:
                return self._init_of(known, depth + 1)
        return None

    def build(self) -> ModuleFacts:
        holders = self.holders
        if holders.module_level or any(holders.class_level.values()) or any(holders.instance.values()) \
                or self._container_defaults:
            for node in statements(self.tree.body):
                if isinstance(node, FUNCTIONS):
                    self._function(node, None)
                elif isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, FUNCTIONS):
                            self._function(item, node.name)
            self._module_level_drops()
        self._self_references()
        self.drops |= self._dropped_elsewhere()
        long_lived, per_call = self._instantiations()
        collector_off = self._collector_off()
        # A factory owns what it returns: `module.get_logger()` makes one `Adapter` per call,
        # so one call at start-up in any file (`logger = get_logger(__name__)`) makes one
        # for the process (`lives_for_the_process` follows owners).
        owned = self._owned() | {(made, f"{self.holders.module}.{name}()") for name, made in self._factories.items()}
        serving = self._serving(per_call, owned)
        frames = [replace(f, per_call=self._runs_per_call(f.function, serving))
                  for f in frame_cycles(self.nodes, lambda node: self.lines.site(node, node))]
        return ModuleFacts(self.growth, self.drops, self.bounded, self.self_references,
                           long_lived, per_call, collector_off, frames,
                           self.success_drops - self.drops, self.teardown_drops - self.drops,
                           serving, owned, holders.aliases)

    def _runs_per_call(self, function: str, serving: set[str]) -> bool:
        """Does `function` (`Class.method` or `function`) run per request, message or job:
        named so (`handle_error`, `run_job`, `__call__`), or a method of a class that serves?"""
        cls, _, name = function.rpartition(".")
        return named_per_call(name) or (
            bool(cls) and f"{self.holders.module}.{cls}" in serving)

    @cached_property
    def _container_defaults(self) -> bool:
        """Does a module-level function or a method take a container as a default value?"""
        return any(container_defaults(f) for node in statements(self.tree.body)
                   for f in ([node] if isinstance(node, FUNCTIONS) else node.body if isinstance(node, ast.ClassDef) else [])
                   if isinstance(f, FUNCTIONS))

    def _function(self, node: ast.AST, cls: Optional[str]) -> None:
        defaults = container_defaults(node)
        if not (defaults or self._mentions_a_holder(node)):
            return
        outer = FunctionFacts(self, node, cls, defaults=defaults)
        outer.scan()
        for inner in ast.walk(node):  # nested functions: same holders, their own locals
            if inner is not node and isinstance(inner, FUNCTIONS):
                FunctionFacts(self, inner, cls if outer.me else None, outer.me).scan()

    def _mentions_a_holder(self, node: ast.AST) -> bool:
        """Does the function's text name one of the module's holders? (Most functions do
        not: they are then not walked for growth.)"""
        if self._holder_names is None:
            h = self.holders
            self._holder_names = [n.encode() for n in {*h.module_level, *(a for c in h.class_level.values() for a in c),
                                                        *(a for c in h.instance.values() for a in c),
                                                        *(prop for prop, _ in h.aliases)}]
        lines = self.lines.lines[node.lineno - 1:node.end_lineno]  # type: ignore[attr-defined]
        return any(name in line for line in lines for name in self._holder_names)

    def _self_references(self) -> None:
        """`self.x = <value>` and `self.xs.append(<value>)` in methods, read from the index's
        tables of assignments and calls."""
        methods: dict[int, FunctionFacts] = {}
        for stmt in self.nodes.of(ast.Assign, ast.AnnAssign):
            function = self._method_facts(stmt, methods)
            if function is None:
                continue
            for target, value in bindings(stmt):
                if isinstance(target, (ast.Attribute, ast.Subscript)) and value is not None:
                    function._self_reference(target, value, stmt)
        for call in self.nodes.of(ast.Call):  # `self.children.append(Child(self))`
            func = getattr(call, "func")
            if isinstance(func, ast.Attribute) and func.attr in ADD_CALLS:
                function = self._method_facts(call, methods)
                if function is not None:
                    function.added_to_self(call)  # type: ignore[arg-type]

    def _method_facts(self, node: ast.AST, methods: dict[int, FunctionFacts]) -> Optional[FunctionFacts]:
        """The facts of the method `node` is directly in (made once per method), or None
        outside a method or in one that takes no instance (a staticmethod)."""
        method = self.nodes.owner_of.get(id(node))
        cls = self.nodes.owner_of.get(id(method)) if method is not None else None
        if not isinstance(method, FUNCTIONS) or not isinstance(cls, ast.ClassDef):
            return None
        function = methods.get(id(method))
        if function is None:
            function = methods[id(method)] = FunctionFacts(self, method, cls.name)
        return function if function.me is not None else None

    def _function_around(self, node: ast.AST) -> Optional[ast.AST]:
        """The innermost function around `node` (lambdas looked through); None at module
        level or in a class body."""
        owner = self.nodes.owner_of.get(id(node))
        while isinstance(owner, ast.Lambda):
            owner = self.nodes.owner_of.get(id(owner))
        return owner if isinstance(owner, FUNCTIONS) else None

    def _class_called(self, func: ast.AST) -> Optional[str]:
        """`module.Class` for a call of one of the module's classes, or of a capitalised
        name it imports (`Engine(...)`, `engines.Engine(...)`); None otherwise."""
        if isinstance(func, ast.Name) and func.id in self.holders.classes:
            return f"{self.holders.module}.{func.id}"
        name = dotted(func)
        return self._imported(name) if name and name.rpartition(".")[2][:1].isupper() else None

    def _imported(self, name: str) -> Optional[str]:
        """The absolute name of `name` (`Engine`, `engines.Engine`) when its head is imported."""
        head, _, rest = name.partition(".")
        if head not in self.imports:
            return None
        return f"{self.imports[head]}.{rest}" if rest else self.imports[head]

    def _own_class_called(self, call: ast.AST) -> Optional[str]:
        """`module.Class` for `type(self)(...)` or `self.__class__(...)` in a method of one of
        the module's classes: the instance making another of its own class."""
        func = getattr(call, "func")
        if isinstance(func, ast.Call) and dotted(func.func) == "type" and len(func.args) == 1:
            me = func.args[0]
        elif isinstance(func, ast.Attribute) and func.attr == "__class__":
            me = func.value
        else:
            return None
        if not isinstance(me, ast.Name):
            return None
        method = self._function_around(call)
        cls = self.nodes.owner_of.get(id(method)) if method is not None else None
        args = getattr(method, "args", None)
        if not (isinstance(cls, ast.ClassDef) and args is not None and args.args
                and args.args[0].arg == me.id and self.holders.classes.get(cls.name) is cls):
            return None
        return f"{self.holders.module}.{cls.name}"

    def _collector_off(self) -> bool:
        """Does a `gc.disable()` here leave the collector off? gc.freeze() only exempts what
        exists when it runs (objects made per call later are still collected), and a function
        that turns it back on (`finally: gc.enable()`, `addCleanup(gc.enable)`) only pauses it."""
        if b"gc.disable" not in self.source:
            return False  # no `gc.disable()` here (the text says so without a walk)
        enabling = {id(self.nodes.owner(n)) for n in self.nodes.of(ast.Attribute) if dotted(n) == "gc.enable"}
        return any(dotted(getattr(n, "func")) == "gc.disable" and id(self.nodes.owner(n)) not in enabling
                   for n in self.nodes.of(ast.Call))

    def _instantiations(self) -> tuple[set[str], set[str]]:
        """Classes (`module.Class`, the module's own or imported) made once: at module level,
        in a class body, or in an entry point (`main()`, `serve()`), so they live for the
        process; and the classes it makes many times (its own, or imported from the project:
        `made_per_call` resolves those): in a loop or comprehension, in a function whose name
        says it runs per request (`handle`, `on_data`, `__call__`), or by a method of the
        class itself (`split()` returning new ones)."""
        module = self.holders.module
        long_lived = {f"{module}.{c}" for c in self.holders.classes
                      if any(a.lstrip("_") in ("instance", "singleton")
                             for a in self.holders.class_level.get(c, {}))}
        per_call: set[str] = set()
        factories = self._factories
        calls: list[tuple[ast.AST, str]] = []
        called: set[str] = set()  # the factories the file calls
        for c in self.nodes.of(ast.Call):
            func = getattr(c, "func")
            made = self._class_called(func) or self._own_class_called(c)
            if made is None and isinstance(func, ast.Name) and func.id in factories:
                made = factories[func.id]
                called.add(func.id)
            if made is None and self._at_start(c):
                imported = self._function_called(func)
                if imported is not None:
                    long_lived.add(imported + "()")  # what another module's function returns
            if made is not None:
                calls.append((c, made))
        if not calls:
            return long_lived, per_call
        loops: dict[int, list[tuple[int, int]]] = {}
        for loop in self.nodes.of(*LOOPS):
            around = self._function_around(loop)
            if around is not None and not walks_a_model(loop):
                loops.setdefault(id(around), []).append(
                    (loop.lineno, loop.end_lineno or loop.lineno))  # type: ignore[attr-defined]
        for call, made in calls:
            if self._at_start(call):
                long_lived.add(made)
                continue
            function = self._function_around(call)
            assert function is not None  # not at start-up: inside a function
            fname = getattr(function, "name")
            if factories.get(fname) == made and fname in called:
                continue  # the factory's own `return Class()`: its callers say how often
            if fname == "__init__" or sets_up(function):
                continue  # made once per owner, or at set-up
            line = getattr(call, "lineno")
            if named_per_call(fname) or any(
                    start <= line <= end for start, end in loops.get(id(function), ())) or \
                    self._made_from_itself(function, made):
                per_call.add(made)
        return long_lived, per_call

    def _at_start(self, call: ast.AST) -> bool:
        """Does `call` run once, at start-up: at module level or in an entry point?"""
        function = self._function_around(call)
        return function is None or getattr(function, "name") in ENTRY_POINTS or process_entry(
            function, id(function) in self._signal_setters)

    @cached_property
    def _signal_setters(self) -> set[int]:
        """The functions whose own code (not a function or lambda nested in them) installs a
        SIGTERM or SIGINT handler, found once for the module."""
        return {id(owner) for call in self.nodes.of(ast.Call) if installs_signal_handler(call)
                for owner in [self.nodes.owner_of.get(id(call))] if isinstance(owner, FUNCTIONS)}

    def _function_called(self, func: ast.AST) -> Optional[str]:
        """The absolute name of an imported function a call calls (`get_logger(...)`,
        `logging_utils.get_logger(...)`), or None."""
        name = dotted(func)
        return self._imported(name) if name and not name.rpartition(".")[2][:1].isupper() else None

    @cached_property
    def _factories(self) -> dict[str, str]:
        """The module's functions that make one instance and return it (`def get_handler():
        return Handler()`): name -> `module.Class`. Where the file calls such a function is where
        the instance is made (`handler = get_handler()` at module level: one for the
        process); one it never calls is judged by its name, like any other."""
        found: dict[str, str] = {}
        for node in statements(self.tree.body):
            if isinstance(node, FUNCTIONS):
                made = {m for m in (self._returned_new(node, b) for b in node.body) if m is not None}
                if len(made) == 1:
                    found[node.name] = made.pop()
        return found

    def _returned_new(self, function: ast.AST, stmt: ast.stmt) -> Optional[str]:
        """The class of the instance a statement of a function's own body makes and hands
        back: `return Class()`, or `x = Class()` that a later `return x` of the body returns
        (a loader that reads a cached one first, `fm = FontManager(); dump(fm); return fm`)."""
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Call):
            return self._class_called(stmt.value.func)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Call):
            name = stmt.targets[0].id
            if any(isinstance(r, ast.Return) and isinstance(r.value, ast.Name) and r.value.id == name
                   for r in getattr(function, "body")):
                return self._class_called(stmt.value.func)
        return None

    def _owned(self) -> set[tuple[str, str]]:
        """(class, owner) for each `self.attr = Class(...)` in `owner.__init__` or a method
        that completes it (`__post_init__`, `init_*()`, `setup()`): one instance per owner,
        kept as long as the owner lives (`lives_for_the_process` follows it). Not `load_*()`
        or `start()`: what a reload or restart makes replaces what it made before."""
        return {(made, f"{self.holders.module}.{name}")
                for name, cls in self.holders.classes.items() for method in cls.body
                if isinstance(method, FUNCTIONS) and method.args.args and (
                    method.name in ("__init__", "__post_init__") or method.name.lstrip("_").startswith(("init", "setup")))
                for made in self._kept_on_self(method)}

    def _kept_on_self(self, method: ast.AST) -> Iterator[str]:
        """The classes (`module.Class`) of each `self.attr = Class(...)` in `method`."""
        me = getattr(method, "args").args[0].arg
        for stmt in statements(getattr(method, "body")):
            for target, value in bindings(stmt):
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == me and isinstance(value, ast.Call):
                    made = self._class_called(value.func)
                    if made is not None:
                        yield made

    def _made_from_itself(self, function: ast.AST, made: str) -> bool:
        """Is `function` an instance method of the class it makes (`split()`, `copy()`,
        `__add__` returning a new one): each call makes another instance from this one,
        so instances are values that come and go. Not a classmethod or staticmethod: an
        alternate constructor makes the one instance its caller asked for."""
        cls = self.holders.classes.get(made.rpartition(".")[2])
        return cls is not None and f"{self.holders.module}.{cls.name}" == made and \
            any(item is function for item in cls.body) and \
            not any(last_name(d) in ("classmethod", "staticmethod") for d in getattr(function, "decorator_list"))

    def _serving(self, per_call: set[str], owned: set[tuple[str, str]]) -> set[str]:
        """The module's classes whose methods serve requests, so that one instance outlives
        many of them: a handler (`handle_*`, `*_handler`, `on_*` for a request, also nested in
        a method, or a method decorated as a route), a serve loop (`while True:`, `while not
        self.stopped:`), both `start()` and `stop()`/`shutdown()`, or a worker pool it makes
        and keeps (`self._pool = ThreadPoolExecutor()` in `__init__`, see `_owned`: it exists
        to run many submissions). A class made per call here is no such server, nor a parser
        or tree visitor: it reads one input."""
        pools = {owner for made, owner in owned if made in WORKER_POOLS}
        found: set[str] = set()
        for name, cls in self.holders.classes.items():
            qualified = f"{self.holders.module}.{name}"
            if qualified in per_call or walks_a_tree(cls) or any(
                    self._class_called(base) in INPUT_READERS for base in cls.bases):
                continue
            methods = [f for f in cls.body if isinstance(f, FUNCTIONS)]
            names = {f.name for f in methods}
            if "start" in names and names & {"stop", "shutdown"} or qualified in pools or any(
                    serves(f) or any(serves(inner) for inner in self.nodes.own(f, *FUNCTIONS))
                    or any(serves_until_stopped(w) for w in self.nodes.own(f, ast.While)) for f in methods):
                found.add(qualified)
        return found

    def _module_level_drops(self) -> None:
        """Module-level code runs once: what it adds is bounded, but what it drops counts."""
        for call in self.nodes.of(ast.Call):
            func = getattr(call, "func")
            if isinstance(func, ast.Attribute) and func.attr in DROP_CALLS \
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
            if getattr(attribute, "attr") in DROP_CALLS:
                note(getattr(attribute, "value"))  # called, or handed on to be called
        for call in nodes.of(ast.Call):
            if last_name(getattr(call, "func")) not in READERS:
                for arg in [*getattr(call, "args"), *(k.value for k in getattr(call, "keywords"))]:
                    note(arg)
        for delete in nodes.of(ast.Delete):
            for t in getattr(delete, "targets"):
                note(t.value if isinstance(t, ast.Subscript) else t)
        for node in nodes.of(ast.Return, ast.Yield):
            note(getattr(node, "value"))
        for assign in nodes.of(ast.Assign, ast.AnnAssign):
            note(getattr(assign, "value"))  # an alias (`x: dict = _pending`)
            for t in getattr(assign, "targets", None) or [getattr(assign, "target")]:
                if isinstance(t, ast.Attribute):
                    note(t)  # `state._pending = {}`: rebinding another module's holder
        return found


def module_facts(module: str, tree: ast.Module, source: bytes, nodes: Optional[FileNodes] = None,
                 imports: Optional[dict[str, str]] = None) -> ModuleFacts:
    """`nodes`: the module's node table as the project index made it (one walk for all);
    `imports`: local name -> absolute name (other modules' holders this one drops)."""
    return ModuleBuilder(module, tree, source, nodes or node_table(tree, source), imports or {}).build()


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
