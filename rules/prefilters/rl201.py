"""RL201's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl201_finalize_pins_argument.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations


from retainlint.project.nodes import FileNodes
from retainlint.project.prefilter import Prefilter
from retainlint.project.ast_facts import Heavy, Values, finalize_calls


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
