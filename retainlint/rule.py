"""What a rule is: one class in one module of `rules/`, carrying its code, name,
documentation, trigger tokens, examples and detection (libcst `visit_*`/`leave_*`
methods, all rules sharing one traversal of each file)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Optional, Sequence

import libcst as cst

from retainlint.finding import Applicability, Fix, Related, Severity

if TYPE_CHECKING:
    from retainlint.config import Settings
    from retainlint.index import ProjectIndex
    from retainlint.context import FileContext
    from retainlint.nodes import FileNodes


@dataclass
class Example:
    """A code sample in a rule's docs that the test suite runs.

    ``lines``: 1-based lines the rule must report (exactly those); ``fixed``: the source
    after applying the rule's fixes (safe and unsafe); ``settings``: overrides of the
    configuration (e.g. ``{"heavy_types": ["mypkg.Engine"]}``).
    """

    code: str
    lines: Sequence[int] = ()
    fixed: Optional[str] = None
    settings: dict = field(default_factory=dict)


@dataclass
class RelatedNode:
    message: str
    node: cst.CSTNode


@dataclass
class Report:
    """A finding as a rule raises it: nodes, not positions (positions are resolved
    afterwards, and only for files that have something to report)."""

    rule: "Rule"
    node: cst.CSTNode
    message: str
    severity: Severity
    fix: Optional[Fix]
    related: list[RelatedNode]
    statement: Optional[cst.CSTNode]  # the enclosing statement, for `# noqa`


from retainlint.registry import DOCS_URL, rule_url  # noqa: F401 - DOCS_URL: for importers


# Rule class -> (the prefix all its triggers share, its triggers), as bytes: worked out
# once, asked for every file.
_TRIGGER_BYTES: dict[type, tuple[bytes, tuple[bytes, ...]]] = {}


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line, for tables and SARIF short descriptions
    docs: ClassVar[str]  # markdown: what it does, why it leaks, incident, example, fix
    severity: ClassVar[Severity] = Severity.ERROR
    fix_applicability: ClassVar[Applicability] = Applicability.NONE
    # A file that contains none of these substrings is never parsed for this rule.
    triggers: ClassVar[tuple[str, ...]] = ()
    default_enabled: ClassVar[bool] = True
    valid: ClassVar[list] = []
    invalid: ClassVar[list[Example]] = []

    # Does this rule define `scan`? (Its result is then in `data.summary.scans[code]`.)
    scans: ClassVar[bool] = False

    @classmethod
    def scan(cls, nodes: "FileNodes") -> object:
        """Structural prefilter facts, gathered from the file's `ast` while the project
        is indexed, only for files holding one of `triggers`: small, picklable, and
        independent of settings (summaries are cached across runs and configurations).
        A rule that defines it sets `scans = True`; `might_match` reads the result from
        `data.summary.scans[cls.code]` (`data.summary` is None for a file `ast` cannot
        parse: decide from the bytes alone then)."""
        return None

    @classmethod
    def might_match(cls, data: bytes, settings: "Settings", index: "ProjectIndex") -> bool:
        """A cheap test: False means the file is not parsed for this rule. It must be
        True for every file the rule reports something in. By default, does the file
        contain one of the trigger tokens?"""
        return cls.triggered_by(data)

    @classmethod
    def triggered_by(cls, data: bytes) -> bool:
        """Does `data` contain one of the trigger tokens?"""
        known = _TRIGGER_BYTES.get(cls)
        if known is None:
            encoded = tuple(t.encode() for t in cls.triggers)
            known = _TRIGGER_BYTES[cls] = (os.path.commonprefix(encoded) if encoded else b"",
                                           encoded)
        shared, encoded = known
        # One search for the shared prefix (RL501's nineteen hook names all start
        # `register_`) instead of one per trigger in the many files without it.
        if len(encoded) > 1 and shared and shared not in data:
            return False
        return any(token in data for token in encoded)

    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx

    def applies(self) -> bool:
        """Asked after parsing, before the traversal: False leaves this rule out of it
        (e.g. a module with no candidate definitions at all). A file no rule applies to
        is not traversed."""
        return True

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        fix: Optional[Fix] = None,
        severity: Optional[Severity] = None,
        related: Sequence["RelatedNode | Related"] = (),
        statement: Optional[cst.CSTNode] = None,
    ) -> None:
        """`statement`: where a `# noqa` may also go; defaults to the statement being
        visited (pass it when reporting from `leave_Module`)."""
        self.ctx.reports.append(
            Report(
                rule=self,
                node=node,
                message=message,
                severity=severity or self.severity,
                fix=fix,
                related=list(related),
                statement=statement or self.ctx.scope.statement,
            )
        )

    def fix(self, message: str, replacements: dict, imports: Sequence[str] = (),
            applicability: Optional[Applicability] = None) -> Fix:
        return Fix(
            applicability=applicability or self.fix_applicability,
            message=message,
            replacements=replacements,
            imports=tuple(imports),
        )

    @classmethod
    def url(cls) -> str:
        return rule_url(cls.code, cls.name)
