"""What a rule's prefilter sees of a file: its bytes (substring tests work as on `bytes`),
plus what the cheapest tests need beyond substrings, computed at most once per file."""

from __future__ import annotations

import re
from functools import cached_property
from typing import Optional

from retainlint.index import FileSummary

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
