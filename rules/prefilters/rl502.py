"""RL502's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl502_hook_handles_never_removed/` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast

from retainlint.project.hook_names import ast_registrations
from retainlint.project.nodes import FileNodes
from retainlint.project.prefilter import Prefilter


class HookHandlesNeverRemovedPrefilter(Prefilter):
    code = "RL502"

    triggers = ("register_",)

    scans = True

    @classmethod
    def scan(cls, nodes: FileNodes) -> bool:
        """A registration on something other than `self`, in a class, whose handle is not
        thrown away (it may be stored on `self`), or outside a class in a file that calls
        `.remove()`; or a discarded `register_hook` /
        `register_prehook` in a file that reaches gradient accumulators."""
        statements = None
        for call in ast_registrations(nodes):
            func = call.func
            if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self":
                continue  # a hook on the instance itself: RL701's business
            if statements is None:
                statements = {id(s.value) for s in nodes.of(ast.Expr)}
            if id(call) in statements:
                if (type(func) is ast.Attribute and func.attr in ("register_hook", "register_prehook")
                        and (b"get_gradient_edge" in nodes.source
                             or b"next_functions" in nodes.source and b"grad_fn" in nodes.source)):
                    return True
            elif any(isinstance(o, ast.ClassDef) for o in nodes.owners(call)):
                return True
            elif b".remove()" in nodes.source:
                return True  # a handle kept in a local of a function and removed there
        return False

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        summary = getattr(data, "summary", None)
        if summary is not None:
            return bool(summary.scans.get(cls.code))
        return b"register_" in data and b"hook(" in data
