"""RL902's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl902_container_backref_kept.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter


class ContainerBackrefKeptPrefilter(Prefilter):
    code = "RL902"

    # The attach the rule looks for stores `self` into the parent: `parent[key] = self`,
    # `parent.name = self`, `setattr(parent, name, self)`.
    triggers = ("= self\n", "= self\r", "= self ", ", self)")
