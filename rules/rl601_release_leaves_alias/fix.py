"""RL601's fix: `self.b = None` for every holder right after the release of `self.a`,
where nothing may read `self.b` afterwards - and when that changes what a caller sees."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.fix_preconditions import nulling
from retainlint.core.finding import Applicability
from retainlint.rules.rl601_release_leaves_alias.collector import Release


class AliasFix:
    """Whether the holders of a released attribute's object may be nulled, and the fix
    that nulls them. `method_facts`: the facts of a method body, kept by the rule."""

    def __init__(self, rule, method_facts) -> None:
        self.rule = rule
        self.ctx = rule.ctx
        self.method_facts = method_facts

    def fixable(self, cls, fn, release: Release, attr: str, methods) -> bool:
        if attr in methods:
            return False  # a property or method: assigning None would not do the same
        for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Assign, cst.AnnAssign)) and "__slots__" in self.ctx.code(small):
                        return False
        if self.nulling_for(cls, fn, release, attr).blockers:
            return False  # read after the release by another method, a guard, a class attribute
        facts = self.method_facts(fn)
        uses = self._users(cls, attr)
        # uses after the release run after `self.b = None`, and so does all of a loop
        # around the release (its condition included) on its next pass
        later = release.order if release.loop_start is None else release.loop_start
        for kind, name, order in facts.events:
            if order <= later:
                continue
            if kind == "ref" and name == attr:
                return False
            if kind == "call" and name in uses:
                return False
        return True

    def nulling_for(self, cls, fn, release: Release, attr: str):
        # after `del self.a`, a method reading `self.a` unguarded fails already: its
        # reading `self.b` too is named in the help line rather than blocking the fix
        return nulling(self.ctx, cls, attr, fn, deleted=release.attr if release.kind == "del" else None)

    def _users(self, cls, attr: str) -> set[str]:
        """Methods of the class that reference `self.attr`, directly or via calls."""
        methods = self.ctx.methods(cls)
        users = {
            name for name, f in methods.items()
            if any(k == "ref" and n == attr for k, n, _ in self.method_facts(f).events)
        }
        changed = True
        while changed:
            changed = False
            for name, f in methods.items():
                if name not in users and self.method_facts(f).calls_self & users:
                    users.add(name)
                    changed = True
        return users

    def fix(self, release: Release, attrs: list[str], changes: list[str]):
        new_small = [
            cst.Assign(
                targets=[cst.AssignTarget(cst.Attribute(cst.Name("self"), cst.Name(attr)))],
                value=cst.Name("None"),
            )
            for attr in attrs
        ]
        line = release.line
        if isinstance(line, cst.SimpleStatementLine):
            replacement = cst.FlattenSentinel(
                [line, *(cst.SimpleStatementLine(body=[s]) for s in new_small)]
            )
        elif isinstance(line, cst.SimpleStatementSuite):
            body = list(line.body)
            body[-1] = body[-1].with_changes(semicolon=cst.Semicolon(
                whitespace_after=cst.SimpleWhitespace(" ")))
            replacement = line.with_changes(body=[*body, *new_small])
        else:
            return None
        names = ", ".join(f"`self.{a} = None`" for a in attrs)
        message = f"Add {names} after the release of `self.{release.attr}`"
        if changes:  # what a caller may see: unsafe, and said so
            return self.rule.fix(f"{message}: {'; '.join(changes)}", {line: replacement},
                                 applicability=Applicability.UNSAFE)
        return self.rule.fix(message, {line: replacement})
