"""RL702's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl702_stored_exception_frames/` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast
import re
from typing import Optional

from retainlint.project.names import WRAPPING_CALLS
from retainlint.project.prefilter import Prefilter


# Methods that put their argument into the receiving container.
ADDERS = frozenset(
    {"append", "add", "insert", "appendleft", "extend", "setdefault", "update", "__setitem__"}
)

# -- prefilter -------------------------------------------------------------------------
_HANDLER_NAME = re.compile(rb"\bexcept\b[^\n:]*?\bas[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*:")

_STORE_PATTERNS: dict[bytes, re.Pattern] = {}


def _store_pattern(name: bytes) -> re.Pattern:
    """Lines that may store the exception `name`: `x = name`, `x = (.., name)`,
    `x = Wrapper(name)`, `c.append(name)`, `return (.., name)`, `"k": name,` on its own
    line, `x = name.__traceback__`. Keyword arguments (`exc_info=e`, no spaces) and plain
    call arguments (`log(.., e)`) do not match: they are what most handlers do."""
    found = _STORE_PATTERNS.get(name)
    if found is None:
        n = re.escape(name)
        found = re.compile(
            rb"[ \t]=[ \t]*" + n + rb"[ \t]*(?:$|[#;,)]|\.__traceback__)"
            rb"|[ \t]=[ \t]*[(\[{][^\n]*?\b" + n + rb"\b[ \t]*[,)\]}]"
            rb"|[ \t]=[ \t]*[\w.]*\.?[A-Z]\w*\([^\n]*?\b" + n + rb"\b[ \t]*[,)\]}]"
            rb"|\.(?:append|add|insert|appendleft|extend|setdefault|update|__setitem__)\("
            rb"[^\n]*?\b" + n + rb"\b[ \t]*[,)\]}]"
            rb"|\breturn[ \t]*(?:[(\[{]|[A-Z]\w*\()[^\n]*?\b" + n + rb"\b[ \t]*[,)\]}]"
            rb"|^[ \t]+[\"'][^\n\"']*[\"'][ \t]*:[ \t]*" + n + rb"[ \t]*,?[ \t]*$",
            re.MULTILINE,
        )
        if len(_STORE_PATTERNS) < 512:
            _STORE_PATTERNS[name] = found
    return found


_BLOCK_ENDS: dict[int, re.Pattern] = {}


def _block_end(indent: int) -> re.Pattern:
    """The first later line indented no deeper than `indent` (the end of a block)."""
    found = _BLOCK_ENDS.get(indent)
    if found is None:
        found = _BLOCK_ENDS[indent] = re.compile(rb"\n[ \t]{0,%d}(?=[^ \t\r\n])" % indent)
    return found


# -- structural prefilter (`ast`, from the index's pass) ----------------------------------
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

_FUNCTION_KINDS = frozenset(_FUNCTIONS)

_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda})

_TRIES = tuple(k for k in (ast.Try, getattr(ast, "TryStar", None)) if k is not None)

_WRAPPER_NAMES = frozenset(q.rsplit(".", 1)[-1] for q in WRAPPING_CALLS)


class _Scan:
    """A handler `except ... as NAME:` in a function, not an import probe, whose body
    (not counting nested scopes) assigns, adds to a container or returns in a container
    a value that may hold NAME (`_reaches_exc`: the name, `NAME.__traceback__` or a bound
    method of it, containers, class instances, wrappers and lambdas around it). Every
    store the rule reports starts there (directly, or as a local alias or container
    assigned there; in a `while True:` loop a local alias is enough)."""

    def __init__(self, nodes) -> None:
        self.nodes = nodes
        self._imported: Optional[dict[str, str]] = None
        self._methods: Optional[set[str]] = None
        self._classes: Optional[set[str]] = None

    @property
    def imported(self) -> dict[str, str]:
        """Local name -> last part of what it imports (`from x import Failure as F`)."""
        if self._imported is None:
            self._imported = {}
            for kind in (ast.Import, ast.ImportFrom):
                for node in self.nodes.of(kind):
                    for a in node.names:
                        if a.asname:
                            self._imported[a.asname] = a.name.rsplit(".", 1)[-1]
                        elif kind is ast.ImportFrom:
                            self._imported[a.name] = a.name
        return self._imported

    @property
    def classes(self) -> set[str]:
        """Names of the file's classes (`_RemoteError(e)` builds an instance)."""
        if self._classes is None:
            self._classes = {c.name for c in self.nodes.of(ast.ClassDef)}
        return self._classes

    @property
    def methods(self) -> set[str]:
        """Names of the methods of the file's classes (`_is_bound_method`)."""
        if self._methods is None:
            nodes = self.nodes
            self._methods = {"forward", "__call__"}
            for kind in _FUNCTIONS:
                self._methods.update(fn.name for fn in nodes.of(kind) if type(nodes.owner(fn)) is ast.ClassDef)
        return self._methods

    def found(self) -> bool:
        nodes = self.nodes
        serving = self.serving_tries()
        for kind in _TRIES:
            for node in nodes.of(kind):
                fn = next((o for o in nodes.owners(node) if type(o) in _FUNCTION_KINDS), None)
                if fn is None:
                    continue  # module level: import-time frames only
                if all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in node.body):
                    continue
                for handler in node.handlers:
                    if handler.name and not self.import_error_only(handler.type) and \
                            self.handler_stores(handler, fn, id(node) in serving):
                        return True
        return False

    def serving_tries(self) -> set[int]:
        """ids of the `try` statements directly in a `while True:` loop's body (a local
        assigned in their handlers lives until the next failure replaces it)."""
        found: set[int] = set()
        for loop in self.nodes.of(ast.While):
            if not (type(loop.test) is ast.Constant and loop.test.value in (True, 1)):
                continue
            todo = list(loop.body)
            while todo:
                node = todo.pop()
                if isinstance(node, _TRIES):
                    found.add(id(node))
                if type(node) in _SCOPES or type(node) in (ast.For, ast.AsyncFor, ast.While):
                    continue
                todo.extend(ast.iter_child_nodes(node))
        return found

    def import_error_only(self, kind: Optional[ast.AST]) -> bool:
        kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
        return all(isinstance(k, ast.Name) and k.id in ("ImportError", "ModuleNotFoundError")
                   for k in kinds) and not any(k.id in self.imported for k in kinds)

    def handler_stores(self, handler: ast.ExceptHandler, fn: ast.AST, serving: bool = False) -> bool:
        """Does the handler store its exception where it outlives the handler, directly
        or through a local alias (or local container) the function stores later, or keep
        it in a local of a serving loop?"""
        names: set[str] = set()  # the exception under local names, or names that may be globals
        if self.stores(handler.body, {handler.name}, names):
            return True
        if not names:
            return False
        if serving:
            return True
        # the alias pass, over the whole function: a later store of an alias, or a name
        # held in the handler that is a global (declared, or never bound in the function)
        later: set[str] = set()
        if self.stores(fn.body, names, later, aliases=True):
            return True
        scope = _Scope(fn)
        return any(n in scope.globals or n not in scope.bound for n in names | later)

    def stores(self, body: list, names: set, held: set, aliases: bool = False) -> bool:
        """A store of one of `names` in `body` (not in nested scopes) to an attribute or
        item, in a container reached through one, or returned in a container (or itself,
        for `aliases`: a local container). Names assigned a value holding it (aliases, or
        globals) and names of containers it is added to go to `held`."""
        todo = list(body)
        while todo:
            node = todo.pop()
            kind = type(node)
            if kind is ast.Assign or kind is ast.AugAssign or kind is ast.AnnAssign:
                if node.value is not None and self.holds_any(node.value, names):
                    for t in (node.targets if kind is ast.Assign else (node.target,)):
                        if type(t) is ast.Name:
                            held.add(t.id)
                        elif type(t) is ast.Attribute or type(t) is ast.Subscript:
                            return True
            elif kind is ast.Call:
                func = node.func
                if type(func) is ast.Attribute and func.attr in ADDERS and any(
                        self.holds_any(a, names) for a in (*node.args, *(k.value for k in node.keywords))):
                    if type(func.value) is not ast.Name:
                        return True
                    held.add(func.value.id)
            elif kind is ast.Return:
                value = node.value
                if type(value) in (ast.Tuple, ast.List, ast.Dict, ast.Set) and self.holds_any(value, names) \
                        or aliases and type(value) is ast.Name and value.id in names \
                        or type(value) is ast.Call and type(value.func) is ast.Name \
                        and value.func.id in self.classes and self.holds_any(value, names):
                    return True
            if kind in _SCOPES:
                continue
            todo.extend(ast.iter_child_nodes(node))
        return False

    def holds_any(self, value: ast.AST, names: set) -> bool:
        return any(self.holds(value, n) for n in names)

    def holds(self, value: ast.AST, name: str) -> bool:
        """Might `value` keep the exception `name` (`_reaches_exc`, coarser)?"""
        kind = type(value)
        if kind is ast.Name:
            return value.id == name
        if kind is ast.Attribute:
            inner = value.value
            return type(inner) is ast.Name and inner.id == name and (
                value.attr == "__traceback__" or value.attr in self.methods)
        if kind in (ast.Tuple, ast.List, ast.Set):
            return any(self.holds(e, name) for e in value.elts)
        if kind is ast.Dict:
            return any(self.holds(p, name) for p in (*value.keys, *value.values) if p is not None)
        if kind is ast.IfExp:
            return self.holds(value.body, name) or self.holds(value.orelse, name)
        if kind is ast.BoolOp:
            return any(self.holds(v, name) for v in value.values)
        if kind is ast.NamedExpr or kind is ast.Starred:
            return self.holds(value.value, name)
        if kind is ast.Lambda:
            a = value.args
            if any(p.arg == name for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)):
                return False
            return any(type(n) is ast.Name and n.id == name for n in ast.walk(value.body))
        if kind is ast.Call:
            func = value.func
            if type(func) is ast.Subscript:
                func = func.value
            if type(func) is ast.Attribute:
                last = func.attr
            elif type(func) is ast.Name:
                last = self.imported.get(func.id, func.id)
            else:
                return False
            if not (last[:1].isupper() or last in _WRAPPER_NAMES or last in self.classes):
                return False  # `str(e)`, `repr(e)`, `format_error(e)`: text
            return any(self.holds(a, name) for a in (*value.args, *(k.value for k in value.keywords)))
        return False


class _Scope:
    """The names a function declares global, and those it binds as the rule's `Scopes`
    sees them (`function_bindings`, plus named parameters), not entering nested scopes."""

    def __init__(self, fn: ast.AST) -> None:
        self.globals: set[str] = set()
        a = fn.args
        self.bound = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
        targets = []
        todo = list(fn.body)
        while todo:
            node = todo.pop()
            kind = type(node)
            if kind is ast.Global:
                self.globals.update(node.names)
            elif kind in _SCOPES:
                if kind is not ast.Lambda:
                    self.bound.add(node.name)
                continue
            elif kind is ast.Assign:
                targets.extend(node.targets)
            elif kind in (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor):
                targets.append(node.target)
            elif kind is ast.withitem and node.optional_vars is not None:
                targets.append(node.optional_vars)
            todo.extend(ast.iter_child_nodes(node))
        while targets:
            t = targets.pop()
            if type(t) is ast.Name:
                self.bound.add(t.id)
            elif type(t) in (ast.Tuple, ast.List):
                targets.extend(t.elts)
            elif type(t) is ast.Starred:
                targets.append(t.value)


class StoredExceptionFramesPrefilter(Prefilter):
    code = "RL702"

    triggers = ("except",)

    scans = True

    @classmethod
    def scan(cls, nodes) -> bool:
        """Is there a handler that may store its exception (`_Scan`)?"""
        return _Scan(nodes).found()

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """The scan's answer; for a file `ast` cannot parse, a handler `except ... as
        NAME:` whose body has a line that may store NAME. Every store the rule reports
        starts in the handler body (directly, or as an alias or local container assigned
        there), so only handler bodies are searched."""
        summary = getattr(data, "summary", None)
        if summary is not None:
            return bool(summary.scans.get(cls.code))
        if b"except" not in data or b" as " not in data:
            return False
        for m in _HANDLER_NAME.finditer(data):
            line_start = data.rfind(b"\n", 0, m.start()) + 1
            indent = len(data[line_start:m.start()]) - len(data[line_start:m.start()].lstrip())
            end = _block_end(indent).search(data, m.end())
            body = data[m.end(): end.start() if end is not None else len(data)]
            if _store_pattern(m.group(1)).search(body) is not None:
                return True
        return False
