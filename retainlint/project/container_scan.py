"""What the container rules' prefilters read from a file's `ast` and bytes (RL301, RL302,
RL303, RL305): no libcst here, so a run that parses nothing does not import it."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import Optional

from retainlint.project import prefilter
from retainlint.project.names import HEAVY_TYPES, LOADERS, TENSOR_FACTORIES, absolute_import
from retainlint.project.nodes import dotted as ast_dotted
from retainlint.project.nodes import self_attr


# `NAME[: ann] = {` / dict / set / defaultdict / ... at column 0 or one indentation level.
_DEFINITION = re.compile(
    rb"^(?:    |  |\t)?([A-Za-z_]\w*)[ \t]*(:[^=\n]+)?=[ \t]*"
    rb"(?:\{|dict\b|set\b|defaultdict\b|OrderedDict\b|collections\.|typing\.|Dict\b|Set\b)",
    re.MULTILINE,
)

# How a container defined as NAME gets entries, as the bytes right after NAME.
_WRITES = (b"[", b".setdefault(", b".update(", b".add(", b" |=", b"|=", b".__setitem__(")


def might_define_container(data: bytes) -> bool:
    """A dict/set/... defined at module level or in a top-level class body, annotated
    (the annotation may name its key or value types) or written to somewhere in the file
    (raw bytes: a superset of what the rules look at)."""
    names = set()
    for m in _DEFINITION.finditer(data):
        if m.group(2):
            return True
        names.add(m.group(1))
    return any(name + w in data for name in names for w in _WRITES)


def names_heavy_type(data: bytes, words: tuple[str, ...], settings, index) -> bool:
    """One of `words` (torch, transformers), a configured heavy type's last component, or
    the simple name of a heavy project class appears in the raw bytes."""
    heavy = (*words, *(t.rsplit(".", 1)[-1] for t in settings.heavy_types))
    if any(t.encode() in data for t in heavy):
        return True
    # a project class deriving from nn.Module, defined in another file
    return not index.heavy_names.isdisjoint(prefilter.words(data))


_AST_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

_CTOR_NAMES = frozenset({"dict", "set", "defaultdict", "OrderedDict"})

_UNION_NAMES = frozenset({"Optional", "Union"})

# calls that put an entry into a dict or a set (see `ContainerTracker.visit_Call`)
_INSERTING = frozenset({"setdefault", "add", "update", "__setitem__"})

_EVIDENCE_DEPTH = 12  # deeper than the oracle's, so the superset holds


def innermost_function(nodes, node: ast.AST):
    """(function, class) as the traversal's scope sees them at `node`: the innermost
    function (not lambda), and the class it is directly a method of (`method_class`)."""
    fn = cls = None
    for owner in nodes.owners(node):
        if cls is None and isinstance(owner, ast.ClassDef):
            cls = owner
        elif fn is None and isinstance(owner, _AST_FUNCTIONS):
            fn = owner
        if fn is not None and cls is not None:
            break
    if fn is None or cls is None or not any(s is fn for s in cls.body):
        return fn, None
    return fn, cls


def _slice_elements(sub: ast.Subscript) -> list:
    s = sub.slice
    return list(s.elts) if isinstance(s, ast.Tuple) else [s]


def _parse_annotation(text: str) -> Optional[ast.AST]:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class Evidence:
    """Collects into `names` the dotted names an expression's heaviness depends on, as
    `HeavyOracle.is_heavy_value` / `is_heavy_annotation` (and the container rules' kind
    inference) would look them up: annotations of parameters and locals, callees and
    the return annotations of this file's callees, a method's class and its bases,
    what methods assign to `self.x`."""

    def __init__(self, nodes) -> None:
        self.nodes = nodes
        self.names: set[str] = set()
        self._seen: dict[tuple, int] = {}
        self._file: dict[str, object] = {}  # shared with `fresh` copies: see `_lazy`

    def fresh(self) -> "Evidence":
        """Another collector over the same file, with no names yet."""
        other = Evidence(self.nodes)
        other._file = self._file
        return other

    def _lazy(self, key: str, make):
        value = self._file.get(key)
        if value is None:
            value = self._file[key] = make()
        return value

    @property
    def classes(self) -> dict[str, list[ast.ClassDef]]:
        """Top-level classes by name."""
        return self._lazy("classes", lambda: _top_level(self.nodes.tree, (ast.ClassDef,)))

    @property
    def functions(self) -> dict[str, list]:
        """Top-level functions by name."""
        return self._lazy("functions", lambda: _top_level(self.nodes.tree, _AST_FUNCTIONS))

    @property
    def ctor_aliases(self) -> frozenset:
        """Names that `from m import defaultdict as NAME` (or OrderedDict, dict, set) binds."""
        return self._lazy("ctor_aliases", lambda: frozenset(
            a.asname for node in self.nodes.of(ast.ImportFrom) for a in node.names
            if a.asname and a.name in _CTOR_NAMES))

    @property
    def imports(self) -> dict[str, set[tuple]]:
        """local name -> {(level, module, name)}: every import of the file, as the rules'
        import table reads them (function-local ones included)."""
        return self._lazy("imports", self._imports)

    def _imports(self) -> dict[str, set[tuple]]:
        found: dict[str, set[tuple]] = {}
        for node in self.nodes.of(ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                full = alias.name if alias.asname else local
                found.setdefault(local, set()).add((0, "", full))
        for node in self.nodes.of(ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    found.setdefault(alias.asname or alias.name, set()).add(
                        (node.level, node.module or "", alias.name))
        return found

    # -- results ---------------------------------------------------------------------
    def result(self, names: Optional[set] = None) -> Optional[tuple]:
        """(names, their heads' imports) for `might_be_heavy`, or None for no names."""
        names = self.names if names is None else names
        if not names:
            return None
        heads = {n.split(".", 1)[0] for n in names}
        imports = tuple(sorted((h, tuple(sorted(self.imports[h])))
                               for h in heads if h in self.imports))
        return frozenset(names), imports

    # -- names -----------------------------------------------------------------------
    def name(self, dotted: str) -> None:
        if dotted in self.names:
            return
        self.names.add(dotted)
        if dotted in self.classes:
            for cls in self.classes[dotted]:
                self.bases(cls)

    def bases(self, cls: ast.ClassDef) -> None:
        """A class of this file is heavy through its bases (or by the index)."""
        for base in cls.bases:
            dotted = ast_dotted(base)
            if dotted:
                self.name(dotted)

    def _union(self, dotted: Optional[str]) -> bool:
        if dotted is None:
            return False
        if dotted.rpartition(".")[2] in _UNION_NAMES:
            return True
        return any(b[2].rpartition(".")[2] in _UNION_NAMES
                   for b in self.imports.get(dotted.split(".", 1)[0], ()))

    # -- annotations -----------------------------------------------------------------
    def annotation(self, ann: Optional[ast.AST], depth: int = 0) -> None:
        if ann is None or depth > _EVIDENCE_DEPTH:
            return
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            self.annotation(_parse_annotation(ann.value), depth + 1)
        elif isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            self.annotation(ann.left, depth + 1)
            self.annotation(ann.right, depth + 1)
        elif isinstance(ann, ast.Subscript):
            if self._union(ast_dotted(ann.value)):
                for element in _slice_elements(ann):
                    self.annotation(element, depth + 1)
        else:
            dotted = ast_dotted(ann)
            if dotted:
                self.name(dotted)

    def container_slot(self, ann: Optional[ast.AST], slot: int, depth: int = 0) -> None:
        """The key (`slot` 0) or value (1) type of a container annotation (`dict[K, V]`,
        through strings and wrappers such as `ClassVar[...]`: any subscript's first
        element is looked into)."""
        if ann is None or depth > _EVIDENCE_DEPTH:
            return
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            self.container_slot(_parse_annotation(ann.value), slot, depth + 1)
        elif isinstance(ann, ast.Subscript):
            elements = _slice_elements(ann)
            self.container_slot(elements[0], slot, depth + 1)
            if len(elements) > slot:
                self.annotation(elements[slot])

    # -- values ----------------------------------------------------------------------
    def value(self, expr: Optional[ast.AST], fn, cls, depth: int = 0) -> None:
        """`expr`, evaluated in function `fn` (a method of `cls`, if any)."""
        if expr is None or depth > _EVIDENCE_DEPTH:
            return
        key = (id(expr), id(fn), id(cls))
        if self._seen.get(key, _EVIDENCE_DEPTH + 1) <= depth:
            return
        self._seen[key] = depth
        if isinstance(expr, ast.Name):
            if expr.id == "self" and cls is not None and fn is not None:
                self.name(cls.name)
                self.bases(cls)
                return
            if fn is None:
                return
            param = _ast_param(fn, expr.id)
            if param is not None:
                self.annotation(param.annotation)
                return
            for value, ann in self.assignments(fn).get(expr.id, ()):
                self.annotation(ann)
                self.value(value, fn, cls, depth + 1)
        elif isinstance(expr, ast.Call):
            dotted = ast_dotted(expr.func)
            if dotted:
                self.name(dotted)
            for target in self._callees(expr.func, cls):
                self.annotation(target.returns)
        elif (isinstance(expr, ast.Attribute) and cls is not None
              and isinstance(expr.value, ast.Name) and expr.value.id == "self"):
            self.attribute(cls, expr.attr, depth)

    def attribute(self, cls: ast.ClassDef, attr: str, depth: int) -> None:
        """`self.attr` in a method of `cls`: its class-level annotation and what the
        class's methods assign to it."""
        for stmt in cls.body:
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and stmt.target.id == attr):
                self.annotation(stmt.annotation)
        for method in cls.body:
            if isinstance(method, _AST_FUNCTIONS):
                for value, ann in self.assignments(method).get(f"self.{attr}", ()):
                    self.annotation(ann)
                    self.value(value, method, cls, depth + 1)

    def _callees(self, func: ast.AST, cls) -> list:
        """Functions and methods of this file that `func` may name."""
        if isinstance(func, ast.Name):
            return self.functions.get(func.id, [])
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = func.value.id
            owners = ([cls] if cls is not None else []) if owner in ("self", "cls") \
                else self.classes.get(owner, [])
            return [m for c in owners for m in c.body
                    if isinstance(m, _AST_FUNCTIONS) and m.name == func.attr]
        return []

    def assignments(self, fn) -> dict[str, list]:
        """name (or `self.attr`) -> [(value or None, annotation or None)] directly in `fn`
        (nested functions, classes and lambdas are scopes of their own)."""
        tables = self._lazy("assignments", dict)
        table = tables.get(id(fn))
        if table is None:
            table = tables[id(fn)] = {}
            nodes, first, last = self.nodes, fn.lineno, fn.end_lineno
            everywhere = self._lazy("bindings", lambda: nodes.of(
                ast.Assign, ast.AnnAssign, ast.NamedExpr))
            for node in everywhere:
                if not first <= node.lineno <= last or nodes.owner(node) is not fn:
                    continue
                if type(node) is ast.Assign:
                    for t in node.targets:
                        k = _target_key(t)
                        if k:
                            table.setdefault(k, []).append((node.value, None))
                else:
                    k = _target_key(node.target)
                    if k:
                        ann = node.annotation if type(node) is ast.AnnAssign else None
                        table.setdefault(k, []).append((node.value, ann))
        return table


def _top_level(tree: ast.Module, kinds: tuple) -> dict[str, list]:
    found: dict[str, list] = {}
    for stmt in tree.body:
        if isinstance(stmt, kinds):
            found.setdefault(stmt.name, []).append(stmt)
    return found


def _target_key(target: ast.AST) -> Optional[str]:
    if isinstance(target, ast.Name):
        return target.id
    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == "self"):
        return f"self.{target.attr}"
    return None


def _ast_param(fn, name: str) -> Optional[ast.arg]:
    args = fn.args
    for p in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if p.arg == name:
            return p
    return None


def might_be_heavy(found, summary, settings, index) -> bool:
    """Could one of the names of an `Evidence.result` be heavy (a heavy type, a tensor
    factory, a heavy project class, a project function annotated to return one)?
    Names are qualified as the file's imports make them; lookups go through the index."""
    if not found:
        return False
    names, imports = found
    bound = dict(imports)
    configured = settings.heavy_types
    configured_last = {t.rsplit(".", 1)[-1] for t in configured}
    module = summary.module
    is_package = os.path.basename(summary.path).startswith("__init__.")
    for dotted in names:
        head, _, rest = dotted.partition(".")
        if dotted.rpartition(".")[2] in configured_last:
            return True
        if head in bound:
            qualified = []
            for level, base, name in bound[head]:
                if level:
                    base = absolute_import(module, is_package, level, base or None)
                target = f"{base}.{name}" if base else name
                qualified.append(f"{target}.{rest}" if rest else target)
        else:
            qualified = [dotted, f"{module}.{dotted}"]
        for q in qualified:
            if _heavy_qualified(q, configured, index):
                return True
    return False


def _heavy_qualified(q: str, configured, index) -> bool:
    if q in TENSOR_FACTORIES or q in HEAVY_TYPES or q in configured:
        return True
    if q.startswith("torch.nn.") and q.count(".") == 2 and q.rsplit(".", 1)[1][:1].isupper():
        return True
    owner, _, method = q.rpartition(".")
    if method in LOADERS and owner and _heavy_qualified(owner, configured, index):
        return True  # `Pipeline.from_pretrained`: a heavy class's own loader
    return index.is_heavy_class(q) or index.returns_heavy(q)


@dataclass
class ContainerFacts:
    """Containers defined at module level or in a class body (outside functions) and
    bound once there, and every write that may reach one (matched by name only: a
    superset of what `ContainerTracker._resolve` attributes)."""

    evidence: Evidence
    # (scope, name) -> [(kind, the Assign/AnnAssign, its annotation or None)], where
    # scope is None (module level) or the class name and kind "dict" | "set" (any other
    # container counts as "dict")
    candidates: dict[tuple, list] = field(default_factory=dict)
    bare: dict[tuple, list] = field(default_factory=dict)  # `NAME: ann` without a value
    # (name, key, value or None, function, method class)
    writes: list = field(default_factory=list)


_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def _named_twice(source: bytes) -> set[bytes]:
    """The ASCII identifiers `source` spells more than once. One pass over the file: a
    search per container took a time of the file's size for each of thousands."""
    seen: set[bytes] = set()
    twice: set[bytes] = set()
    for word in _WORD.findall(source):
        if word in seen:
            twice.add(word)
        else:
            seen.add(word)
    return twice


def container_facts(nodes) -> ContainerFacts:
    """Computed once per file for the scans of RL301 and RL302."""
    return nodes.shared("containers", _container_facts)


def _container_facts(nodes) -> ContainerFacts:
    evidence = Evidence(nodes)
    facts = ContainerFacts(evidence)
    bindings: dict[tuple, int] = {}
    for scope, node in definitions(nodes.tree.body, None):
        value = node.value
        if type(node) is ast.Assign:
            targets = node.targets
            if len(targets) == 1:  # the common case, without building a list
                if type(targets[0]) is not ast.Name:
                    continue
                names = (targets[0].id,)
            else:
                names = [t.id for t in targets if type(t) is ast.Name]
            annotation = None
        elif type(node.target) is ast.Name:
            names = (node.target.id,)
            annotation = node.annotation
            if value is None:
                facts.bare.setdefault((scope, names[0]), []).append(annotation)
                continue
        else:
            continue
        for name in names:
            bindings[(scope, name)] = bindings.get((scope, name), 0) + 1
        if names and type(value) in _MAYBE_CONTAINERS:
            kind = _container_kind(evidence, value)
            if kind is not None:
                facts.candidates.setdefault((scope, names[0]), []).append(
                    (kind, node, annotation))
    facts.candidates = {k: v for k, v in facts.candidates.items() if bindings.get(k) == 1}
    # a container named only once in the file (its definition) is never written to
    source = nodes.source
    named = _named_twice(source) if facts.candidates else set()
    names = {name for _, name in facts.candidates if not name.isascii() or name.encode() in named}
    if names:
        for node, base, key, value in container_writes(nodes, names):
            if isinstance(key, ast.Tuple):  # `c[a, b]`: the traversal sees `a`
                key = key.elts[0] if key.elts else None
            if key is not None and not isinstance(key, ast.Slice):
                name = base.id if isinstance(base, ast.Name) else base.attr
                facts.writes.append((name, key, value, *innermost_function(nodes, node)))
    return facts


_BLOCKS = ("body", "orelse", "finalbody")

_NO_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Expr, ast.Import,
                             ast.ImportFrom, ast.Return, ast.Pass, ast.AugAssign})

# value node types `_container_kind` may accept
_MAYBE_CONTAINERS = frozenset({ast.Dict, ast.DictComp, ast.Set, ast.SetComp, ast.Call})


def definitions(statements, scope: Optional[str], found: Optional[list] = None) -> list:
    """[(scope, Assign/AnnAssign)] outside functions: at module level (scope None) or in
    a class body (the innermost class's name), inside if/try/with/for blocks too."""
    if found is None:
        found = []
    for stmt in statements:
        kind = type(stmt)
        if kind is ast.Assign or kind is ast.AnnAssign:
            found.append((scope, stmt))
        elif kind is ast.ClassDef:
            definitions(stmt.body, stmt.name, found)
        elif kind in _NO_DEFINITIONS:
            continue
        else:
            for field_name in _BLOCKS:
                block = getattr(stmt, field_name, None)
                if block:
                    definitions(block, scope, found)
            for part in getattr(stmt, "handlers", None) or getattr(stmt, "cases", None) or ():
                definitions(part.body, scope, found)
    return found


def _container_kind(evidence: Evidence, value: ast.AST) -> Optional[str]:
    """"dict"/"set" for what may be a new container (coarser than `_container`: any
    callee named dict/set/defaultdict/OrderedDict, or imported under another name)."""
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return "dict"
    if isinstance(value, (ast.Set, ast.SetComp)):
        return "set"
    if not isinstance(value, ast.Call):
        return None
    func = value.func.value if isinstance(value.func, ast.Subscript) else value.func
    dotted = ast_dotted(func)
    if dotted is None:
        return None
    if dotted in ("set", "builtins.set"):
        return "set"
    if dotted.rpartition(".")[2] in _CTOR_NAMES:
        return "dict"
    if dotted in evidence.ctor_aliases:
        return "dict"
    return None


def container_writes(nodes, names: set):
    """(node, container expression, key, value or None) for every way code puts an entry
    into a dict or a set (`ContainerTracker`'s write events, before resolution), into
    a container spelled `NAME` or `x.NAME` for one of `names`. (Subscripts stored to in
    `for`/`with` targets count too: a superset.)"""
    stores = {id(node): node for node in nodes.of(ast.Subscript)
              if type(node.ctx) is ast.Store and _base_name(node.value) in names}
    if stores:
        # `c[k] = v`: the value is the assignment's (found only for direct targets)
        valued = {}
        for node in nodes.of(ast.Assign):
            for t in node.targets:
                if id(t) in stores:
                    valued[id(t)] = node.value
        for node in nodes.of(ast.AnnAssign):
            if id(node.target) in stores:
                valued[id(node.target)] = node.value
        for key, node in stores.items():
            yield node, node.value, node.slice, valued.get(key)
    for node in nodes.of(ast.AugAssign):
        t = node.target
        if type(node.op) is ast.BitOr and type(t) is not ast.Subscript and _base_name(t) in names:
            if isinstance(node.value, ast.Set):
                for element in node.value.elts:
                    yield node, t, element, None
            elif isinstance(node.value, ast.Dict):
                for k, v in zip(node.value.keys, node.value.values):
                    if k is not None:
                        yield node, t, k, v
    for node in nodes.of(ast.Call):
        func = node.func
        if type(func) is not ast.Attribute or func.attr not in _INSERTING \
                or _base_name(func.value) not in names:
            continue
        args = [a for a in node.args if not isinstance(a, ast.Starred)]
        if not args:
            continue
        if func.attr in ("setdefault", "__setitem__"):
            yield node, func.value, args[0], args[1] if len(args) > 1 else None
        elif func.attr == "add":
            yield node, func.value, args[0], None
        elif isinstance(args[0], ast.Dict):
            for k, v in zip(args[0].keys, args[0].values):
                if k is not None:
                    yield node, func.value, k, v


def _base_name(expr: ast.AST) -> Optional[str]:
    """`NAME` or `x.NAME`: the name a write's container may be known by."""
    kind = type(expr)
    if kind is ast.Name:
        return expr.id
    if kind is ast.Attribute:
        return expr.attr
    return None


# -- instance memos (RL301) ---------------------------------------------------------------
_CONTAINER_CALLS = frozenset({"dict", "set", "defaultdict", "OrderedDict"})


def instance_memo(nodes) -> bool:
    """Does a class make `self.x = {}` (or dict/set/defaultdict/OrderedDict) in its
    `__init__` and write `self.x[p] = v` in another method, `p` a parameter of that
    method? (RL301's object-keyed instance memos, read coarsely from the `ast`.)"""
    for cls in nodes.of(ast.ClassDef):
        made = set()
        for fn in cls.body:
            if isinstance(fn, _AST_FUNCTIONS) and fn.name == "__init__":
                for stmt in fn.body:
                    if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                            and self_attr(stmt.targets[0]) is not None and _new_container(stmt.value)):
                        made.add(stmt.targets[0].attr)
        if not made:
            continue
        for fn in cls.body:
            if not isinstance(fn, _AST_FUNCTIONS) or fn.name == "__init__":
                continue
            params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if (isinstance(t, ast.Subscript) and self_attr(t.value) is not None
                                and t.value.attr in made and isinstance(t.slice, ast.Name)
                                and t.slice.id in params):
                            return True
    return False


def _new_container(value: ast.AST) -> bool:
    if isinstance(value, (ast.Dict, ast.Set)):
        return True
    if isinstance(value, ast.Call):
        func = value.func.value if isinstance(value.func, ast.Subscript) else value.func
        name = ast_dotted(func)
        return name is not None and name.rpartition(".")[2] in _CONTAINER_CALLS
    return False
