"""`# noqa`, `# noqa: RL301`, `# noqa: RL3` (a prefix), `# noqa: strong-module-keyed-cache`
on any line of the statement a finding spans, or on a line its message names; `# retainlint:
noqa[: codes]` on a line of its own silences the whole file. Also: which directives
silenced nothing (the RL100 report) and which name rules that do not exist."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

from retainlint.core.codes import split_codes
from retainlint.core.finding import Finding, Position, Severity

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[\w-]+(?:[\s,]+[\w-]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(
    r"^#\s*retainlint:\s*noqa(?::\s*(?P<codes>[\w-]+(?:[\s,]+[\w-]+)*))?\s*$", re.IGNORECASE
)
_ANY_NOQA = re.compile("noqa", re.IGNORECASE)
_OUR_CODE = re.compile(r"^RL\d+$")
ALL = None  # a bare noqa
# Other linters' codes for the same finding: `# noqa: B019` (flake8-bugbear, ruff) also
# silences RL102, so existing suppressions keep working.
ALIASES = {"B019": "RL102"}
UNUSED_NOQA = ("RL100", "unused-noqa")


def _codes(match: re.Match[str]) -> Optional[frozenset[str]]:
    codes = match.group("codes")
    if not codes:
        return ALL
    found = {c.upper() for c in re.split(r"[\s,]+", codes) if c}
    return frozenset(found | {ALIASES[c] for c in found if c in ALIASES})


def _matches(entry: str, code: str, name: str) -> bool:
    """`entry` (upper case) names this rule: its code, a code prefix (RL3), its name, or
    the code or name of a rule it was split from (`# noqa: RL603` silences RL604)."""
    return entry == name.upper() or (_OUR_CODE.match(entry) is not None and code.startswith(entry)) \
        or code in (split_codes(entry) or ())


@dataclass
class Directive:
    line: int
    column: int  # of the `#`, 1-based
    codes: Optional[frozenset[str]]  # ALL for a bare noqa
    used: set[str] = field(default_factory=set)  # the entries that silenced something


@dataclass
class Suppressions:
    lines: dict[int, Directive] = field(default_factory=dict)
    file: list[Optional[frozenset[str]]] = field(default_factory=list)

    @classmethod
    def scan(cls, source: str) -> "Suppressions":
        found = cls()
        if not _ANY_NOQA.search(source):  # most files: no need to tokenize
            return found
        for line, column, text, own_line in _comments(source):
            file_match = _FILE_NOQA.match(text) if own_line else None
            if file_match:
                found.file.append(_codes(file_match))
                continue
            match = _NOQA.search(text)
            if match:
                found.lines[line] = Directive(line, column + match.start() + 1, _codes(match))
        return found

    def silences(self, lines: Iterable[int], code: str, name: str) -> bool:
        """Is a finding of rule `code` silenced by a directive on one of `lines` (or the
        file's)? The directive used is remembered (see `unused`)."""
        for entry in self.file:
            if entry is ALL or any(_matches(e, code, name) for e in entry):
                return True
        for line in lines:
            directive = self.lines.get(line)
            if directive is None:
                continue
            if directive.codes is ALL:
                directive.used.add("")
                return True
            hits = {e for e in directive.codes if _matches(e, code, name)}
            if hits:
                directive.used |= hits
                return True
        return False

    def unused(self, path: str, known: Iterable[tuple[str, str]]) -> list[Finding]:
        """RL100 findings: the rules a `# noqa: ...` names that silenced nothing. A bare
        `# noqa` and other linters' codes are left alone (they may serve another tool)."""
        ours = list(known)
        findings = []
        for d in sorted(self.lines.values(), key=lambda d: d.line):
            if d.codes is ALL or UNUSED_NOQA[0] in d.codes:  # a noqa naming RL100 keeps it
                continue
            mine = sorted(e for e in d.codes if e not in ALIASES and _names_ours(e, ours))
            idle = [e for e in mine if e not in d.used]
            if idle:
                where = Position(d.line, d.column)
                findings.append(Finding(
                    UNUSED_NOQA[0], UNUSED_NOQA[1],
                    f"unused `# noqa` directive for {', '.join(idle)}: "
                    f"{'it' if len(idle) == 1 else 'they'} reported nothing here",
                    path, where, where, Severity.WARNING, noqa_line=d.line))
        return findings

    def unknown(self, known: Iterable[tuple[str, str]]) -> list[tuple[int, str]]:
        """(line, entry) for each RL code in a directive that names no rule."""
        ours = list(known)
        return [(d.line, e) for d in sorted(self.lines.values(), key=lambda d: d.line)
                if d.codes is not ALL for e in sorted(d.codes)
                if _OUR_CODE.match(e) and e != UNUSED_NOQA[0] and not _names_ours(e, ours)]


def unused_in(path: str, data: bytes, known: Iterable[tuple[str, str]]) -> list[Finding]:
    """RL100 for a file no rule was run on: every directive naming our rules is unused."""
    return Suppressions.scan(data.decode("utf-8", "replace")).unused(path, known)


_RL_IN_NOQA = re.compile(rb"noqa:[^\n]*\brl\d")  # searched in a lowered copy


def unknown_noqa_codes(data: bytes, known: Iterable[tuple[str, str]]) -> list[tuple[int, str]]:
    """(line, code) for each RLnnn in a noqa that names no rule (a typo silences nothing)."""
    # nearly every file: no tokenizing (a case-blind regular expression is slow; a lowered
    # copy and a plain substring test answer most files first)
    lowered = data.lower()
    if b"noqa" not in lowered or not _RL_IN_NOQA.search(lowered):
        return []
    return Suppressions.scan(data.decode("utf-8", "replace")).unknown(known)


def _names_ours(entry: str, known: list[tuple[str, str]]) -> bool:
    return any(_matches(entry, code, name) for code, name in known)


def _comments(source: str) -> Iterator[tuple[int, int, str, bool]]:
    """(line, column, comment text, is the comment alone on its line) for every comment."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                own_line = not tok.line[: tok.start[1]].strip()
                yield tok.start[0], tok.start[1], tok.string, own_line
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Fall back to a plain scan: worst case a `# noqa` inside a string counts.
        for number, text in enumerate(source.splitlines(), 1):
            index = text.find("#")
            if index >= 0:
                yield number, index, text[index:], not text[:index].strip()
