"""RL616's prefilter: a class that may inherit a release which only marks it closed (the rule
in `rules/rl616_release_only_marks_closed/`)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter
from retainlint.project.release_parts_scan import inherits_flag_release


class ReleaseOnlyMarksClosedPrefilter(Prefilter):
    code = "RL616"
    triggers = ("def ",)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        return inherits_flag_release(data, settings, index)
