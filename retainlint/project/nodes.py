"""A file's `ast`, indexed by node type, for rules' structural prefilters (`Rule.scan`).

Filled by the project index's one pass over every file (the file is parsed with `ast`
there anyway), so a rule can ask "is there a `del self.x` in a method named `close`?"
without a walk of its own, and a file that cannot match is never parsed by libcst."""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import Callable, Iterator, Optional, TypeVar

T = TypeVar("T")
N = TypeVar("N", bound=ast.AST)

def dotted(node: ast.AST) -> Optional[str]:
    """`a.b.c` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def self_attr(node: ast.AST) -> Optional[str]:
    """`x` for `self.x`, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


# Nodes that open a scope: `owner(node)` is the innermost one around a node.
OWNERS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
TRY_STAR = (ast.TryStar,) if hasattr(ast, "TryStar") else ()  # `try: ... except* E:` (3.11)


def module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's statements, with those of its `if`, `try` and `with` blocks: a `def`
    under `except ImportError:` or `if sys.version_info < ...:` is a module function too,
    a class under `if is_torch_available():` a module class."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.Try, ast.With, *TRY_STAR)):
            for field in ("body", "orelse", "finalbody"):
                yield from module_level(getattr(stmt, field, []))
            for handler in getattr(stmt, "handlers", ()):
                yield from module_level(handler.body)


class FileNodes:
    """Every node of the file except leaves (`Name`, `Constant`, `alias`, operators,
    contexts, `pass`/`break`/`continue`: read those from their parents), by type, and the
    innermost function, class or lambda around each (None at module level). Decorators
    and default values count as inside the definition they decorate."""

    def __init__(self, tree: ast.Module, source: bytes) -> None:
        self.tree = tree
        self.source = source
        # Filled by the project index's walk (`summary_walk._FileWalk._scan`), inline there:
        # a method call per node cost a tenth of the walk.
        self.by_type: dict[type, list[ast.AST]] = defaultdict(list)
        self.owner_of: dict[int, Optional[ast.AST]] = {}  # id(node) -> owner
        self._shared: dict[str, object] = {}
        self._owned: dict[type, dict[int, list[ast.AST]]] = {}  # kind -> id(owner) -> nodes

    def of(self, *kinds: type) -> list[ast.AST]:
        """The nodes of these exact types, in no particular order."""
        if len(kinds) == 1:
            return self.by_type.get(kinds[0], [])
        return [n for kind in kinds for n in self.by_type.get(kind, ())]

    def own(self, owner: Optional[ast.AST], *kinds: type[N]) -> list[N]:
        """The nodes of these types whose innermost function, class or lambda is `owner`
        (not those of what is nested in it): what `frames.own_nodes` walks to, grouped
        once per type instead of walked per function."""
        found: list[N] = []
        for kind in kinds:
            table = self._owned.get(kind)
            if table is None:
                table = self._owned[kind] = defaultdict(list)
                owner_of = self.owner_of
                for node in self.by_type.get(kind, ()):
                    table[id(owner_of.get(id(node)))].append(node)
            found.extend(table.get(id(owner), ()))  # type: ignore[arg-type]
        return found

    def release(self) -> None:
        """Drop the tree and everything derived from it. Facts kept in `shared` often
        refer back to this object (a cycle), and the rules' scans leave closures that
        do too: emptied, those cycles hold nothing, and the tree is freed the moment the
        index is done with the file instead of at the next collection, which had to walk
        every node of it."""
        self.tree = None
        self.by_type.clear()
        self.owner_of.clear()
        self._shared.clear()
        self._owned.clear()

    def shared(self, key: str, compute: Callable[["FileNodes"], T]) -> T:
        """`compute(self)`, once per file: facts several rules' scans need."""
        if key not in self._shared:
            self._shared[key] = compute(self)
        return self._shared[key]  # type: ignore[return-value]

    def owner(self, node: ast.AST) -> Optional[ast.AST]:
        return self.owner_of.get(id(node))

    def owners(self, node: ast.AST) -> Iterator[ast.AST]:
        """The functions, classes and lambdas around `node`, innermost first."""
        owner = self.owner_of.get(id(node))
        while owner is not None:
            yield owner
            owner = self.owner_of.get(id(owner))

    def method_of(self, node: ast.AST) -> Optional[tuple[ast.ClassDef, ast.AST]]:
        """(class, method) when the innermost function around `node` is a method."""
        fn = next((o for o in self.owners(node) if not isinstance(o, ast.Lambda)), None)
        if fn is None or isinstance(fn, ast.ClassDef):
            return None
        cls = self.owner_of.get(id(fn))
        return (cls, fn) if isinstance(cls, ast.ClassDef) else None
