"""`# noqa`, `# noqa: RL301`, `# noqa: strong-module-keyed-cache` on the reported line
(or the first line of its statement); `# retainlint: noqa[: codes]` on a line of its
own silences the whole file."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterator, Optional

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[\w-]+(?:[\s,]+[\w-]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(
    r"^#\s*retainlint:\s*noqa(?::\s*(?P<codes>[\w-]+(?:[\s,]+[\w-]+)*))?\s*$", re.IGNORECASE
)
_ANY_NOQA = re.compile("noqa", re.IGNORECASE)
ALL = None  # a bare noqa
# Other linters' codes for the same finding: `# noqa: B019` (flake8-bugbear, ruff) also
# silences RL102, so existing suppressions keep working.
ALIASES = {"B019": "RL102"}


def _codes(match: re.Match[str]) -> Optional[frozenset[str]]:
    codes = match.group("codes")
    if not codes:
        return ALL
    found = {c.upper() for c in re.split(r"[\s,]+", codes) if c}
    return frozenset(found | {ALIASES[c] for c in found if c in ALIASES})


@dataclass
class Suppressions:
    lines: dict[int, Optional[frozenset[str]]] = field(default_factory=dict)
    file: list[Optional[frozenset[str]]] = field(default_factory=list)

    @classmethod
    def scan(cls, source: str) -> "Suppressions":
        found = cls()
        if not _ANY_NOQA.search(source):  # most files: no need to tokenize
            return found
        for line, text, own_line in _comments(source):
            file_match = _FILE_NOQA.match(text) if own_line else None
            if file_match:
                found.file.append(_codes(file_match))
                continue
            match = _NOQA.search(text)
            if match:
                found.lines[line] = _codes(match)
        return found

    def silences(self, lines: tuple[int, ...], code: str, name: str) -> bool:
        keys = {code.upper(), name.upper()}
        for entry in self.file:
            if entry is ALL or keys & entry:
                return True
        for line in lines:
            if line in self.lines:
                entry = self.lines[line]
                if entry is ALL or keys & entry:
                    return True
        return False


def _comments(source: str) -> Iterator[tuple[int, str, bool]]:
    """(line, comment text, is the comment alone on its line) for every comment."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                own_line = not tok.line[: tok.start[1]].strip()
                yield tok.start[0], tok.string, own_line
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Fall back to a plain scan: worst case a `# noqa` inside a string counts.
        for number, text in enumerate(source.splitlines(), 1):
            index = text.find("#")
            if index >= 0:
                yield number, text[index:], not text[:index].strip()
