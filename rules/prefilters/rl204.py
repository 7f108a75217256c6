"""RL204's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl204_finalizer_registered_per_call.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

import re

from retainlint.project.prefilter import Prefilter

# registrations in a process-wide registry that take no key: calling one twice registers twice
REGISTRATIONS = frozenset({"weakref.finalize", "atexit.register"})

# methods whose second argument is a default, evaluated before the call whatever the key holds
EAGER_DEFAULTS = frozenset({"setdefault", "get", "pop"})

_EAGER = re.compile(rb"\.(?:setdefault|get|pop)\(")


class FinalizerRegisteredPerCallPrefilter(Prefilter):
    code = "RL204"

    triggers = ("finalize", "atexit")

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """A registration named, and a method taking a default called."""
        return cls.triggered_by(data) and _EAGER.search(data) is not None
