"""RL203 global-callback-pins-instance.

The rule's class, and the traversal that collects what it decides on; its parts are the
modules beside this one."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import call_args, is_instance_method, is_self, name_bindings, self_attribute
from retainlint.analysis.heavy import find_param
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.release import FINALIZER
from retainlint.analysis.rule import Rule
from retainlint.core.finding import Applicability, Severity
from retainlint.rules.prefilters.rl203 import (
    AT_FORK,
    AT_FORK_KEYWORDS,
    ATEXIT_REGISTER,
    LOOP_TRIGGERS,
    GlobalCallbackPinsInstancePrefilter,
    SIGNAL,
    ADDERS,
)
from retainlint.rules.rl203_global_callback_pins_instance.class_registry import ClassRegistryPins
from retainlint.rules.rl203_global_callback_pins_instance.classes import ClassLookup
from retainlint.rules.rl203_global_callback_pins_instance.examples import DOCS, INVALID, VALID
from retainlint.rules.rl203_global_callback_pins_instance.facts import (
    ATEXIT_UNREGISTER,
    REMOVERS,
    FileFacts,
    Registration,
    strong_container,
)
from retainlint.rules.rl203_global_callback_pins_instance.fix import UnregisterFix
from retainlint.rules.rl203_global_callback_pins_instance.instantiation import (
    Instantiation,
    called_names,
    is_main_guard,
    process_target,
)
from retainlint.rules.rl203_global_callback_pins_instance.lifetime import Lifetime
from retainlint.rules.rl203_global_callback_pins_instance.pins import Pins
from retainlint.rules.rl203_global_callback_pins_instance.report import Reporter
from retainlint.rules.rl203_global_callback_pins_instance.runners import STOPPERS, started_runner
from retainlint.rules.rl203_global_callback_pins_instance.undo import Undo

# builtins that only read a container handed to them
_READERS = frozenset({
    "len", "list", "tuple", "sorted", "iter", "bool", "any", "all", "repr", "str", "print",
    "id", "isinstance", "set", "frozenset", "enumerate", "reversed", "min", "max", "sum",
    "next", "zip", "map", "filter",
})
_TRIGGER_REMOVERS = frozenset(remover for _, removers, _ in LOOP_TRIGGERS.values() for remover in removers)
# module-level dicts a function may keep instances in, one per key
_DICT_CTORS = frozenset({"dict", "builtins.dict", "collections.defaultdict", "collections.OrderedDict"})


def _is_own_receiver(expr: cst.BaseExpression) -> bool:
    """`self` or `super()`: a method of the object itself."""
    return is_self(expr) or (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name)
                             and expr.func.value == "super")


class GlobalCallbackPinsInstance(Rule):
    prefilter = GlobalCallbackPinsInstancePrefilter
    name = "global-callback-pins-instance"
    summary = (
        "A bound method or the instance itself is registered in a process-wide registry "
        "(atexit, signal handlers, a module-level list) and never taken out"
    )
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    docs = DOCS
    valid = VALID
    invalid = INVALID

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # what the traversal collects, and the parts that decide on it
        self._facts = FileFacts(ctx)
        self._classes = ClassLookup(ctx)
        self._pins = Pins(ctx, self._classes, self._facts)
        self._instantiation = Instantiation(ctx, self._facts)
        self._lifetime = Lifetime(ctx, self._classes, self._facts)
        self._undo = Undo(ctx, self._classes, self._pins, self._facts)
        self._fixer = UnregisterFix(self, self._classes, self._undo, self._facts)
        self._reporter = Reporter(self, self._classes, self._undo, self._fixer, self._facts)
        self._class_registries = ClassRegistryPins(self, self._classes, self._lifetime)

    # -- collection ----------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        for target, value in name_bindings(node.body):
            if strong_container(self.ctx, value):
                self._facts.containers[target.value] = target
                self._facts.not_reads[target.value] = self._facts.not_reads.get(target.value, 0) + 1
            elif self._dict(value):
                self._facts.registries.add(target.value)
        for stmt in node.body:
            if isinstance(stmt, cst.FunctionDef):
                stored = self._stored_parameter(stmt)
                if stored is not None:
                    self._facts.registry_functions[stmt.name.value] = stored
        for stmt in node.body:
            if isinstance(stmt, cst.If) and is_main_guard(stmt.test):
                self._facts.entry_points |= called_names(stmt.body)

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
                and node.func.value.value in self._facts.containers
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
        if node.value in self._facts.containers:
            self._facts.uses[node.value] = self._facts.uses.get(node.value, 0) + 1

    def visit_Global(self, node: cst.Global) -> None:
        fn = self.ctx.scope.function
        for n in node.names:
            self._facts.not_reads[n.name.value] = self._facts.not_reads.get(n.name.value, 0) + 1
        if fn is not None:
            names = {n.name.value for n in node.names}
            self._facts.global_names.setdefault(id(fn), set()).update(names)
            assigned = self.ctx.heavy.local_assignments(fn)
            self._facts.emptied.update(n for n in names if (n in self._facts.containers or n in self._facts.registries)
                                 and n in assigned)  # rebound

    def visit_Del(self, node: cst.Del) -> None:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = t.value if isinstance(t, cst.Element) else t
            base = t.value if isinstance(t, cst.Subscript) else t
            if isinstance(base, cst.Name) and self._container_here(base.value):
                self._facts.emptied.add(base.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if (
                isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)
                and target.value.value in self._facts.containers and self._container_here(target.value.value)
            ):
                self._facts.emptied.add(target.value.value)  # `_l[:] = [...]` (`_d[k] = v` stores)
        self._escape(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if (
            isinstance(node.target, cst.Name) and not isinstance(node.operator, cst.AddAssign)
            and self._container_here(node.target.value)
        ):
            self._facts.emptied.add(node.target.value)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._escape(node.value)

    def _escape(self, value: cst.BaseExpression) -> None:
        """`x = _l`, `return _l`: other code may prune it."""
        if isinstance(value, cst.Name) and self._container_here(value.value):
            self._facts.emptied.add(value.value)

    def _container_here(self, name: str) -> bool:
        """Does `name` denote one of the module-level containers (or dicts) where the
        traversal is?"""
        if name not in self._facts.containers and name not in self._facts.registries:
            return False
        for fn in reversed(self.ctx.scope.functions):
            if name in self._facts.global_names.get(id(fn), ()):
                return True
            if self._facts.local(name, fn):
                return False
        return True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if (
            node.attr.value in REMOVERS and isinstance(node.value, cst.Name)
            and self._container_here(node.value.value)
        ):
            (self._facts.cleared if node.attr.value == "clear" else self._facts.emptied).add(node.value.value)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualname(node.func)
        scope = self.ctx.scope
        cls = scope.classes[-1] if scope.classes else None
        if isinstance(node.func, cst.Name) and node.func.value in self.ctx.classes:
            self._instantiation.record(node.func.value, node)
        target = process_target(node)
        if target is not None:
            self._facts.entry_points.add(target)
        if isinstance(node.func, cst.Name) and scope.function is not None:
            self._facts.called_by_functions.add(node.func.value)
        if qualified not in _READERS:
            for arg in node.args:  # handed to code that may prune it
                self._escape(arg.value)
        if qualified == ATEXIT_UNREGISTER and cls is not None and node.args:
            if not (scope.function is not None and scope.function.name.value == FINALIZER):
                self._facts.unregistered.setdefault(cls.name.value, []).append(node.args[0].value)
        if qualified == SIGNAL and len(node.args) >= 2:
            self._facts.handlers_reinstalled.append(node.args[1].value)
            if cls is not None and scope.function is not None and (
                scope.function.name.value != FINALIZER
            ):
                self._facts.signals.setdefault(cls.name.value, []).append((node, scope.function))
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _TRIGGER_REMOVERS and cls is not None \
                and not (scope.function is not None and scope.function.name.value == FINALIZER):
            self._facts.triggers_removed.setdefault(cls.name.value, set()).add(
                (self.ctx.code(node.func.value), node.func.attr.value))
        adder = (
            isinstance(node.func, cst.Attribute) and node.func.attr.value in ADDERS
            and isinstance(node.func.value, cst.Name) and node.func.value.value in self._facts.containers
        )
        if adder:
            name = node.func.value.value
            self._facts.not_reads[name] = self._facts.not_reads.get(name, 0) + 1
        fn = scope.function
        cls = scope.method_class
        if cls is None or fn is None or not is_instance_method(self.ctx, fn):
            return
        runner = started_runner(self.ctx, self._classes, node, qualified, fn, cls)
        if runner is not None:
            self._consider(runner[0], node, runner[1], cls, fn)
        elif qualified == ATEXIT_REGISTER and node.args:
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
                and not _is_own_receiver(node.func.value) and not self._callers_loop(node.func.value, fn):
            # (a loop's own method, `self.addSystemEventTrigger(...)`, fills its own table:
            # the entries live and die with the object, a self-cycle at most)
            position = LOOP_TRIGGERS[node.func.attr.value][0]
            positional, _ = call_args(node)
            if len(positional) > position:
                self._consider(node.func.attr.value, node, positional[position].value, cls, fn,
                               extra=[a.value for a in positional[position + 1:]])
        elif (
            isinstance(node.func, cst.Name) and node.func.value in self._facts.registry_functions
            and not self._facts.local(node.func.value, fn)
        ):
            position, param, container = self._facts.registry_functions[node.func.value]
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
            if len(positional) > position and not self._facts.local(container, fn):
                self._consider("append", node, positional[position].value, cls, fn,
                               container=container)

    @staticmethod
    def _callers_loop(receiver: cst.BaseExpression, fn: cst.FunctionDef) -> bool:
        """A loop handed to a method other than `__init__` (`register_with_event_loop(self,
        connection, loop)`): the caller registers the instance with its own loop, and takes
        it out there."""
        return isinstance(receiver, cst.Name) and fn.name.value != "__init__" \
            and find_param(fn, receiver.value) is not None

    def _consider(self, kind, call, callback, cls, fn, extra=(), container=None, through=None) -> bool:
        what = self._pins.pins_self(callback, fn, cls, 0)
        pins_self = what is not None
        if what is None:
            for value in extra:  # `atexit.register(cleanup, self)`
                if is_self(value):
                    what, pins_self = "`self` (passed as an argument)", True
                    break
        if what is None:
            what = self._pins.pins_heavy_other(callback, fn, cls)
        if what is None:
            return False
        statement = self.ctx.scope.statement
        saved_as = slot_of = None
        if (kind == "signal" or kind in STOPPERS) and isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1:
                    target = small.targets[0].target
                    if isinstance(target, cst.Attribute):
                        saved_as = target.attr.value
                    elif isinstance(target, cst.Name):
                        saved_as = target.value
                    elif isinstance(target, cst.Subscript):  # `self._watchdogs[key] = ensure_future(...)`
                        slot_of = self_attribute(target.value)
        self._facts.registrations.append(
            Registration(kind, call, callback, what, pins_self, cls, fn, statement,
                         container=container, saved_as=saved_as, slot_of=slot_of, through=through)
        )
        return True

    # -- decision ------------------------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        for reg in self._facts.registrations:
            if self._undo.undone(reg):
                continue
            if reg.pins_self and self._lifetime.lives_as_long_as_process(reg.cls):
                continue
            self._reporter.report(reg)
        for cls in self.ctx.classes.values():
            self._class_registries.class_registry_pins(cls)
