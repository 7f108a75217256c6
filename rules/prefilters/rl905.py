"""RL905's prefilter: a file that calls `cycle` and names a loader or a dataset (the rule in
`rules/rl905_cycle_keeps_every_item.py`)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter, words

# Every stream the rule knows is named so (`DataLoader`, `train_loader`, `eval_dataset`).
_STREAM_PARTS = (b"loader", b"Loader", b"dataset", b"Dataset")


class CycleKeepsEveryItemPrefilter(Prefilter):
    code = "RL905"
    triggers = ("cycle",)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        return b"cycle" in words(data) and any(part in data for part in _STREAM_PARTS)
