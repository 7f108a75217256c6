"""RL306's prefilter: files whose retention facts hold a module- or class-level container
that something adds to (see `rules/rl306_process_container_grows.py`)."""

from __future__ import annotations

from typing import Any

from retainlint.project.consequence import grows_per_call
from retainlint.project.retention_facts import GROWTH, growth_of
from retainlint.project.retention_prefilter import RetentionPrefilter


class ProcessContainerGrowsPrefilter(RetentionPrefilter):
    code = "RL306"

    # Every growth the facts record is one of these.
    triggers = ("append", "add", "extend", "insert", "setdefault", "]", "update")

    @classmethod
    def candidates(cls, facts: tuple[Any, ...]) -> bool:
        # the check's first questions, asked of the facts alone: most adds are set-up or memos
        return any(g.kind in ("module", "class") and grows_per_call(g) is not None
                   for g in map(growth_of, facts[GROWTH]))
