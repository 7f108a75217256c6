"""RL703's prefilter: files whose retention facts hold an object keeping a reference to
itself (see `rules/rl703_self_reference_cycle.py`)."""

from __future__ import annotations

from retainlint.project.retention_prefilter import RetentionPrefilter
from retainlint.project.retention import ModuleFacts


class SelfReferenceCyclePrefilter(RetentionPrefilter):
    code = "RL703"

    triggers = ("self",)

    @classmethod
    def candidates(cls, facts: ModuleFacts) -> bool:
        return bool(facts.self_references)
