"""A rule's prefilter: the cheap test that decides whether a file is parsed with libcst
for the rule at all. `Prefilter` is the base of each rule's prefilter class (in
`rules/prefilters/`, importable without libcst: a run that parses no file never
imports it); `Source` is what a prefilter sees of a file: its bytes (substring tests work
as on `bytes`), plus what the cheapest tests need beyond substrings, computed at most
once per file."""

from __future__ import annotations

import os
import re
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, Optional, Sequence

from retainlint.project.index import SCAN_FAILED, FileSummary

if TYPE_CHECKING:
    from retainlint.core.config import Settings
    from retainlint.project.index import ProjectIndex
    from retainlint.project.nodes import FileNodes

_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


class Source(bytes):
    path: str = ""
    summary: Optional[FileSummary] = None  # the file's project-index summary, if it parses

    @classmethod
    def of(cls, data: bytes, path: str = "", summary: Optional[FileSummary] = None) -> "Source":
        source = cls(data)
        source.path, source.summary = path, summary
        return source

    @cached_property
    def words(self) -> frozenset[bytes]:
        """Every identifier in the file (comments and strings included: a superset)."""
        return frozenset(_IDENTIFIER.findall(self))


def words(data: bytes) -> frozenset[bytes]:
    return data.words if isinstance(data, Source) else frozenset(_IDENTIFIER.findall(data))


# Prefilter class -> (the prefix all its triggers share, its triggers), as bytes: worked
# out once, asked for every file.
_TRIGGER_BYTES: dict[type, tuple[bytes, tuple[bytes, ...]]] = {}


class Prefilter:
    """A rule's prefilter; `rules/prefilters/rlNNN.py` defines one per rule, and the
    rule holds it (`prefilter = ...`)."""

    code: ClassVar[str]
    # A file that contains none of these substrings is never parsed for this rule.
    triggers: ClassVar[tuple[str, ...]] = ()

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
    def scanned(cls, data: bytes) -> object:
        """What `scan` found in this file; None when the file has no `ast` (or none of
        `triggers`, so it was not scanned)."""
        summary = getattr(data, "summary", None)
        return summary.scans.get(cls.code) if summary is not None else None

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


def rules_triggered(data: bytes, rules: Sequence[type[Prefilter]], settings: "Settings",
                    index: "ProjectIndex", path: str = "") -> list[type[Prefilter]]:
    """The prefilters that let the file through."""
    summary = index.files.get(os.path.abspath(path)) if path else None
    source = Source.of(data, path, summary)
    failed = summary.scans if summary is not None else {}
    return [r for r in rules
            if failed.get(r.code) == SCAN_FAILED or r.might_match(source, settings, index)]
