"""RL609's prefilter: a function that lets go of `self.x`, reclaims memory and returns
something (the rule in `rules/rl609_reload_frees_handed_out.py`)."""

from __future__ import annotations

from retainlint.project.release_scan import RECLAIM_LAST, ScanPrefilter, reclaim_in


class ReloadFreesHandedOutPrefilter(ScanPrefilter):
    code = "RL609"
    triggers = tuple(sorted(RECLAIM_LAST))
    part = "reload_reclaims"

    @classmethod
    def without_scan(cls, data: bytes, settings) -> bool:
        return reclaim_in(data)
