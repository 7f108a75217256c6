"""RL204's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl204_finalizer_registered_per_call.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

import re

from retainlint.project.prefilter import Prefilter

# registrations in a process-wide registry that take no key: calling one twice registers twice
REGISTRATIONS = frozenset({"weakref.finalize", "atexit.register"})

# process-wide lists a callback is appended to, with no key: registered once per call
PER_INSTANCE = frozenset({"atexit.register", "os.register_at_fork"})

# methods whose second argument is a default, evaluated before the call whatever the key holds
EAGER_DEFAULTS = frozenset({"setdefault", "get", "pop"})

_EAGER = re.compile(rb"\.(?:setdefault|get|pop)\(")


class FinalizerRegisteredPerCallPrefilter(Prefilter):
    code = "RL204"

    triggers = ("finalize", "atexit", "register_at_fork")

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """A registration named, and a method taking a default called; or an exit or
        at-fork registration in a file with an `__init__`."""
        if not cls.triggered_by(data):
            return False
        if _EAGER.search(data) is not None:
            return True
        return b"__init__" in data and (b"atexit" in data or b"register_at_fork" in data)
