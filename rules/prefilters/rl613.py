"""RL613's prefilter: a release method next to code that frees a part in place (the rule in
`rules/rl613_part_freed_elsewhere.py`)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter
from retainlint.project.release_parts_scan import frees_a_part_elsewhere


class PartFreedElsewherePrefilter(Prefilter):
    code = "RL613"
    triggers = ("def ",)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        return frees_a_part_elsewhere(data, settings)
