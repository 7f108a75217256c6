"""RL612's prefilter: a heavy class without a release method that a releasing owner holds (the
rule in `rules/rl612_part_without_release.py`)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter
from retainlint.project.release_parts_scan import unreleasable_part


class PartWithoutReleasePrefilter(Prefilter):
    code = "RL612"
    triggers = ("def ",)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        return unreleasable_part(data, settings, index)
