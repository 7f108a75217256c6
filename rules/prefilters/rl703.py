"""RL703's prefilter: files whose retention facts hold an object keeping a reference to
itself (see `rules/rl703_self_reference_cycle.py`)."""

from __future__ import annotations

from typing import Any

from retainlint.project.retention_facts import FRAMES, SELF_REFERENCES
from retainlint.project.retention_prefilter import RetentionPrefilter


class SelfReferenceCyclePrefilter(RetentionPrefilter):
    code = "RL703"

    # A self-reference names `self`; a frame keeping its traceback, `except` or `exc_info`.
    triggers = ("self", "except", "exc_info")

    @classmethod
    def candidates(cls, facts: tuple[Any, ...]) -> bool:
        return bool(facts[SELF_REFERENCES]) or bool(facts[FRAMES])
