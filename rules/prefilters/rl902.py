"""RL902's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl902_container_backref_kept.py` (from the file's bytes and its `ast`; no libcst
here)."""

from __future__ import annotations

import ast
from typing import Optional

from retainlint.project.nodes import FileNodes
from retainlint.project.prefilter import Prefilter

_SETS = ("setattr", "object.__setattr__")


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _class_of(nodes: FileNodes, node: ast.AST) -> Optional[ast.ClassDef]:
    """The class whose method (or a function nested in one) `node` is in."""
    return next((o for o in nodes.owners(node) if isinstance(o, ast.ClassDef)), None)


def _kept_arguments(cls: ast.ClassDef) -> set[str]:
    """Attributes of `self` the class's `__init__` sets from one of its arguments (`self._parent
    = parent`, `object.__setattr__(self, "_parent", kwargs.pop("_parent", None))`)."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is None:
        return set()
    args = init.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self"}
    star = args.kwarg.arg if args.kwarg is not None else None

    def handed_in(value: ast.AST) -> bool:
        if isinstance(value, ast.Name):
            return value.id in params
        return star is not None and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and isinstance(value.func.value, ast.Name) and value.func.value.id == star \
            and value.func.attr in ("pop", "get")

    found: set[str] = set()
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and handed_in(node.value):
            found.update(t.attr for t in node.targets if isinstance(t, ast.Attribute) and _is_self(t.value))
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in _SETS and len(node.args) == 3 \
                and _is_self(node.args[0]) and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and handed_in(node.args[2]):
            found.add(node.args[1].value)
    return found


def _read(node: ast.AST) -> Optional[str]:
    """`self.a`, `getattr(self, "a")`, `object.__getattribute__(self, "a")` -> "a"."""
    if isinstance(node, ast.Attribute) and _is_self(node.value):
        return node.attr
    if isinstance(node, ast.Call) and len(node.args) >= 2 and _is_self(node.args[0]) \
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) \
            and ast.unparse(node.func) in ("getattr", "object.__getattribute__"):
        return node.args[1].value
    return None


def _parent_read(nodes: FileNodes, attach: ast.AST, parent: ast.AST, kept: set[str]) -> bool:
    """Is `parent` (what `self` is stored into) one of `kept`, read directly or through a
    local its function assigned it to?"""
    if _read(parent) in kept:
        return True
    if not isinstance(parent, ast.Name):
        return False
    owners = list(nodes.owners(attach))  # (a name is a leaf: the table has no owner for it)
    cls = next((i for i, o in enumerate(owners) if isinstance(o, ast.ClassDef)), len(owners))
    fn = owners[cls - 1] if cls > 0 else None  # the method (a nested function's local may be its)
    return fn is not None and any(
        isinstance(a, ast.Assign) and _read(a.value) in kept
        and any(isinstance(t, ast.Name) and t.id == parent.id for t in a.targets)
        for a in ast.walk(fn))


class ContainerBackrefKeptPrefilter(Prefilter):
    code = "RL902"

    # The attach the rule looks for stores `self` into the parent: `parent[key] = self`,
    # `parent.name = self`, `setattr(parent, name, self)`.
    triggers = ("= self\n", "= self\r", "= self ", ", self)")

    scans = True

    @classmethod
    def scan(cls, nodes: FileNodes) -> bool:
        """Does a method store `self` into an object its class's `__init__` was handed and
        kept (`parent[key] = self`, `self._parent.child = self`, `setattr(parent, name,
        self)` with `parent = self._parent`)?"""
        attaches: list[tuple[ast.AST, ast.AST]] = []  # (the statement, the parent)
        for assign in nodes.of(ast.Assign):
            if _is_self(assign.value):  # type: ignore[attr-defined]
                attaches += [(assign, t.value) for t in assign.targets  # type: ignore[attr-defined]
                             if isinstance(t, (ast.Subscript, ast.Attribute))]
        for call in nodes.of(ast.Call):
            func = call.func  # type: ignore[attr-defined]
            args = call.args  # type: ignore[attr-defined]
            if isinstance(func, ast.Name) and func.id == "setattr" and len(args) == 3 and _is_self(args[2]):
                attaches.append((call, args[0]))
        kept: dict[int, set[str]] = {}
        for node, parent in attaches:
            owner = _class_of(nodes, node)
            if owner is None:
                continue
            if id(owner) not in kept:
                kept[id(owner)] = _kept_arguments(owner)
            if kept[id(owner)] and _parent_read(nodes, node, parent, kept[id(owner)]):
                return True
        return False

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        found = cls.scanned(data)
        return cls.triggered_by(data) if found is None else bool(found)
