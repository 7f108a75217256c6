"""RL910's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl910_removed_only_in_del.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter


class RemovedOnlyInDelPrefilter(Prefilter):
    code = "RL910"

    # A class that takes its handlers off in a finalizer.
    triggers = ("def __del__",)
