"""RL901's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl901_per_call_value_kept_on_self.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter


class PerCallValueKeptOnSelfPrefilter(Prefilter):
    code = "RL901"

    # A file without one of these is never parsed for the rule.
    triggers = ("self._",)
