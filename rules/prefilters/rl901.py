"""RL901's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl901_per_call_value_kept_on_self.py` (from the file's bytes and its `ast`; no
libcst here)."""

from __future__ import annotations

import ast

from retainlint.project.nodes import FileNodes
from retainlint.project.prefilter import Prefilter

# Calls that take an item out of a container: the call now owns it.
TAKERS = frozenset({"pop", "popleft"})


def _private_self_attribute(target: ast.AST) -> bool:
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
        and target.value.id == "self" and target.attr.startswith("_") and not target.attr.startswith("__")


def _annotated_parameters(fn: ast.AST) -> set[str]:
    args = fn.args  # type: ignore[attr-defined]
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.annotation is not None}


class PerCallValueKeptOnSelfPrefilter(Prefilter):
    code = "RL901"

    # A file without one of these is never parsed for the rule.
    triggers = ("self._",)

    scans = True

    @classmethod
    def scan(cls, nodes: FileNodes) -> bool:
        """Does a method other than `__init__` store, on a private attribute of `self`, an
        item it takes out of a container (`.pop(0)`, `.popleft()`) or an annotated
        parameter (the rule asks whether the annotation is heavy)?"""
        for assign in nodes.of(ast.Assign):
            if not any(_private_self_attribute(t) for t in assign.targets):  # type: ignore[attr-defined]
                continue
            where = nodes.method_of(assign)
            if where is None or where[1].name == "__init__":  # type: ignore[attr-defined]
                continue
            value = assign.value  # type: ignore[attr-defined]
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in TAKERS:
                return True
            if isinstance(value, ast.Name) and value.id in _annotated_parameters(where[1]):
                return True
        return False

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        found = cls.scanned(data)
        return cls.triggered_by(data) if found is None else bool(found)
