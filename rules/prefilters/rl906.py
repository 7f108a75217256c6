"""RL906's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl906_graph_kept_across_steps.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter


class GraphKeptAcrossStepsPrefilter(Prefilter):
    code = "RL906"

    # A file without one of these is never parsed for the rule.
    triggers = (".backward(",)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """A training loop also steps an optimizer (or a scheduler, a scaler)."""
        return b".step(" in data
