"""RL801's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl801_logger_registry_growth.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast
import re

from retainlint.project.prefilter import Prefilter


_STABLE_GETLOGGER = re.compile(
    rb"getLogger\(\s*(?:__name__|\"[^\"\n]*\"|'[^'\n]*')?\s*\)"
)


class LoggerRegistryGrowthPrefilter(Prefilter):
    code = "RL801"

    triggers = ("getLogger", "addHandler", "getChild")

    scans = True

    @classmethod
    def scan(cls, nodes) -> bool:
        """Inside a function: `x.addHandler(...)`, or a `getLogger(...)` / `x.getChild(...)`
        whose name is not a string literal or `__name__` (the only names that cannot vary);
        anywhere: a `MemoryHandler(...)`."""
        getters = {"getLogger"} | {a.asname for node in nodes.of(ast.ImportFrom) for a in node.names
                                   if a.name == "getLogger" and a.asname}
        for node in nodes.of(ast.Call):
            func = node.func
            name = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else None
            if name == "MemoryHandler":  # a target-less buffer, anywhere
                return True
            if name == "addHandler" and type(func) is ast.Attribute:
                if not (node.args or node.keywords):
                    continue
            elif name in getters or name == "getChild" and type(func) is ast.Attribute:
                arg = next((a for a in node.args if type(a) is not ast.Starred), None) or next(
                    (k.value for k in node.keywords if k.arg == "name"), None)
                if arg is None or type(arg) is ast.Constant or type(arg) is ast.Name and arg.id == "__name__":
                    continue
            else:
                continue
            if any(type(o) in (ast.FunctionDef, ast.AsyncFunctionDef) for o in nodes.owners(node)):
                return True
        return False

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """The scan's answer; for a file `ast` cannot parse: `addHandler` anywhere, or a
        `getLogger(...)` call whose argument is not a plain string literal or `__name__`
        (or an aliased `getLogger`)."""
        summary = getattr(data, "summary", None)
        if summary is not None:
            return bool(summary.scans.get(cls.code))
        if b"addHandler" in data or b".getChild(" in data or b"MemoryHandler(" in data:
            return True
        calls = data.count(b"getLogger(")
        if calls == 0:
            return b"getLogger as" in data
        return calls > len(_STABLE_GETLOGGER.findall(data)) or b"getLogger as" in data
