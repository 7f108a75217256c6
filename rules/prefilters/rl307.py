"""RL307's prefilter: files whose retention facts hold a container an instance keeps that
a method adds to (see `rules/rl307_instance_container_grows.py`)."""

from __future__ import annotations

from typing import Any

from retainlint.project.retention_facts import GROWTH, GROWTH_KIND
from retainlint.project.retention_prefilter import RetentionPrefilter


class InstanceContainerGrowsPrefilter(RetentionPrefilter):
    code = "RL307"

    # Every growth the facts record is one of these.
    triggers = ("append", "add", "extend", "insert", "setdefault", "]", "update")

    @classmethod
    def candidates(cls, facts: tuple[Any, ...]) -> bool:
        return any(g[GROWTH_KIND] == "instance" for g in facts[GROWTH])
