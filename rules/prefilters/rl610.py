"""RL610's prefilter: a class with a release method and an attribute assigned something that
may be heavy, or a class releasing with a library base's `close()` in a file that opens a
resource (the rule in `rules/rl610_heavy_attribute_never_dropped/`)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter
from retainlint.project.release_parts_scan import inherits_library_close, keeps_heavy_attribute, scan_of


class HeavyAttributeNeverDroppedPrefilter(Prefilter):
    code = "RL610"
    triggers = ("def ",)

    scans = True

    @classmethod
    def scan(cls, nodes) -> object:
        return scan_of(nodes)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        return keeps_heavy_attribute(data, settings, index) or inherits_library_close(data)
