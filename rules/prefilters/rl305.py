"""RL305's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl305_id_keyed_registry.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast
import re

from retainlint.project.container_scan import container_writes, definitions
from retainlint.project.nodes import dotted as ast_dotted
from retainlint.project.prefilter import Prefilter


# last components of `_DICT_CTORS`, for the `ast` scan
_DICT_NAMES = frozenset({"dict", "defaultdict", "OrderedDict", "Dict", "DefaultDict"})

# `NAME[: ann] = {` / dict / defaultdict / OrderedDict, at column 0 or one indentation level
_DEFINITION = re.compile(
    rb"^(?:    |  |\t)?[A-Za-z_]\w*[ \t]*(?::[^=\n]+)?=[ \t]*[(]?[ \t]*"
    rb"(?:\{|dict\b|defaultdict\b|OrderedDict\b|collections\.|typing\.|Dict\b)",
    re.MULTILINE,
)


def _maybe_dict(value: ast.AST, aliases: set) -> bool:
    """Could `value` make a dict (`_is_dict`, read coarsely from the `ast`)?"""
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return True
    if not isinstance(value, ast.Call):
        return False
    func = value.func.value if isinstance(value.func, ast.Subscript) else value.func
    dotted = ast_dotted(func)
    return dotted is not None and (dotted.rpartition(".")[2] in _DICT_NAMES or dotted in aliases)


def _maybe_own_key(key: ast.AST, value: ast.AST) -> bool:
    """`reg[obj.uid] = obj`, `reg[key] = obj` (a key that may be unique to the object:
    `_unique_key_owner`, coarsely)."""
    if not isinstance(value, ast.Name):
        return False
    if isinstance(key, ast.Attribute):
        return isinstance(key.value, ast.Name) and key.value.id == value.id == "self"
    return isinstance(key, ast.Name)


def _maybe_id_key(key: ast.AST, aliases: set) -> bool:
    """`id(x)`, or a tuple holding one (`_id_argument`, coarsely)."""
    if isinstance(key, ast.Tuple):
        return any(_maybe_id_key(e, aliases) for e in key.elts)
    if not isinstance(key, ast.Call) or len(key.args) + len(key.keywords) != 1:
        return False
    dotted = ast_dotted(key.func)
    return dotted is not None and (dotted.rpartition(".")[2] == "id" or dotted in aliases)


class IdKeyedRegistryPrefilter(Prefilter):
    code = "RL305"

    # `reg[id(obj)] = obj`; `reg[self.uid] = self`, `reg[key] = self` (a per-object key)
    triggers = ("[id(", "setdefault(id(", "[(id(", "] = self")

    scans = True

    @classmethod
    def scan(cls, nodes) -> bool:
        """Is a dict defined outside functions (and bound once there) written to with a
        value and an `id(...)` key, alone or in a tuple, or with `self` under a key that
        may be unique to it?"""
        aliases = {a.asname for node in nodes.of(ast.ImportFrom) for a in node.names
                   if a.asname and (a.name in _DICT_NAMES or a.name == "id")}
        bindings: dict[tuple, int] = {}
        dicts = set()
        for scope, node in definitions(nodes.tree.body, None):
            if isinstance(node, ast.Assign):
                targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node.target, ast.Name) and node.value is not None:
                targets = [node.target.id]
            else:
                continue
            for t in targets:
                bindings[(scope, t)] = bindings.get((scope, t), 0) + 1
            if targets and _maybe_dict(node.value, aliases):
                dicts.add((scope, targets[0]))
        names = {name for scope, name in dicts if bindings[(scope, name)] == 1}
        return bool(names) and any(
            value is not None and (_maybe_id_key(key, aliases) or _maybe_own_key(key, value))
            for _, _, key, value in container_writes(nodes, names))

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """An `id(...)` key or `self` stored, and a dict defined at module level or in a
        class body."""
        summary = getattr(data, "summary", None)
        if summary is not None:
            return bool(summary.scans.get(cls.code))
        if not cls.triggered_by(data):
            return False
        return _DEFINITION.search(data) is not None
