"""A finding's level from its consequence, decided once for every rule.

A rule states the facts it has about what it found - does the kept object weigh anything,
does the retention grow, was the object meant to go away, is the retention freed by the
cyclic collector anyway - and `level` turns them into the severity, with the definitions
every rule shares:

- `error`: growth, or a defeated release, of something heavy or without bound - it costs
  something (heavy, or growing) AND the object was meant to go away (made again and again
  in a long-lived process, or released by the project itself), and the rule knows both;
- `warning`: real, but bounded or unproven (a cost without a sign that the object was meant
  to go, or a sign it was meant to go without a known cost);
- `info`: real but negligible (hidden by default) - light and bounded, kept by something
  that lives as long as it would anyway, or a cycle the collector frees in time (a cycle
  through a heavy object that its owner drops to free it is a warning: it waits for the
  collector, which the bytes it pins do not trigger).

Facts are three-valued where a rule may not know: True (the code shows it), False (the code
shows the opposite), None (unknown). Unknown never makes an error, and never hides a finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.core.finding import Severity
from retainlint.project.consequence import collector_off_anywhere, facts_of, lives_for_the_process
from retainlint.project.consequence import made_per_call as consequence_made_per_call

if TYPE_CHECKING:
    from retainlint.analysis.context import FileContext


@dataclass(frozen=True)
class Facts:
    """What a rule knows about the cost of one finding.

    `heavy`: the kept object pins real memory or a resource (a model, tensors, a buffer, a
    subprocess, a connection). `grows`: one more is kept per call, instance, request or
    thread, without bound. `meant_to_go`: the object is made again and again in a long-lived
    process, or the project releases it (`close()`, `del x; gc.collect()`) and the holder
    defeats that; False when it lives for the whole process anyway. `collected`: the
    retention is a reference cycle that the cyclic collector frees (nothing disables it, and
    no finalizer or release waits on it): the object goes, only later."""

    heavy: Optional[bool] = None
    grows: Optional[bool] = None
    meant_to_go: Optional[bool] = None
    collected: bool = False

    @property
    def costly(self) -> Optional[bool]:
        """Heavy or growing: True when either is shown, False when both are ruled out."""
        if self.heavy or self.grows:
            return True
        if self.heavy is False and self.grows is False:
            return False
        return None


def level(facts: Facts) -> Severity:
    """The severity the facts give (see the module's docstring)."""
    if facts.collected:
        # Freed, but only when the collector runs, and a collection is triggered by the
        # count of Python objects made, not by the bytes a model pins: a model its owner
        # drops (and means to be rid of) can wait for it while the next one loads.
        return Severity.WARNING if facts.heavy and facts.meant_to_go else Severity.INFO
    if facts.meant_to_go is False or facts.costly is False:
        return Severity.INFO
    if facts.costly and facts.meant_to_go:
        return Severity.ERROR
    return Severity.WARNING



# -- project-wide facts the levels need -----------------------------------------------------

# Library bases whose instances are values made per call (a distribution per sample, per
# forward): many are made and dropped, so a cycle through each keeps its tensors until
# the collector runs, again and again.
_PER_CALL_BASES = ("torch.distributions.",)


def _bases(ctx: "FileContext", cls: cst.ClassDef) -> list[str]:
    """`cls`'s bases, qualified, with the project's own classes' bases followed."""
    found: list[str] = []
    todo = [q for q in (ctx.absolute(ctx.qualname(b.value)) for b in cls.bases) if q]
    while todo and len(found) < 32:
        base = todo.pop()
        resolved = ctx.index.resolve(base) or base
        if resolved in found:
            continue
        found.append(resolved)
        summary = ctx.index.classes.get(resolved)
        if summary is not None:
            todo.extend(summary.bases)
    return found


def made_per_call(ctx: "FileContext", cls: cst.ClassDef) -> bool:
    """Are instances of `cls` values made per call: by the retention model (made in a loop
    or a per-request function), or derived from a library type made per call (a torch
    distribution)?"""
    qualified = f"{ctx.module_name}.{cls.name.value}"
    facts = facts_of(ctx.index, ctx.path)
    if facts is not None and consequence_made_per_call(qualified, facts, ctx.index):
        return True
    return any(base.startswith(_PER_CALL_BASES) for base in _bases(ctx, cls))


def instances_meant_to_go(ctx: "FileContext", cls: cst.ClassDef) -> Optional[bool]:
    """Are instances of `cls` made again and again (per call, per request), so that each one
    a process-wide holder keeps is one too many? False when the project makes one for the
    process (at module level, in an entry point): a holder keeps it no longer than it lives.
    None when unknown: a connector or an executor made by a factory, once per worker or per
    engine."""
    if made_per_call(ctx, cls):
        return True
    if ctx.classes.get(cls.name.value) is cls and lives_for_the_process(
            ctx.index, f"{ctx.module_name}.{cls.name.value}"):
        return False
    return None


def _finalized(ctx: "FileContext", cls: cst.ClassDef) -> bool:
    """Does a release wait on the instance's death: a `__del__`, or `weakref.finalize(self,
    ...)` (ending a subprocess, closing a file)? A cycle defers it to a full collection."""
    for node in iter_nodes(cls.body):
        if isinstance(node, cst.FunctionDef) and node.name.value == "__del__":
            return True
        if isinstance(node, cst.Call) and ctx.qualname(node.func) == "weakref.finalize" \
                and node.args and is_self(node.args[0].value):
            return True
    return False


def collector_frees(ctx: "FileContext", cls: cst.ClassDef) -> bool:
    """Is a plain Python reference cycle through an instance of `cls` freed in time by the
    cyclic collector? Not when a release waits on the instance's death (its finalizer), or
    when instances are values made per call (each cycle leaves one more for the collector,
    and none is ever freed where the project disables it). An object made once - a model's
    layers - keeps at most itself in its cycle, whether or not some code path of the project
    turns the collector off (`gc.disable()` in a test, or opt-in): as long as it lives anyway."""
    return not (_finalized(ctx, cls) or made_per_call(ctx, cls))


_MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module")


def is_model(ctx: "FileContext", cls: cst.ClassDef) -> bool:
    """Is `cls` a `torch.nn.Module` (directly or through the project's classes)? A model is
    what a process loads, drops and loads again; a plain class holding tensors (a reducer, a
    pool) is made once per run more often than not."""
    return any(base in _MODULE_BASES or base.startswith("torch.nn.") and base[9:10].isupper()
               for base in _bases(ctx, cls))


def light_cycle_freed(ctx: "FileContext", cls: cst.ClassDef) -> bool:
    """Is a reference cycle of plain Python objects through an instance that holds nothing
    heavy freed in time by the collector, however many instances are made? Each one made
    adds to the count of allocations that triggers a collection, so light instances made
    per call do not pile up - unless a release waits on the instance's death (its
    finalizer) or the project turns the collector off (`gc.disable()`). (`collector_frees`
    answers for any instance, a heavy one too, whose bytes do not count towards a
    collection: it holds instances made per call against the collector.)"""
    return not _finalized(ctx, cls) and not collector_off_anywhere(ctx.index)
