"""RL604's prefilter: a function meant to free that deletes one of its parameters (the rule in
`rules/rl604_deleted_parameter.py`)."""

from __future__ import annotations

from retainlint.project.release_scan import ScanPrefilter, deleted_parameter_in


class DeletedParameterPrefilter(ScanPrefilter):
    code = "RL604"
    triggers = ("del",)
    part = "deleted_parameters"

    @classmethod
    def without_scan(cls, data: bytes, settings) -> bool:
        return deleted_parameter_in(data, settings)

    @classmethod
    def decide(cls, found, settings) -> bool:
        return any(surely or function in settings.release_methods for function, surely in found)
