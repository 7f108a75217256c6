""".gitignore patterns (as pathspec's GitIgnoreSpec reads them) matched in time near-linear
in the path, whatever the pattern.

pathspec compiles a pattern to a backtracking regular expression: `*a*a*a*...b` against a
long name of `a`s takes exponential time, and a pull request's configuration chooses its
excludes. Here a path is matched folder by folder: `**` skips whole folders (each
(pattern part, path part) pair is tried once), and within one name the stars are matched
the linear way, each literal run between two stars taken at its first place (a later star
can always absorb the rest; a name holds no `/`). pathspec still parses each pattern (its
meaning, its errors); only the matching is done here. tests/engine/test_globs.py checks both
agree on many patterns and paths.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Optional, Union

from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

_STAR = "[^/]*"  # what pathspec writes for `*` within a name (`?` is `[^/]`, never followed by *)
_TRIVIAL = {".", "/", "(?P<ps_d>/)"}  # pathspec's own regex for `**`, `**/*`, `**/*/**`: linear


class _Name:
    """One path part's glob: literal runs (fixed-length regular expressions) between stars."""

    def __init__(self, glob: str) -> None:
        self.nonempty = glob == "*"  # a part that is `*` alone needs one character at least
        runs = GitIgnoreSpecPattern._translate_segment_glob(glob, "raise").split(_STAR)
        self.first = re.compile(runs[0])
        self.middle = [re.compile(r) for r in runs[1:-1] if r]  # empty: a run of stars, collapsed
        self.last = re.compile(f"(?:{runs[-1]})\\Z") if len(runs) > 1 else None
        self.exact = re.compile(runs[0]) if len(runs) == 1 else None

    def matches(self, name: str) -> bool:
        if self.nonempty:
            return name != ""
        if self.exact is not None:
            return self.exact.fullmatch(name) is not None
        m = self.first.match(name)
        if m is None:
            return False
        at = m.end()
        for run in self.middle:
            m = run.search(name, at)
            if m is None:
                return False
            at = m.end()
        assert self.last is not None
        return self.last.search(name, at) is not None


_ANY = None  # a `**` part
_GLOB_CHARS = re.compile(r"[*?\[\\]")  # a part with none of these matches only itself


class Pattern:
    """One line: `include` (True, False for `!`, None for a comment or a blank), and
    `match(path)`: None, or whether the match stopped at a folder above the path (pathspec's
    directory mark, which GitIgnoreSpec weighs)."""

    def __init__(self, line: str) -> None:
        parsed = GitIgnoreSpecPattern(line)  # raises pathspec's error on an invalid pattern
        self.include: Optional[bool] = parsed.include
        self.trivial = parsed.regex if parsed.regex is not None and parsed.regex.pattern in _TRIVIAL else None
        self.parts: list[Optional[_Name]] = []
        self.literals: frozenset[str] = frozenset()
        self.directory = False
        if self.include is not None and self.trivial is None:
            text = line if line.endswith("\\ ") else line.rstrip()
            text = text[1:] if text.startswith("!") else text
            parts = text.split("/")
            self.directory = not parts[-1]
            normalized = _normalized(parts)
            self.parts = [_ANY if p == "**" else _Name(p) for p in normalized]
            # Names the path must hold as whole parts for a match (`build` in `**/build`):
            # most paths of a tree hold none, and are answered without the walk.
            self.literals = frozenset(p for p in normalized if p != "**" and not _GLOB_CHARS.search(p))

    def match(self, path: str) -> Optional[bool]:
        if self.include is None:
            return None
        if self.trivial is not None:
            found = self.trivial.search(path)
            return None if found is None else bool(found.groupdict().get("ps_d"))
        names = path.split("/")
        if not self.literals.issubset(names):
            return None
        memo: dict[tuple[int, int], Optional[bool]] = {}
        return self._from(0, 0, names, memo)

    def _from(self, i: int, j: int, names: list[str], memo: dict[tuple[int, int], Optional[bool]]
              ) -> Optional[bool]:
        """Parts i.. against names j..: the first match in the order the regular expression
        would find it (each `**` as long as it can be), and its directory mark."""
        key = (i, j)
        if key in memo:
            return memo[key]
        part, last = self.parts[i], i == len(self.parts) - 1
        result: Optional[bool] = None
        if part is _ANY and last:  # `x/**`: something below x
            result = self.directory if j < len(names) else None
        elif part is _ANY:  # leading or inner `**`: zero or more whole folders, most first
            for skip in range(len(names) - j - 1, -1, -1):
                result = self._from(i + 1, j + skip, names, memo)
                if result is not None:
                    break
        elif j < len(names) and part.matches(names[j]):
            result = (j + 1 < len(names)) if last else self._from(i + 1, j + 1, names, memo)
        memo[key] = result
        return result


def _normalized(parts: list[str]) -> list[str]:
    """pathspec's reading of the parts: a leading `/` anchors, a single part (or a folder)
    matches at any depth, a trailing `/` means everything below, repeated `**` are one."""
    if not parts[0]:
        del parts[0]
    elif (len(parts) == 1 or (len(parts) == 2 and not parts[1])) and parts[0] != "**":
        parts.insert(0, "**")
    if not parts[-1]:
        parts[-1] = "**"
    return [p for k, p in enumerate(parts) if not (p == "**" and k and parts[k - 1] == "**")]


class GitIgnore:
    """Patterns as one .gitignore: the last one matching decides, except that a match on
    the path itself outweighs a match on a folder above it (pathspec's GitIgnoreSpec)."""

    def __init__(self, lines: Iterable[Union[str, Pattern]]) -> None:
        self.patterns = [p if isinstance(p, Pattern) else _pattern(p) for p in lines]
        # A pattern with a literal name matches only paths holding that name, and most
        # paths hold none of them (28 default excludes, one path in a few thousand): the
        # patterns to try are looked up by the path's names, by position (last first).
        self.always: list[int] = []
        self.by_name: dict[str, list[int]] = {}
        for k, pattern in enumerate(self.patterns):
            if pattern.literals:
                self.by_name.setdefault(min(pattern.literals), []).append(k)
            else:
                self.always.append(k)

    def match_file(self, path: str) -> bool:
        names = path.split("/")
        tried = self.always + [k for name in set(names).intersection(self.by_name)
                               for k in self.by_name[name]]
        include: Optional[bool] = None
        weight = 0
        for pattern in (self.patterns[k] for k in sorted(tried, reverse=True)):
            mark = pattern.match(path)
            if mark is None:
                continue
            this = 1 if mark else 2
            if this > weight:
                include, weight = pattern.include, this
            if weight == 2:
                break
        return bool(include)


@lru_cache(maxsize=1024)
def _pattern(line: str) -> Pattern:
    return Pattern(line)
