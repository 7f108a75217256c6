"""What a rule is: one class in one module of `rules/`, carrying its code, name,
documentation, examples and detection (libcst `visit_*`/`leave_*` methods, all rules
sharing one traversal of each file), and holding its prefilter (`prefilter = ...`: code,
trigger tokens and structural scan, in `rules/prefilters/`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Optional, Sequence

import libcst as cst

from retainlint.core.finding import Applicability, Consequence, Fix, Related, Severity
from retainlint.project.prefilter import Prefilter
from retainlint.core.urls import rule_url

if TYPE_CHECKING:
    from retainlint.analysis.context import FileContext


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
    related: list["RelatedNode | Related"]
    statement: Optional[cst.CSTNode]  # the enclosing statement, for `# noqa`
    consequence: Optional[Consequence] = None


@dataclass
class Located:
    """Where a finding is, as a model built from Python's own `ast` sees it: 1-based
    lines, 1-based character columns; `noqa_lines`, the lines a `# noqa` may silence it
    on (a compound statement's header only)."""

    start: tuple[int, int]
    end: tuple[int, int]
    noqa_lines: tuple[int, ...]


@dataclass
class LocatedReport:
    rule: "Rule"
    where: Located
    message: str
    severity: Severity
    consequence: Optional[Consequence] = None


class Rule:
    """A rule: its detection (libcst `visit_*`/`leave_*` methods) and documentation. It
    holds its prefilter (`prefilter`, from `rules/prefilters/rlNNN.py`): the code, the
    trigger tokens and the structural scan that decide, without libcst, which files are
    parsed for it."""

    prefilter: ClassVar[type[Prefilter]]
    code: ClassVar[str]  # the prefilter's

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "prefilter" in cls.__dict__:
            cls.code = cls.prefilter.code

    name: ClassVar[str]
    summary: ClassVar[str]  # one line, for tables and SARIF short descriptions
    docs: ClassVar[str]  # markdown: what it does, why it leaks, incident, example, fix
    severity: ClassVar[Severity] = Severity.ERROR
    fix_applicability: ClassVar[Applicability] = Applicability.NONE
    default_enabled: ClassVar[bool] = True
    # Codes whose finding on the same line says the same retention more precisely: this
    # rule's finding there is left out (one retention, one code).
    defers_to: ClassVar[tuple[str, ...]] = ()
    valid: ClassVar[list] = []
    invalid: ClassVar[list[Example]] = []

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
        consequence: Optional[Consequence] = None,
    ) -> None:
        """`statement`: where a `# noqa` may also go; defaults to the statement being
        visited (pass it when reporting from `leave_Module`). `consequence`: what the
        finding keeps alive, by what, for how long (the reports show it)."""
        self.ctx.reports.append(
            Report(
                rule=self,
                node=node,
                message=message,
                severity=severity or self.severity,
                fix=fix,
                related=list(related),
                statement=statement or self.ctx.scope.statement,
                consequence=consequence,
            )
        )

    def report_at(self, where: Located, message: str, *, severity: Optional[Severity] = None,
                  consequence: Optional[Consequence] = None) -> None:
        """A finding of a rule that reads the retention model (`retainlint.retention`)
        rather than libcst nodes (`project.retention`); such findings carry no fix."""
        self.ctx.located.append(LocatedReport(self, where, message, severity or self.severity,
                                              consequence))

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
