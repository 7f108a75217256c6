"""What undoes a registration: `atexit.unregister`, another handler for the signal (or
the saved old one reinstalled), a loop trigger's remover, or entries taken out of the
module-level list - and whether that list is read at all."""

from __future__ import annotations

import os

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.module_caches import removed_in_project
from retainlint.analysis.release import FINALIZER
from retainlint.analysis.walk import visit
from retainlint.rules.prefilters.rl203 import LOOP_TRIGGERS
from retainlint.rules.rl203_global_callback_pins_instance.classes import ClassLookup
from retainlint.rules.rl203_global_callback_pins_instance.facts import (
    ATEXIT_UNREGISTER,
    FileFacts,
    Registration,
)
from retainlint.rules.rl203_global_callback_pins_instance.pins import Pins
from retainlint.rules.rl203_global_callback_pins_instance.runners import STOPPERS, stopped, stopping_methods


class Undo:
    """Is a registration undone somewhere the rule can see?"""

    def __init__(self, ctx, classes: ClassLookup, pins: Pins, facts: FileFacts) -> None:
        self.ctx = ctx
        self.classes = classes
        self.pins = pins
        self.facts = facts

    def undone(self, reg: Registration) -> bool:
        names = [c.name.value for c in self.classes.class_chain(reg.cls)]
        code = self.ctx.code
        if reg.kind == "atexit" or reg.kind in LOOP_TRIGGERS:
            return self.has_undo(reg) and not self.undone_from_del(reg) and not self.undone_only_by_itself(reg)
        if reg.kind == "signal":
            for name in names:
                for call, fn in self.facts.signals.get(name, ()):
                    if (
                        call is not reg.call and _same_signal(call.args[0].value, reg.call.args[0].value, code)
                        and self.pins.pins_self(call.args[1].value, fn, reg.cls, 0) is None
                    ):
                        return True  # another handler installed: the old one restored, SIG_DFL
            if reg.saved_as is not None:
                for handler in self.facts.handlers_reinstalled:
                    if (
                        (isinstance(handler, cst.Attribute) and handler.attr.value == reg.saved_as)
                        or (isinstance(handler, cst.Name) and handler.value == reg.saved_as)
                    ):
                        return True
            return False
        if reg.kind in STOPPERS:
            return stopped(reg.kind, reg.call, reg.function, reg.saved_as, stopping_methods(
                self.ctx, self.classes.class_chain_methods(reg.cls), reg.function), reg.slot_of)
        if reg.kind == "fork":
            return False  # `os.register_at_fork` has no unregister
        # appended to a module-level container; through a registry function, only entries
        # taken out one by one undo it (a `clear()` of all at shutdown or a reset does not)
        if reg.container in self.facts.emptied or (reg.through is None and reg.container in self.facts.cleared):
            return True
        qualified = f"{self.ctx.module_name}.{reg.container}"
        if not self._read_anywhere(reg.container, qualified):
            # only ever added to: a keep-alive anchor, retaining on purpose ("poisoned
            # clients keep their buffers until process exit")
            return True
        return removed_in_project(self.ctx.index, qualified)

    def _read_anywhere(self, name: str, qualified: str) -> bool:
        """Is the container read in this file, or imported by another file?"""
        if self.facts.uses.get(name, 0) > self.facts.not_reads.get(name, 0):
            return True
        return self.ctx.index.ask(_imported_elsewhere, (qualified, os.path.abspath(self.ctx.path)))

    def has_undo(self, reg: Registration) -> bool:
        """Does a method other than `__del__` unregister the `atexit` callback, or remove the
        loop trigger from the loop it was added to (its release method, or `__del__`'s
        helper)?"""
        names = [c.name.value for c in self.classes.class_chain(reg.cls)]
        if reg.kind in LOOP_TRIGGERS:
            return any(self._removes(reg, receiver, method)
                       for name in names for receiver, method in self.facts.triggers_removed.get(name, ()))
        code = self.ctx.code
        wanted = code(reg.callback)
        last = reg.callback.attr.value if isinstance(reg.callback, cst.Attribute) else None
        return any(code(arg) == wanted or (last is not None and isinstance(arg, cst.Attribute)
                                           and arg.attr.value == last)
                   for name in names for arg in self.facts.unregistered.get(name, ()))

    def undone_from_del(self, reg: Registration) -> bool:
        """Does the class's `__del__` run the undo (itself, or through the methods it calls on
        `self`: `close()`)? Then an instance nobody closes is meant to be released by being
        dropped, and the registration, which holds it, keeps `__del__` from ever running."""
        methods: dict[str, cst.FunctionDef] = {}
        for m in self.classes.class_chain_methods(reg.cls):
            methods.setdefault(m.name.value, m)  # the class's own before its bases'
        if FINALIZER not in methods:
            return False
        reached, todo = set(), [FINALIZER]
        while todo:
            name = todo.pop()
            if name in reached or name not in methods:
                continue
            reached.add(name)
            todo.extend(n.func.attr.value for n in iter_nodes(methods[name].body)
                        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and is_self(n.func.value))
        return any(self._undoes_in(methods[name], reg) for name in reached)

    def undone_only_by_itself(self, reg: Registration) -> bool:
        """Is the callback a private method of the instance (`self._cleanup`) that undoes its
        own registration, called by no other method of the class? Then the undo runs only
        when the registry runs the callback - at exit - and until then the registration keeps
        the instance. (A public one, `close()`, is the owner's to call: its undo counts.)"""
        callback = reg.callback
        if not (isinstance(callback, cst.Attribute) and is_self(callback.value)
                and callback.attr.value.startswith("_") and not callback.attr.value.startswith("__")):
            return False
        name = callback.attr.value
        methods = self.classes.class_chain_methods(reg.cls)
        if {m.name.value for m in methods if self._undoes_in(m, reg)} != {name}:
            return False  # undone elsewhere too, or not by the callback at all
        return not any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and is_self(n.func.value)
                       and n.func.attr.value == name for m in methods if m.name.value != name
                       for n in iter_nodes(m.body))

    def _undoes_in(self, method: cst.FunctionDef, reg: Registration) -> bool:
        if reg.kind == "atexit":
            return self.unregisters_in(method, reg.callback)
        return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                   and self._removes(reg, self.ctx.code(n.func.value), n.func.attr.value)
                   for n in iter_nodes(method.body))

    def _removes(self, reg: Registration, receiver: str, method: str) -> bool:
        """Is `receiver.method(...)` a remover of the loop trigger `reg` added? A named remover
        (`remove_reader`) on any loop (the one it was added to is often kept under another
        name); a hub's plain `remove(fd)` only on the object it was added to, as spelt there
        (`self.hub`), not a list's `remove`."""
        removers = LOOP_TRIGGERS[reg.kind][1]
        func = reg.call.func
        return method in removers and (method != "remove" or (
            isinstance(func, cst.Attribute) and receiver == self.ctx.code(func.value)))

    def unregisters_in(self, method: cst.FunctionDef, callback) -> bool:
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


def _imported_elsewhere(index, key: tuple[str, str]) -> bool:
    """Does a project file other than `here` import `qualified`?"""
    qualified, here = key
    suffix = "." + qualified.rsplit(".", 1)[-1]
    return any(
        summary.path != here and any(
            target == qualified or (target.endswith(suffix) and index.resolve(target) == qualified)
            for target in summary.imports.values())
        for summary in index.files.values())


def _same_signal(a: cst.BaseExpression, b: cst.BaseExpression, code) -> bool:
    """The same signal, or one of them a variable (`for sig in (...): signal.signal(sig, h)`)."""
    return code(a) == code(b) or isinstance(a, cst.Name) or isinstance(b, cst.Name)
