"""RL904's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl904_context_var_per_instance.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter


class ContextVarPerInstancePrefilter(Prefilter):
    code = "RL904"

    # A file without one of these is never parsed for the rule.
    triggers = ("ContextVar",)
