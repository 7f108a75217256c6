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
    def scan(cls, nodes: FileNodes) -> tuple[bool, bool, bool]:
        """(a registration with a global registry of torch (however imported), a
        per-object one, a per-object one whose callable may keep `self` (it uses `self`,
        or is a name: a nested function): each a call that is a statement of its own)."""
        imports = file_imports(nodes)
        global_ = per_object = keeps_self = False
        for statement in nodes.of(ast.Expr):
            call = statement.value
            if type(call) is not ast.Call:
                continue
            func = call.func
            if type(func) is ast.Attribute and func.attr in PER_OBJECT_HOOKS:
                per_object = True
                keeps_self = keeps_self or any(
                    type(a) is ast.Name or any(type(n) is ast.Name and n.id == "self" for n in ast.walk(a))
                    for a in (*call.args, *(k.value for k in call.keywords)))
            if not global_:
                q = qualify(imports, func)
                global_ = bool(q and q.startswith("torch.") and q.rpartition(".")[2] in GLOBAL_HOOKS)
        return global_, per_object, keeps_self

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        summary = getattr(data, "summary", None)
        found = cls.scanned(data)
        if found is not None:
            # a hook that keeps `self` may sit on an object the instance was handed (on by default)
            return found[0] or found[2] or (settings.per_object_hooks and found[1])
        if summary is not None:
            return False  # none of the hook names is in the file
        return any(h.encode() in data for h in GLOBAL_HOOKS | PER_OBJECT_HOOKS)
