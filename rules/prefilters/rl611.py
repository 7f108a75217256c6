"""RL611's prefilter: a class that may keep an exception a method was handed (the rule in
`rules/rl611_exception_kept_after_release/`)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter
from retainlint.project.release_parts_scan import stores_exception


class ExceptionKeptAfterReleasePrefilter(Prefilter):
    code = "RL611"
    triggers = ("def ",)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        return stores_exception(data, settings, index)
