"""RL607's prefilter: a function meant to free that deletes the loop variable over one of its
parameters (the rule in `rules/rl607_deleted_loop_variable.py`)."""

from __future__ import annotations

from retainlint.project.release_scan import ScanPrefilter, deleted_parameter_in


class DeletedLoopVariablePrefilter(ScanPrefilter):
    code = "RL607"
    triggers = ("del",)
    part = "loop_deletions"

    @classmethod
    def without_scan(cls, data: bytes, settings) -> bool:
        return deleted_parameter_in(data, settings)
