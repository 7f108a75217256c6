"""RL307's prefilter: files whose retention facts hold a container an instance keeps that
a method adds to (see `rules/rl307_instance_container_grows.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from retainlint.project.consequence import grows_per_call, instance_outlives_its_adds
from retainlint.project.retention_facts import GROWTH, Growth, ModuleFacts, growth_of

if TYPE_CHECKING:
    from retainlint.core.config import Settings
    from retainlint.project.index import ProjectIndex
from retainlint.project.retention_prefilter import RetentionPrefilter


def instance_growth(g: Growth) -> Optional[str]:
    """Why each call of a method adds to a container an instance keeps (RL307's first
    question, asked of the facts alone: most adds are set-up or memos), or None."""
    return grows_per_call(g) if g.kind == "instance" and not g.in_init else None


class InstanceContainerGrowsPrefilter(RetentionPrefilter):
    code = "RL307"

    # Every growth the facts record is one of these.
    triggers = ("append", "add", "extend", "insert", "setdefault", "]", "update", "+=")

    @classmethod
    def candidates(cls, facts: tuple[Any, ...]) -> bool:
        return any(instance_growth(growth_of(g)) is not None for g in facts[GROWTH])

    @classmethod
    def might_match(cls, data: bytes, settings: "Settings", index: "ProjectIndex") -> bool:
        """...and of the project: the instance outlives the calls that add to it."""
        if not super().might_match(data, settings, index):
            return False
        plain = data.summary.retention  # type: ignore[attr-defined]
        facts = ModuleFacts.from_plain(plain)
        return any(instance_growth(g) is not None and instance_outlives_its_adds(index, facts, g) is not None
                   for g in facts.growth)
