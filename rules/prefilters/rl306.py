"""RL306's prefilter: files whose retention facts hold a module- or class-level container
that something adds to (see `rules/rl306_process_container_grows.py`)."""

from __future__ import annotations

from typing import Any

from retainlint.project.retention_facts import GROWTH, GROWTH_KIND
from retainlint.project.retention_prefilter import RetentionPrefilter


class ProcessContainerGrowsPrefilter(RetentionPrefilter):
    code = "RL306"

    # Every growth the facts record is one of these.
    triggers = ("append", "add", "extend", "insert", "setdefault", "]", "update")

    @classmethod
    def candidates(cls, facts: tuple[Any, ...]) -> bool:
        return any(g[GROWTH_KIND] in ("module", "class") for g in facts[GROWTH])
