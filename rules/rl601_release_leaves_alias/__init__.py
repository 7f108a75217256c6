"""RL601 release-leaves-alias.

The rule's class: which release methods it reads, and the finding with its level; its
parts are the modules beside this one."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.cstutil import body_functions, body_statements, self_attribute
from retainlint.analysis.fix_preconditions import still_held
from retainlint.analysis.release import FINALIZER, is_release_method
from retainlint.analysis.rule import RelatedNode, Rule
from retainlint.analysis.walk import visit
from retainlint.analysis.weight import substantial_value
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl601 import ReleaseLeavesAliasPrefilter
from retainlint.rules.rl601_release_leaves_alias.aliases import Aliases
from retainlint.rules.rl601_release_leaves_alias.collector import (
    Collector,
    MethodFacts,
    Release,
    Source,
)
from retainlint.rules.rl601_release_leaves_alias.examples import DOCS, INVALID, VALID
from retainlint.rules.rl601_release_leaves_alias.fix import AliasFix


class ReleaseLeavesAlias(Rule):
    prefilter = ReleaseLeavesAliasPrefilter
    name = "release-leaves-alias"
    summary = "A release method drops an attribute while another attribute still references the same object"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    docs = DOCS
    valid = VALID
    invalid = INVALID

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._facts: dict[int, MethodFacts] = {}
        self._aliases = Aliases(ctx, self._method_facts)
        self._fixes = AliasFix(self, self._method_facts)

    # -- facts ---------------------------------------------------------------------
    def _method_facts(self, fn: cst.FunctionDef) -> MethodFacts:
        key = id(fn)
        if key not in self._facts:
            collector = Collector(frozenset(self.ctx.imports.names))
            visit(fn.body, collector)
            self._facts[key] = collector.facts
        return self._facts[key]

    # -- detection -----------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        cls = self.ctx.scope.method_class
        if cls is None or self.ctx.scope.function is not node:
            return
        # not `__del__`: what still references the attribute dies with the object
        if node.name.value == FINALIZER or not is_release_method(self.ctx, node):
            return
        facts = self._method_facts(node)
        if not facts.releases:
            return
        drops = self.ctx.release.drops(cls, [node])
        if drops is None:
            return
        dropped = drops.unbound  # references let go (a holder closed still holds)
        # One finding per released attribute: its last `del`/`= None`, else its `.clear()`.
        chosen: dict[str, Release] = {}
        for release in facts.releases:
            previous = chosen.get(release.attr)
            if previous is None or (previous.kind == "clear" and release.kind != "clear"):
                chosen[release.attr] = release
        methods = self.ctx.methods(cls)
        closed = set(facts.closed) | {
            attr for name, attr in facts.name_from_attr if name in facts.closing_names
        }
        for release in sorted(chosen.values(), key=lambda r: r.order):
            if release.attr in closed:
                continue  # explicitly ended: what still references it holds a dead handle
            sources = self._aliases.aliases(cls, node, release)
            sources = [s for s in sources if s.attr not in dropped]
            if sources:
                self._report(cls, node, release, sources, methods)


    # -- reporting -----------------------------------------------------------------
    def _report(self, cls, fn, release: Release, sources: list[Source], methods) -> None:
        spelled = {
            "del": f"`del self.{release.attr}`",
            "none": f"`self.{release.attr} = None`",
            "clear": f"`self.{release.attr}.clear()`",
        }[release.kind]
        what = {
            "alias": "is the same object",
            "bound": "holds a bound method of it",
            "built": "was built from it",
            "container": "contains it",
            "copy": "is a copy of it",
            "handed": "was handed it",
        }
        parts = [
            f"`self.{s.attr}` ({what[s.how]}, via `{s.via}` in `{s.method}()`)" for s in sources
        ]
        holders = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        verb = "keeps" if len(sources) == 1 else "keep"
        related = [
            RelatedNode(f"`self.{s.attr}` takes a reference to `self.{release.attr}` here", s.node)
            for s in sources
        ]
        message = (f"{spelled} in `{fn.name.value}()` frees nothing: {holders} {verb} "
                   f"`self.{release.attr}`'s object alive, and `{fn.name.value}()` does not drop "
                   f"{'it' if len(sources) == 1 else 'them'}")
        # holders of its parts the alias analysis does not name (an optimizer over its
        # parameters): nulling the named ones alone would still free nothing
        named = {s.attr for s in sources} | {release.attr}
        drops = self.ctx.release.drops(cls, [fn])
        others = still_held(self.ctx, cls, release.attr, named | (drops.unbound if drops else set()))
        if others:
            message += "; " + "; ".join(f"`self.{a}` (built from it in `{m}()`) holds it or its parts too"
                                        for a, m in others[:3])
        # What stays decides the level: a model, tensors or what was built from them is a
        # release defeated (error); anything else - a task group, a poller, a few ints -
        # stays real but bounded (warning), and nulling its other holders frees nothing
        # that matters, so no fix is offered for it.
        heavy = self._heavy(cls, release.attr)
        kept = f"`self.{release.attr}`'s object" + (" (heavy)" if heavy else "")
        if not heavy:
            message += "; what stays is not known to be heavy"
        fix = None
        if heavy and not others and all(self._fixes.fixable(cls, fn, release, s.attr, methods) for s in sources):
            changes = [c for s in sources for c in self._fixes.nulling_for(cls, fn, release, s.attr).changes]
            fix = self._fixes.fix(release, [s.attr for s in sources], changes)
        self.report(
            release.small,
            message,
            fix=fix,
            severity=Severity.ERROR if heavy else Severity.WARNING,
            related=related,
            statement=release.line,
            consequence=Consequence(
                kept=kept,
                holder=", ".join(f"`self.{s.attr}`" for s in sources),
                lifetime=f"as long as the `{cls.name.value}` instance, after `{fn.name.value}()`",
            ),
        )

    def _heavy(self, cls: cst.ClassDef, attr: str, depth: int = 0) -> bool:
        """Is `self.attr` something heavy that pins real memory: by an assignment's
        annotation or value anywhere in the class, by an accessor that returns it as a
        heavy type (`def get_model(self) -> nn.Module: return self.model`), or as a call
        handed such an attribute (`init_model_state(config, self.model)` keeps the model)?"""
        oracle = self.ctx.heavy
        for fn in body_functions(cls):
            if depth < 2 and fn.returns is not None and oracle.is_heavy_annotation(fn.returns.annotation) \
                    and any(isinstance(s, cst.Return) and s.value is not None and self_attribute(s.value) == attr
                            for line in body_statements(fn) if isinstance(line, cst.SimpleStatementLine)
                            for s in line.body):
                return True
            for value, ann in oracle.local_assignments(fn).get(f"self.{attr}", ()):
                if ann is not None and oracle.is_heavy_annotation(ann.annotation):
                    return True
                if value is None or (isinstance(value, cst.Name) and value.value == "None"):
                    continue
                if oracle.is_heavy_value(value, fn, cls) and substantial_value(self.ctx, value, fn):
                    return True
                if depth < 2 and isinstance(value, cst.Call) and any(
                        self_attribute(a.value) not in (None, attr)
                        and self._heavy(cls, self_attribute(a.value) or "", depth + 1) for a in value.args):
                    return True
        return False
