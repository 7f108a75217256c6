"""RL306's prefilter: files whose retention facts hold a module- or class-level container
that something adds to (see `rules/rl306_process_container_grows.py`)."""

from __future__ import annotations

from typing import Any, Optional

from retainlint.project.consequence import grows_per_call
from retainlint.project.retention_facts import GROWTH, Growth, growth_of
from retainlint.project.retention_prefilter import RetentionPrefilter


def process_growth(g: Growth) -> Optional[str]:
    """Why each call or instance adds to a module- or class-level container, or to a
    parameter's default value (RL306's first
    question, asked of the facts alone: most adds are set-up or memos), or None."""
    return grows_per_call(g) if g.kind in ("module", "class", "default") else None


class ProcessContainerGrowsPrefilter(RetentionPrefilter):
    code = "RL306"

    # Every growth the facts record is one of these.
    triggers = ("append", "add", "extend", "insert", "setdefault", "]", "update", "+=")

    @classmethod
    def candidates(cls, facts: tuple[Any, ...]) -> bool:
        return any(process_growth(growth_of(g)) is not None for g in facts[GROWTH])
