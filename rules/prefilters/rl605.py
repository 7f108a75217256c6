"""RL605's prefilter: a `WeakMethod` or `weakref.ref` near a finalizer or an exit handler (the
rule in `rules/rl605_weak_cleanup_callback/`)."""

from __future__ import annotations

from retainlint.project.release_scan import ScanPrefilter, weak_callback_in


class WeakCleanupCallbackPrefilter(ScanPrefilter):
    code = "RL605"
    triggers = ("weakref",)
    part = "weak_callbacks"

    @classmethod
    def without_scan(cls, data: bytes, settings) -> bool:
        return weak_callback_in(data)
