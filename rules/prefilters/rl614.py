"""RL614's prefilter: cleanup registered on an `ExitStack` (the rule in
`rules/rl614_exit_stack_never_closed.py`)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter
from retainlint.project.release_parts_scan import registers_on_exit_stack


class ExitStackNeverClosedPrefilter(Prefilter):
    code = "RL614"
    triggers = ("ExitStack",)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        return registers_on_exit_stack(data)
