"""RL610 heavy-attribute-never-dropped: a release method never drops an attribute the class
built a heavy object into. Its documentation and examples are in `examples.py`."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.exit_only_release import _only_at_exit
from retainlint.analysis.fix_preconditions import nulling, still_held
from retainlint.analysis.owned_parts import (
    _Heavy, _heavy_attributes, _is_module_class, _substantial, brief, closing_method, inherited_close,
    is_open_resource, is_ray_actor, is_worker_pool,
)
from retainlint.analysis.release import release_methods
from retainlint.analysis.release_fix import _append, _has_slots, _release_method_of, _set_in_init
from retainlint.analysis.rule import RelatedNode, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl610 import HeavyAttributeNeverDroppedPrefilter
from retainlint.rules.rl610_heavy_attribute_never_dropped.examples import DOCS, INVALID, VALID


class HeavyAttributeNeverDropped(Rule):
    prefilter = HeavyAttributeNeverDroppedPrefilter
    name = "heavy-attribute-never-dropped"
    summary = "A release method never drops an attribute that holds a model, tensors, a worker pool or an open OS resource"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE
    docs = DOCS

    valid = VALID
    invalid = INVALID

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        releases = release_methods(self.ctx, node)
        if not releases:
            self._inherited_release(node)
            return
        methods = self.ctx.methods(node)
        heavy = _heavy_attributes(self.ctx, node, methods)
        if not heavy or _is_module_class(self.ctx, node):
            return
        drops = self.ctx.release.drops(node, releases)
        if drops is None:
            return
        kept = [h for a, h in heavy.items() if a not in drops.all and _substantial(self.ctx, h, node)]
        if not kept or is_ray_actor(self.ctx, node):
            return
        live = [r for r in releases if not _only_at_exit(self.ctx, node, r)]
        if live:
            self._report(node, live[0], kept, methods, drops.unbound)

    def _inherited_release(self, cls: cst.ClassDef) -> None:
        """A class releasing with a library base's `close()`, which closes only what the
        base opened: what the class builds stays."""
        base = inherited_close(self.ctx, cls)
        if base is None:
            return
        kept = [h for h in _heavy_attributes(self.ctx, cls, self.ctx.methods(cls)).values()
                if _substantial(self.ctx, h, cls)]
        if not kept:
            return
        listed = ", ".join(self._describe(h) for h in kept[:5]) + (f" and {len(kept) - 5} more" if len(kept) > 5 else "")
        message = (
            f"`{cls.name.value}` releases with the `close()` it inherits from `{base}`, which never "
            f"drops {listed}: {self._consequence(kept)} as long as the `{cls.name.value}` lives on "
            f"after `close()` (no automatic fix: a `close()` that closes {'it' if len(kept) == 1 else 'them'} "
            "and then calls `super().close()` is the remedy)"
        )
        related = [RelatedNode(f"`self.{h.attr}` is assigned {self._kind(h)} here", h.value) for h in kept]
        self.report(cls.name, message, related=related, consequence=self._what_stays(cls, "close", kept))

    def _describe(self, h: _Heavy) -> str:
        return f"`self.{h.attr}` (`{brief(self.ctx.code(h.origin.func))}(...)` in `{h.fn.name.value}()`)"

    def _report(self, cls: cst.ClassDef, release: cst.FunctionDef, kept: list[_Heavy], methods,
                dropped: set[str]) -> None:
        listed = [self._describe(h) for h in kept[:5]]
        if len(kept) > 5:
            listed.append(f"{len(kept) - 5} more")
        names = ", ".join(listed[:-1]) + (" nor " if len(listed) > 1 else "") + listed[-1]
        where = f"{cls.name.value}.{release.name.value}()"
        it = "it" if len(kept) == 1 else "them"
        verb = "closes" if all(is_open_resource(self.ctx, h.origin) for h in kept) else "releases"
        message = (
            f"`{where}` never drops {names}: no release method deletes {it}, sets {it} "
            f"to `None`, clears or {verb} {it}, so "
            + self._consequence(kept) + f" as long as the `{cls.name.value}` lives on after release"
        )
        # dropping the attribute frees nothing while another one keeps the object or its parts
        others = {h.attr for h in kept}
        held = [(h.attr, holder, built) for h in kept
                for holder, built in still_held(self.ctx, cls, h.attr, dropped | others)]
        if held:
            message += "; " + "; ".join(
                f"`self.{holder}` (built from it in `{built}()`) would still hold `self.{attr}`'s object or its parts"
                for attr, holder, built in held[:3])
        related = [RelatedNode(f"`self.{h.attr}` is assigned {self._kind(h)} here", h.value) for h in kept]
        fix = None if held else self._fix(cls, release, kept, methods)
        self.report(release.name, message, fix=fix, related=related, statement=release,
                    consequence=self._what_stays(cls, release.name.value, kept))

    def _what_stays(self, cls: cst.ClassDef, release: str, kept: list[_Heavy]) -> Consequence:
        """What the attributes keep (by what built it), after `release()`, as long as the
        instance lives."""
        kinds = {self._kind(h) for h in kept}
        one = {"a heavy object": "heavy object", "a worker pool": "worker pool",
               "an open file, socket or connection": "open resource"}[next(iter(kinds))]
        what = (f"the {one}" if len(kept) == 1 else f"{len(kept)} {one}s" if len(kinds) == 1
                else f"{len(kept)} heavy objects, worker pools or open resources")
        built = _listed(list(dict.fromkeys(f"`{brief(self.ctx.code(h.origin.func))}(...)`" for h in kept)))
        running = f" and {'its' if len(kept) == 1 else 'their'} running workers" if kinds == {"a worker pool"} else ""
        # several: what built them is an aside, the first part a short line leaves out
        stays = f"{what} from {built}{running}" if len(kept) == 1 else f"{what}{running} (from {built})"
        return Consequence(stays, _listed([f"`self.{h.attr}`" for h in kept]),
                           f"as long as the `{cls.name.value}` instance, after `{release}()`")

    def _kind(self, h: _Heavy) -> str:
        if is_worker_pool(self.ctx, h.origin):
            return "a worker pool"
        return "an open file, socket or connection" if is_open_resource(self.ctx, h.origin) \
            else "a heavy object"

    def _consequence(self, kept: list[_Heavy]) -> str:
        if all(is_worker_pool(self.ctx, h.origin) for h in kept):
            return "its worker threads or processes keep running, with what was handed to them,"
        if all(is_open_resource(self.ctx, h.origin) for h in kept):
            return "what it opened stays open (a file descriptor, a socket, a pool of connections)"
        return "the memory held stays allocated"

    def _fix(self, cls, release: cst.FunctionDef, kept: list[_Heavy], methods):
        if _has_slots(cls):
            return None
        statements, spelled, changes = [], [], []
        for h in kept:
            if h.attr in methods:
                return None  # a part the fix cannot drop: it would not leave nothing to report
            resource = is_open_resource(self.ctx, h.origin)
            method, awaited = closing_method(self.ctx, h.origin) if resource \
                else (_release_method_of(self.ctx, h), False)
            if awaited and release.asynchronous is None:
                return None  # a coroutine to close it: a plain release cannot await it
            state = "closed" if resource else "`None`" if method is None else f"released by its own `{method}()`"
            verdict = nulling(self.ctx, cls, h.attr, release, state)
            if verdict.blockers:
                return None
            changes.extend(verdict.changes)
            if method is None:
                statements.append(cst.parse_statement(f"self.{h.attr} = None\n"))
                spelled.append(f"`self.{h.attr} = None`")
                continue
            # the part's own release runs now: whatever else it does (flush, close a file) happens
            if not verdict.changes:
                changes.append(f"`self.{h.attr}.{method}()` now runs in `{release.name.value}()`")
            call = f"{'await ' if awaited else ''}self.{h.attr}.{method}()"
            always, maybe_none = _set_in_init(self.ctx, cls, h.attr)
            if always and not maybe_none:
                code = f"{call}\n"
            elif always:
                code = f"if self.{h.attr} is not None:\n    {call}\n"
            else:
                code = f'if getattr(self, "{h.attr}", None) is not None:\n    {call}\n'
            statements.append(cst.parse_statement(code))
            spelled.append(f"`{call}`")
        if not statements:
            return None
        new = _append(release, statements)
        if new is None:
            return None
        message = f"Add {', '.join(spelled)} at the end of `{release.name.value}()`"
        if changes:
            return self.fix(f"{message}: {'; '.join(changes)}", {release: new},
                            applicability=Applicability.UNSAFE)
        return self.fix(message, {release: new})


def _listed(names: list[str]) -> str:
    """`a`, `b` and `c`; past three, how many more."""
    shown = names[:3] + ([f"{len(names) - 3} more"] if len(names) > 3 else [])
    return ", ".join(shown[:-1]) + (" and " if len(shown) > 1 else "") + shown[-1]
