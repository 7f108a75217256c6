"""RL606's prefilter: a release method that rebinds an attribute to an empty container another
method hands on (the rule in `rules/rl606_rebound_shared_container.py`)."""

from __future__ import annotations

from retainlint.project.release_scan import ScanPrefilter, rebound_container_in, rebound_shared


class ReboundSharedContainerPrefilter(ScanPrefilter):
    code = "RL606"
    triggers = ("self",)
    part = "rebound_containers"

    @classmethod
    def without_scan(cls, data: bytes, settings) -> bool:
        return rebound_container_in(data, settings)

    @classmethod
    def decide(cls, found, settings) -> bool:
        return rebound_shared(found, settings)
