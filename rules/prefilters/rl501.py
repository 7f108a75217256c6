"""RL501's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl501_discarded_hook_handle.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast

from retainlint.project.hook_names import GLOBAL_HOOKS, PER_OBJECT_HOOKS
from retainlint.project.nodes import FileNodes
from retainlint.project.prefilter import Prefilter
from retainlint.project.ast_facts import file_imports, qualify


class DiscardedHookHandlePrefilter(Prefilter):
    code = "RL501"

    triggers = tuple(sorted(GLOBAL_HOOKS | PER_OBJECT_HOOKS))

    scans = True

    @classmethod
    def scan(cls, nodes: FileNodes) -> tuple[bool, bool]:
        """(a registration with a global registry of torch (however imported), a
        per-object one: each a call that is a statement of its own)."""
        imports = file_imports(nodes)
        global_ = per_object = False
        for statement in nodes.of(ast.Expr):
            call = statement.value
            if type(call) is not ast.Call:
                continue
            func = call.func
            if type(func) is ast.Attribute and func.attr in PER_OBJECT_HOOKS:
                per_object = True
            if not global_:
                q = qualify(imports, func)
                global_ = bool(q and q.startswith("torch.") and q.rpartition(".")[2] in GLOBAL_HOOKS)
        return global_, per_object

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        summary = getattr(data, "summary", None)
        found = summary.scans.get(cls.code) if summary is not None else None
        if found is not None:
            return found[0] or (settings.per_object_hooks and found[1])
        if summary is not None:
            return False  # none of the hook names is in the file
        hooks = GLOBAL_HOOKS | PER_OBJECT_HOOKS if settings.per_object_hooks else GLOBAL_HOOKS
        return any(h.encode() in data for h in hooks)
