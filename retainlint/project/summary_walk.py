"""One pass over a file's `ast`, for its summary in the project index: the raw nodes a
summary is made of (calls, `self.x = ...` assignments, nested functions, per summarized
function), the file's imports, and the qualifying of names through them."""

from __future__ import annotations

import ast
import os
from sys import intern
from typing import Iterable, Iterator, Optional

from retainlint.project.module_names import module_name
from retainlint.project.names import absolute_import, standard_module
from retainlint.project.nodes import OWNERS, FileNodes, dotted, module_level

_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_OWNER_KINDS = frozenset(OWNERS)
_IMPORTS = (ast.Import, ast.ImportFrom)


def _innermost_call(value: ast.AST) -> ast.AST:
    """`torch.empty(n).cuda().half()` -> `torch.empty(n)`: the call that made the object."""
    while (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
           and isinstance(value.func.value, ast.Call)):
        value = value.func.value
    return value


# Container methods that store an argument: name -> which positional argument.
_INSERTERS = {"append": 0, "add": 0, "appendleft": 0, "insert": 1, "setdefault": 1}


class _Body:
    """What one summarized function (module-level or a method) contains."""

    def __init__(self, fn: ast.AST) -> None:
        self.fn = fn
        self.calls: list[ast.Call] = []
        self.defs: list[ast.AST] = []  # nested functions
        self.self_assigns: list[tuple[str, ast.AST]] = []  # `self.x = value`


class _FileWalk:
    """One pass over the tree collects the raw nodes; names are qualified afterwards, when
    every import is known. (`ast.walk` per question was four times slower.)"""

    def __init__(self, path: str, tree: ast.Module, source: str, data: bytes = b"") -> None:
        self.path = path
        self.source = source
        self.nodes = FileNodes(tree, data)
        self.module = module_name(path)
        self.is_package = os.path.basename(path).startswith("__init__.")
        self.imports: dict[str, str] = {}
        self.tree = tree
        self.local = {n.name for n in module_level(tree.body) if isinstance(n, (ast.ClassDef, *_FUNCTION_DEFS))}
        self.calls: list[ast.Call] = []  # outside logger classes: for bound_calls
        self.assigns: list[ast.Assign] = []
        self.bodies: dict[int, _Body] = {}  # id(function node) -> its contents
        # module-level imports (those under `if`/`try` too) win over function-local ones
        for node in module_level(tree.body):
            if isinstance(node, _IMPORTS):
                self._import(node)
        self._scan()

    def _import(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imports.setdefault(alias.asname, standard_module(alias.name))
                else:
                    head = alias.name.split(".")[0]
                    self.imports.setdefault(head, head)
            return
        base = standard_module(absolute_import(self.module, self.is_package, node.level, node.module))
        for alias in node.names:
            if alias.name != "*":
                self.imports.setdefault(alias.asname or alias.name,
                                        f"{base}.{alias.name}" if base else alias.name)

    def _scan(self) -> None:
        # (node, the summarized function it is in, inside a logger class, is a method,
        #  the innermost function/class/lambda around it)
        by_type, owner_of = self.nodes.by_type, self.nodes.owner_of
        fields = _CHILD_FIELDS
        top_level = {id(n) for n in module_level(self.tree.body)}  # ids: `in` per def is quadratic
        stack: list[tuple[ast.AST, Optional[_Body], bool, bool, Optional[ast.AST]]] = [
            (n, None, False, False, None) for n in reversed(self.tree.body)]
        while stack:
            node, body, in_logger, is_method, owner = stack.pop()
            kind = type(node)
            by_type[kind].append(node)
            owner_of[id(node)] = owner
            if kind is ast.Call:
                if not in_logger:
                    self.calls.append(node)
                if body is not None:
                    body.calls.append(node)
                    self._self_insert(body, node)
            elif kind is ast.Assign:
                self.assigns.append(node)
                if body is not None and body.fn is not None:
                    for target in node.targets:
                        self._self_assign(body, target, node.value)
            elif kind is ast.AnnAssign:
                if body is not None and node.value is not None:
                    self._self_assign(body, node.target, node.value)
            elif kind in _IMPORTS:
                if body is not None or in_logger or is_method:
                    self._import(node)
            elif kind in _FUNCTION_DEFS:
                if body is None and (id(node) in top_level or is_method):
                    inner = self.bodies[id(node)] = _Body(node)
                    for d in node.decorator_list:
                        stack.append((d, None, in_logger, False, node))
                    stack.append((node.args, None, in_logger, False, node))
                    for statement in reversed(node.body):
                        stack.append((statement, inner, in_logger, False, node))
                    continue
                if body is not None:
                    body.defs.append(node)
            elif kind is ast.ClassDef:
                logger = in_logger or any(
                    self.qualify(b) in ("logging.Logger", "logging.LoggerAdapter") for b in node.bases)
                top = body is None and id(node) in top_level
                for child in reversed(node.body):
                    stack.append((child, body, logger, top, node))
                for child in (*node.bases, *node.keywords, *node.decorator_list):
                    stack.append((child, body, in_logger, False, node))
                continue
            inner_owner = node if kind in _OWNER_KINDS else owner
            for name in fields[kind]:
                value = getattr(node, name, None)
                if type(value) is list:
                    for item in value:
                        if type(item) in _WALKED:
                            stack.append((item, body, in_logger, False, inner_owner))
                elif type(value) in _WALKED:
                    stack.append((value, body, in_logger, False, inner_owner))

    @staticmethod
    def _self_assign(body: _Body, target: ast.AST, value: ast.AST) -> None:
        """`self.x = v`, and `self.x[k] = v`: either way `self` holds `v`."""
        if isinstance(target, ast.Subscript):
            target = target.value
        if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "self"):
            body.self_assigns.append((target.attr, value))

    @staticmethod
    def _self_insert(body: _Body, call: ast.Call) -> None:
        """`self.x.append(v)` and the like: `self` holds `v`."""
        func = call.func
        position = _INSERTERS.get(func.attr) if isinstance(func, ast.Attribute) else None
        if position is not None and len(call.args) > position:
            _FileWalk._self_assign(body, func.value, call.args[position])

    def qualify(self, node: ast.AST) -> Optional[str]:
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if head in self.imports:
            target = self.imports[head]
        elif head in self.local:
            target = f"{self.module}.{head}"
        else:
            return intern(name)
        # Interned: the same few thousand names recur in every file's calls, and one
        # object is pickled once per batch of summaries the index workers send back.
        return intern(f"{target}.{rest}" if rest else target)

    def alternatives(self, ann: Optional[ast.AST]) -> list[str]:
        """`X`, `X | None`, `Optional[X]`, `Union[X, Y]`, `"X"` -> qualified X (and Y)."""
        if ann is None:
            return []
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                return self.alternatives(ast.parse(ann.value, mode="eval").body)
            except SyntaxError:
                return []
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            return self.alternatives(ann.left) + self.alternatives(ann.right)
        if isinstance(ann, ast.Subscript):
            if self.qualify(ann.value) in ("typing.Optional", "typing.Union"):
                items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
                return [q for item in items for q in self.alternatives(item)]
            return []
        q = self.qualify(ann)
        return [q] if q else []

    def attribute_makers(self, methods: Iterable[ast.AST]) -> dict[str, list[str]]:
        """`self.x = f(...)` anywhere in the class's methods -> {"x": [qualified f]}."""
        found: dict[str, list[str]] = {}
        for fn in methods:
            for attr, value in self.bodies[id(fn)].self_assigns:
                value = _innermost_call(value)
                q = self.qualify(value.func) if isinstance(value, ast.Call) else None
                if q and q not in found.get(attr, ()):
                    found.setdefault(attr, []).append(q)
        return found


# Children that can hold nothing the summary needs (no call, assignment, import, def).
_LEAVES = (ast.Name, ast.Constant, ast.expr_context, ast.operator, ast.cmpop, ast.unaryop,
           ast.boolop, ast.alias, ast.Pass, ast.Break, ast.Continue)


def _node_types(base: type) -> Iterator[type]:
    yield base
    for sub in base.__subclasses__():
        yield from _node_types(sub)


# The walk tests exact types (a set lookup, not an isinstance per child): every node
# type except the leaves. Fields holding only names, numbers or leaves are not read.
_WALKED = frozenset(t for t in _node_types(ast.AST) if not issubclass(t, _LEAVES))
_SCALAR_FIELDS = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "asname", "module",
                            "level", "kind", "type_comment", "is_async", "conversion",
                            "simple", "lineno", "col_offset"})


# Node type -> its fields that can hold walked nodes.
_CHILD_FIELDS = {kind: tuple(f for f in kind._fields if f not in _SCALAR_FIELDS)
                 for kind in _node_types(ast.AST)}
