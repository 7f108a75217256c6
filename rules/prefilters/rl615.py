"""RL615's prefilter: a part made to acquire a resource of its own (`self.model.load()`) (the
rule in `rules/rl615_acquired_never_given_back/`)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter
from retainlint.project.release_parts_scan import acquires_in_place


class AcquiredNeverGivenBackPrefilter(Prefilter):
    code = "RL615"
    triggers = ("self.",)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        return acquires_in_place(data)
