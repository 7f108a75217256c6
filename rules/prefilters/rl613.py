"""RL613's prefilter: a release method next to code that frees a part in place (the rule in
`rules/rl613_part_freed_elsewhere.py`), read from the file's `ast`; no libcst here."""

from __future__ import annotations

import ast

from retainlint.project.names import CLOSE_WORDS, frees
from retainlint.project.nodes import FileNodes
from retainlint.project.prefilter import Prefilter
from retainlint.project.release_parts_scan import frees_a_part_elsewhere
from retainlint.project.nodes import self_attr

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _frees_a_part(call: ast.Call, finalizer: bool) -> bool:
    """`self.x.close()` (any method; in `__del__` also `free_x(self.x)`, `self.x.release(h)`):
    what `analysis/part_freeing.py` reads as freeing a part, from the `ast`."""
    func = call.func
    word = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if word is None:
        return False
    if not finalizer:
        return not call.args and word in CLOSE_WORDS and self_attr(func.value) is not None  # type: ignore[attr-defined]
    if not frees(word):
        return False
    if isinstance(func, ast.Attribute) and self_attr(func.value) is not None:
        return True
    return any(self_attr(a) is not None for a in call.args)


class PartFreedElsewherePrefilter(Prefilter):
    code = "RL613"
    triggers = ("def ",)

    scans = True

    @classmethod
    def scan(cls, nodes: FileNodes) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
        """For each class with a method that frees a part in place (`__del__` freeing one,
        another method closing one as a whole): its methods' names and those methods'."""
        evidence: dict[int, set[str]] = {}
        classes: dict[int, ast.ClassDef] = {}
        for call in nodes.of(ast.Call):
            fn = nodes.owner(call)
            owner = nodes.owner(fn) if isinstance(fn, _FUNCTIONS) else None
            if not isinstance(owner, ast.ClassDef) or fn.name == "__init__":  # type: ignore[union-attr]
                continue
            if _frees_a_part(call, fn.name == "__del__"):  # type: ignore[union-attr, arg-type]
                evidence.setdefault(id(owner), set()).add(fn.name)  # type: ignore[union-attr]
                classes[id(owner)] = owner
        return tuple((frozenset(f.name for f in classes[k].body if isinstance(f, _FUNCTIONS)), frozenset(found))
                     for k, found in evidence.items())

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        found = cls.scanned(data)
        if found is None:
            return frees_a_part_elsewhere(data, settings)
        releases = {m for m in settings.release_methods if m != "__del__"}
        return any(not releases.isdisjoint(names) and any(e == "__del__" or e not in releases for e in freeing)
                   for names, freeing in found)
