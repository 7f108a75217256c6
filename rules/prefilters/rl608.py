"""RL608's prefilter: a cleanup function that reclaims memory (`empty_cache()`, ...) (the rule
in `rules/rl608_cache_emptied_before_unload.py`)."""

from __future__ import annotations

from retainlint.project.release_scan import RECLAIM_LAST, ScanPrefilter, reclaim_in


class CacheEmptiedBeforeUnloadPrefilter(ScanPrefilter):
    code = "RL608"
    triggers = tuple(sorted(RECLAIM_LAST))
    part = "cleanup_reclaims"

    @classmethod
    def without_scan(cls, data: bytes, settings) -> bool:
        return reclaim_in(data)
