"""What the retention checks share: a rule base that reports the model's findings where
they are (their prefilters: `project.retention_prefilter`)."""

from __future__ import annotations

from typing import ClassVar, Iterator

import libcst as cst

from retainlint.analysis.rule import Located, Rule
from retainlint.core.finding import Consequence, Severity
from retainlint.project.consequence import facts_of
from retainlint.project.module_names import is_test_code
from retainlint.project.retention_facts import ModuleFacts, Site


def located(site: Site) -> Located:
    return Located((site.line, site.column), (site.end_line, site.end_column),
                   tuple(range(site.first, site.last + 1)))


class RetentionRule(Rule):
    """A check that reads the retention model: `findings` yields (site, message, severity,
    consequence)."""

    severity: ClassVar[Severity] = Severity.WARNING

    def findings(self, facts: ModuleFacts) -> Iterator[tuple[Site, str, Severity, Consequence]]:
        raise NotImplementedError

    def visit_Module(self, node: cst.Module) -> None:
        self.report_model()

    def report_model(self) -> None:
        """Reports the model's findings for the file. Reads only `ctx.path`, `ctx.index`
        and `report_at`, never the tree: a file that only such checks look at is not parsed
        by libcst (`engine/lint.py` `_lint_facts`)."""
        if is_test_code(self.ctx.path):
            return  # a test run is a short process: what it keeps dies with it
        facts = facts_of(self.ctx.index, self.ctx.path)
        if facts is None:
            return
        for site, message, severity, consequence in self.findings(facts):
            self.report_at(located(site), message, severity=severity, consequence=consequence)
