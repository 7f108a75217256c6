"""The one finding model every rule, reporter and fixer shares."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Union

if TYPE_CHECKING:  # for annotations only: this layer never loads libcst
    import libcst as cst

    # What replaces a node: another node, several (a statement made of two), or nothing.
    Replacement = Union[cst.CSTNode, cst.FlattenSentinel[cst.CSTNode], cst.RemovalSentinel]


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]

    @property
    def meaning(self) -> str:
        """What a finding at this level is, in a few words (`retainlint rule`)."""
        return {
            "error": "growth, or a defeated release, of something heavy or without bound",
            "warning": "real, but bounded or unproven",
            "info": "real but negligible; shown only with --min-severity info",
        }[self.value]


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"
    NONE = "none"  # the rule only suggests; nothing is applied


@dataclass(frozen=True)
class Position:
    """1-based line, 1-based column (end positions are exclusive)."""

    line: int
    column: int


@dataclass(frozen=True)
class Related:
    message: str
    path: str
    start: Position
    end: Position


@dataclass(frozen=True)
class Consequence:
    """What a finding costs, as a reader would check it: what stays alive (`kept`: "every
    `Job` submitted"), what holds it (`holder`: "`_pending` (module-level)"), for how
    long (`lifetime`: "the process"), how it grows (`growth`: "one entry per request",
    "" when it does not), and the code that shows it (`evidence`)."""

    kept: str
    holder: str
    lifetime: str
    growth: str = ""
    evidence: tuple[Related, ...] = ()


@dataclass
class Fix:
    """A CST edit: original nodes (by identity) mapped to their replacements.

    ``imports`` are modules the new code needs (``import weakref``); the fixer adds
    them only when the module does not already bind that name.
    """

    applicability: Applicability
    message: str
    # original node -> its replacement (a node, FlattenSentinel or RemovalSentinel)
    replacements: dict[cst.CSTNode, Replacement] = field(default_factory=dict)
    imports: tuple[str, ...] = ()
    # Filled in after linting, when a reporter needs them: [(start, end, content)].
    edits: Optional[list[tuple[Position, Position, str]]] = None


@dataclass
class Finding:
    code: str
    name: str
    message: str
    path: str
    start: Position
    end: Position
    severity: Severity
    fix: Optional[Fix] = None
    related: list[Related] = field(default_factory=list)
    noqa_line: int = 0  # where a `# noqa` silences it (first line of the statement)
    consequence: Optional[Consequence] = None
    # The test that saw this leak happen (`pytest --retainlint-leaks`, then `check
    # --confirmed-by`): the finding is confirmed at runtime.
    confirmed: Optional[str] = None

    @property
    def fixable(self) -> bool:
        return self.fix is not None and self.fix.applicability is not Applicability.NONE

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.start.line, self.start.column, self.code)


# Pseudo-rules for files that cannot be read, parsed or written, and for rules that crash;
# always reported, never silenced.
SOURCE_ERROR = ("RL000", "source-error")
INTERNAL_ERROR = ("RL999", "internal-error")


def source_error(path: str, message: str, line: int = 1, column: int = 1) -> Finding:
    return Finding(
        code=SOURCE_ERROR[0],
        name=SOURCE_ERROR[1],
        message=message,
        path=path,
        start=Position(line, column),
        end=Position(line, column),
        severity=Severity.ERROR,
        noqa_line=line,
    )
