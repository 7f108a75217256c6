"""RL203's finding for a registration: its message (what is pinned, in which registry,
what would undo it, what else keeps the instance), its level, and its fix."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.closed_shell import leaves_a_shell
from retainlint.analysis.cstutil import is_self
from retainlint.analysis.heavy import find_param
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.severity import Facts, instances_meant_to_go, level
from retainlint.core.finding import Consequence, Severity
from retainlint.rules.prefilters.rl203 import LOOP_TRIGGERS
from retainlint.rules.rl203_global_callback_pins_instance.classes import ClassLookup
from retainlint.rules.rl203_global_callback_pins_instance.facts import FileFacts, Registration
from retainlint.rules.rl203_global_callback_pins_instance.fix import UnregisterFix
from retainlint.rules.rl203_global_callback_pins_instance.runners import HOLDERS, STOPPERS
from retainlint.rules.rl203_global_callback_pins_instance.undo import Undo


class Reporter:
    """Reports a registration nothing undoes."""

    def __init__(self, rule, classes: ClassLookup, undo: Undo, fixer: UnregisterFix,
                 facts: FileFacts) -> None:
        self.rule = rule
        self.ctx = rule.ctx
        self.classes = classes
        self.undo = undo
        self.fixer = fixer
        self.facts = facts

    def report(self, reg: Registration) -> None:
        cls_name = reg.cls.name.value
        where = f"`{cls_name}.{reg.function.name.value}`"
        heavy = self.holds_heavy(reg.cls) if reg.pins_self else True
        held = "the instance" if reg.pins_self else "that object"
        held += " and the models/tensors it holds stay" if heavy else " stays"
        until = "the handler is replaced" if reg.kind == "signal" else "the interpreter exits"
        if reg.kind == "atexit":
            registry = "`atexit`'s callback list"
            undo = f"no method of `{cls_name}` calls `atexit.unregister(...)` for it"
        elif reg.kind == "signal":
            registry = "the signal-handler table"
            undo = f"no method of `{cls_name}` restores the previous handler"
        elif reg.kind == "fork":
            registry = "`os.register_at_fork`'s hooks"
            undo = ("they can never be unregistered: register a function that reaches the instance "
                    "through a `weakref.WeakMethod` and does nothing once it is gone")
        elif reg.kind in STOPPERS:
            registry = HOLDERS[reg.kind]
            until = "it is stopped" if STOPPERS[reg.kind] else "the interpreter exits"
            # (the release path: `runners.stopping_methods`)
            undo = (f"its loop has no way out that `{cls_name}`'s release path sets"
                    if STOPPERS[reg.kind] is None else
                    f"nothing `{cls_name}`'s release path runs calls `.{STOPPERS[reg.kind]}()` on it"
                    + (" or clears a flag that stops the re-arming" if reg.kind == "timer" else ""))
        elif reg.kind in LOOP_TRIGGERS:
            _, removers, registry = LOOP_TRIGGERS[reg.kind]
            until = "it is removed"
            undo = f"no method of `{cls_name}` calls `{removers[0]}(...)`"
        elif reg.through is not None:
            registry = f"module global `{reg.container}` (through `{reg.through}()`)"
            undo = ("nothing takes single entries out again"
                    + (" (only a `clear()` of them all)" if reg.container in self.facts.cleared else ""))
        else:
            registry = f"module global `{reg.container}`"
            undo = "nothing takes it out again"
        if reg.kind in ("atexit", *LOOP_TRIGGERS) and self.undo.has_undo(reg):
            undo = (f"`{cls_name}.__del__` undoes it for an instance nobody releases, but never runs: "
                    f"the registration holds the instance")
        elif reg.kind == "atexit" and self.undo.undone_from_del(reg):
            undo += " (`__del__` cannot: it never runs while the registry holds the instance)"
        how = f"is registered in {registry} by {where}"
        if reg.kind in STOPPERS:
            how = f"runs in {registry}, " + ("armed again by " if reg.kind == "timer" else "started by ") + where
        message = f"{reg.what} {how}: {held} alive until {until}; {undo}"
        others = self.fixer.other_holders(reg) if reg.kind == "atexit" and reg.pins_self else []
        if others and self.fixer.unregister_target(reg) is not None:
            # unregistering this one alone would free nothing: say what else keeps it
            message += "; " + ", ".join(
                f"`{self.ctx.code(o.callback)}` (registered by `{cls_name}.{o.function.name.value}`)"
                for o in others[:3]) + " also keep" + ("s" if len(others) == 1 else "") + " the instance"
        self.rule.report(
            reg.call,
            message,
            severity=self._level(reg, heavy),
            # unregistering something light frees nothing that matters: no fix for it
            # (one whose release method undoes it already needs a weak reference, not an unregister)
            fix=self.fixer.fix(reg) if reg.kind == "atexit" and heavy and not self.undo.has_undo(reg) else None,
            statement=reg.statement,
            consequence=self._consequence(reg, heavy, registry),
        )

    def _consequence(self, reg: Registration, heavy: bool, registry: str) -> Consequence:
        """The instance (or the heavy object whose bound method is registered) in `registry`:
        for the process, or while it is the signal's handler or the trigger stays. A module
        container keeps one per instance made (unless the process makes just one); the
        interpreter's lists do too when instances are made again and again, and a signal's
        slot only when each handler keeps the one it replaced."""
        name = reg.cls.name.value
        if reg.pins_self:
            kept = f"the `{name}` instance and " + ("the models/tensors it holds" if heavy else "what it holds")
        else:
            owner = reg.callback.value if isinstance(reg.callback, cst.Attribute) else reg.callback
            kept = f"`{self.ctx.code(owner)}` (heavy) and what it holds"
        lifetime = ("as long as it is the signal's handler" if reg.kind == "signal"
                    else "as long as it stays registered" if reg.kind in LOOP_TRIGGERS
                    else "as long as it runs" if reg.kind in STOPPERS else "the process")
        meant = instances_meant_to_go(self.ctx, reg.cls)
        grows = meant is not False if reg.kind == "append" else meant is True and (
            reg.kind != "signal" or self._chains_handlers(reg))
        return Consequence(kept, registry, lifetime, f"one per `{name}` made" if grows else "")

    def holds_heavy(self, cls: cst.ClassDef) -> bool:
        """A heavy class, or one that assigns a heavy value to an attribute in this file
        (`self.model = model` with `model: nn.Module`)."""
        oracle = self.ctx.heavy
        if oracle.is_heavy_class(cls):
            return True
        for method in self.classes.class_chain_methods(cls):
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


    def _level(self, reg: Registration, heavy: bool) -> Severity:
        """A module-global container keeping every instance (`_LIVE.append(self)`) grows by
        one per instance made: each is one its owner meant to drop, unless the project makes
        just one for the process. A handler list of the interpreter (atexit, a signal, at-fork)
        keeps one per instance too, but what that costs depends on how many are made."""
        meant = instances_meant_to_go(self.ctx, reg.cls)
        if reg.kind in ("atexit", "signal") and not heavy and reg.pins_self and meant is not True \
                and self._releases_itself(reg):
            # the callback is the instance's own release, which lets go of all the project
            # built for it, and the owner may call it before exit: what the interpreter's
            # table keeps after that release is a closed shell. (A project's own handler
            # list runs its callbacks at the app's shutdown: it keeps instances whole.)
            return Severity.INFO
        if reg.kind == "append":
            return level(Facts(heavy=heavy, grows=True, meant_to_go=True if meant is None else meant))
        if reg.kind in STOPPERS:
            # each instance made starts one more runner that nothing stops; shown only where
            # the code shows instances come and go (made per call, per connection)
            return level(Facts(heavy=heavy, grows=True, meant_to_go=True)) if meant is True else Severity.INFO
        if reg.kind == "signal" and not self._chains_handlers(reg):
            # the table has one slot per signal: it keeps the latest instance, not all of them
            return level(Facts(heavy=heavy, grows=False, meant_to_go=meant))
        return level(Facts(heavy=heavy, meant_to_go=meant))

    def _releases_itself(self, reg: Registration) -> bool:
        """Is the callback the instance's own release method (`self.close`, or a lambda
        that only calls it) that leaves it a closed shell (`closed_shell.leaves_a_shell`)?"""
        callback = reg.callback
        if isinstance(callback, cst.Lambda) and isinstance(callback.body, cst.Call):
            callback = callback.body.func
        return isinstance(callback, cst.Attribute) and is_self(callback.value) \
            and leaves_a_shell(self.ctx, reg.cls, callback.attr.value)

    def _chains_handlers(self, reg: Registration) -> bool:
        """Does the class keep the handler it replaces (`old = signal.signal(...)`,
        `signal.getsignal(...)`) - so each new handler keeps the previous instance, and the
        chain grows by one per instance?"""
        return reg.saved_as is not None or any(
            isinstance(n, cst.Call) and self.ctx.qualname(n.func) == "signal.getsignal"
            for n in iter_nodes(reg.cls))


def _holds_heavy_items(oracle, ann) -> bool:
    """A container annotated with heavy items (`dict[str, torch.Tensor]`, `list[nn.Module]`)."""
    expr = ann.annotation if isinstance(ann, cst.Annotation) else ann
    if not isinstance(expr, cst.Subscript):
        return False
    return any(isinstance(e.slice, cst.Index) and (
        oracle.is_heavy_annotation(e.slice.value) or _holds_heavy_items(oracle, e.slice.value))
        for e in expr.slice)
