"""RL203's fix: `atexit.unregister(self.<method>)` at the end of the class's release
method, where that release does what the exit call would have done."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_statements, is_self
from retainlint.analysis.fix_preconditions import append_at_end, end_reachable
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.release import fix_release_method
from retainlint.core.finding import Applicability
from retainlint.rules.rl203_global_callback_pins_instance.classes import ClassLookup
from retainlint.rules.rl203_global_callback_pins_instance.facts import (
    ATEXIT_UNREGISTER,
    FileFacts,
    Registration,
)
from retainlint.rules.rl203_global_callback_pins_instance.undo import Undo


class UnregisterFix:
    """Where `atexit.unregister(...)` may go, and the fix that puts it there."""

    def __init__(self, rule, classes: ClassLookup, undo: Undo, facts: FileFacts) -> None:
        self.rule = rule
        self.ctx = rule.ctx
        self.classes = classes
        self.undo = undo
        self.facts = facts

    def unregister_target(self, reg: Registration) -> Optional[cst.FunctionDef]:
        """The release method `atexit.unregister(self.<m>)` may go into: only where what the
        registration would do at exit has then been done - the release is the callback
        itself or calls it on `self` -, and where the release's end is reached."""
        callback = reg.callback
        if not (
            reg.kind == "atexit" and isinstance(callback, cst.Attribute) and is_self(callback.value)
            and self.classes.method(reg.cls, callback.attr.value) is not None
        ):
            return None  # only `self.<method>` can be named again in the release method
        release = fix_release_method(self.ctx, reg.cls)
        if release is None or release is reg.function or not end_reachable(release):
            return None
        name = callback.attr.value
        if name != release.name.value and name not in self.ctx.release.called_on_self(reg.cls, release.name.value):
            return None  # the exit call's work (`cleanup_files()`) would no longer happen
        return release

    def other_holders(self, reg: Registration) -> list[Registration]:
        """Registrations of the same class that keep the instance too and that no fix
        takes out: unregistering this one alone frees nothing."""
        return [other for other in self.facts.registrations
                if other is not reg and other.cls is reg.cls and other.pins_self and not self.undo.undone(other)
                and self.unregister_target(other) is None]

    def fix(self, reg: Registration):
        release = self.unregister_target(reg)
        if release is None or (reg.pins_self and self.other_holders(reg)):
            return None
        callback = reg.callback
        spelling, imports = _unregister_spelling(self.ctx)
        stmt = cst.parse_statement(f"{spelling}({self.ctx.code(callback)})")
        edited = append_at_end(release, [stmt])
        if edited is None:
            return None
        message = f"Call `atexit.unregister({self.ctx.code(callback)})` at the end of `{release.name.value}()`"
        target = self.classes.method(reg.cls, callback.attr.value)
        if target is None or not _returns_when_done(target):
            # after an explicit `close()`, the exit-time call no longer runs: the same only
            # when a second call does nothing, which the model proves by an early return
            return self.rule.fix(f"{message}: `{self.ctx.code(callback)}()` no longer runs again at exit "
                                 f"after an explicit `{release.name.value}()`",
                                 {release: edited}, imports=imports,
                                 applicability=Applicability.UNSAFE)
        return self.rule.fix(message, {release: edited}, imports=imports)


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
