"""The retention checks' prefilter: a file goes to libcst for a check only when its
retention facts (kept by the project index) hold a candidate for it. No libcst here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retainlint.project.prefilter import Prefilter, Source

if TYPE_CHECKING:
    from retainlint.core.config import Settings
    from retainlint.project.index import ProjectIndex


class RetentionPrefilter(Prefilter):
    """Lets a file through when its retention facts hold something for this check."""

    @classmethod
    def candidates(cls, facts: tuple[Any, ...]) -> bool:
        """`facts`: as the index stores them (`ModuleFacts.plain`, positions in
        `retention`): asked of every file, so not decoded."""
        raise NotImplementedError

    @classmethod
    def might_match(cls, data: bytes, settings: "Settings", index: "ProjectIndex") -> bool:
        summary = data.summary if isinstance(data, Source) else None
        if summary is None or not summary.retention:
            return False
        return cls.candidates(summary.retention)
