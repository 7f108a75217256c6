"""RL201's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl201_finalize_pins_argument.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast

from retainlint.nodes import FileNodes
from retainlint.prefilter import Prefilter
from retainlint.prefilters.rl101 import Heavy, Values, file_imports


def finalize_calls(nodes: FileNodes) -> list[tuple[ast.Call, list[ast.AST], list[ast.AST]]]:
    """(call, positional arguments, keyword values) of the file's `weakref.finalize(...)`
    calls with an owner and a callback, however `weakref` or `finalize` is imported (as
    `ctx.qualname` resolves them). For the scans of RL201 and RL202: kept on `nodes`."""
    return nodes.shared("finalize calls", _finalize_calls)


def _finalize_calls(nodes) -> list:
    found = []
    imports = file_imports(nodes)
    # A relative import may still name the top-level `weakref` (`from . import weakref`
    # in a top-level module): let it count.
    modules = {k for k, v in imports.items()
               if v == "weakref" or v.startswith(".") and v.endswith(".weakref")}
    functions = {k for k, v in imports.items()
                 if v == "weakref.finalize" or v.startswith(".") and v.endswith(".weakref.finalize")}
    if "weakref" not in imports:
        modules.add("weakref")  # `weakref.finalize` resolves as written
    for call in nodes.of(ast.Call):
        func = call.func
        if type(func) is ast.Name:
            if func.id not in functions:
                continue
        elif not (type(func) is ast.Attribute and func.attr == "finalize"
                  and type(func.value) is ast.Name and func.value.id in modules):
            continue
        positional = [a for a in call.args if type(a) is not ast.Starred]
        if len(positional) >= 2:
            found.append((call, positional, [k.value for k in call.keywords if k.arg is not None]))
    return found


class FinalizePinsArgumentPrefilter(Prefilter):
    code = "RL201"

    triggers = ("finalize",)

    scans = True

    @classmethod
    def scan(cls, nodes: FileNodes):
        """(what may make an extra argument of a `weakref.finalize` call heavy (`Values`),
        local class -> bases), or None without such an argument."""
        calls = finalize_calls(nodes)
        if not any(len(positional) > 2 or keywords for _, positional, keywords in calls):
            return None
        values = Values(nodes)
        evidence: set[str] = set()
        for call, positional, keywords in calls:
            fn, klass = values.scope(call)
            for arg in (*positional[2:], *keywords):
                evidence |= values.evidence(arg, fn, klass)
        return (frozenset(evidence), values.bases(evidence)) if evidence else None

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """An extra argument of a `weakref.finalize` call that may be heavy."""
        summary = getattr(data, "summary", None)
        if summary is None:
            return b"finalize" in data
        found = summary.scans.get(cls.code)
        return found is not None and Heavy(summary, settings, index, found[1]).any(found[0])
