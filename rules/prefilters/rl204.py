"""RL204's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl204_finalizer_registered_per_call.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

import ast
import re

from retainlint.project.ast_facts import file_imports, qualify
from retainlint.project.nodes import FileNodes
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

    scans = True

    @classmethod
    def scan(cls, nodes: FileNodes) -> bool:
        """A registration (however imported) in the default argument of `.setdefault`,
        `.get` or `.pop`, or an exit or at-fork registration in an `__init__`."""
        imports = file_imports(nodes)
        for call in nodes.of(ast.Call):
            func = call.func  # type: ignore[attr-defined]
            if isinstance(func, ast.Attribute) and func.attr in EAGER_DEFAULTS:
                defaults = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "default")]  # type: ignore[attr-defined]
                if any(isinstance(n, ast.Call) and qualify(imports, n.func) in REGISTRATIONS
                       for d in defaults for n in ast.walk(d)):
                    return True
            elif qualify(imports, func) in PER_INSTANCE:
                where = nodes.method_of(call)
                if where is not None and where[1].name == "__init__":  # type: ignore[attr-defined]
                    return True
        return False

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """By the scan; without an `ast`: a registration named, and a method taking a default
        called, or an exit or at-fork registration in a file with an `__init__`."""
        if not cls.triggered_by(data):
            return False
        found = cls.scanned(data)
        if found is not None:
            return bool(found)
        if _EAGER.search(data) is not None:
            return True
        return b"__init__" in data and (b"atexit" in data or b"register_at_fork" in data)
