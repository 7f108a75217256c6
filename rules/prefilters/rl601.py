"""RL601's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl601_release_leaves_alias/` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast
from typing import Optional

from retainlint.core.config import DEFAULT_RELEASE_METHODS
from retainlint.project.nodes import dotted as _ast_dotted, self_attr
from retainlint.project.prefilter import Prefilter
from retainlint.project.release_shape import release_shaped


# Calls whose result is a plain value derived from their argument, never the argument.
SCALAR_CALLS = frozenset(
    {
        "len", "str", "int", "float", "bool", "isinstance", "issubclass", "id", "hash", "repr",
        "type", "hasattr", "callable", "format", "getattr", "vars", "dir", "sum", "any", "all",
        "min", "max", "round", "abs", "sorted", "print", "next", "iter", "enumerate",
    }
)
SCALAR_CALLS = SCALAR_CALLS | frozenset(f"builtins.{n}" for n in SCALAR_CALLS)
SCALAR_CALLS = SCALAR_CALLS | frozenset(
    {"ctypes.addressof", "ctypes.sizeof", "sys.getsizeof", "sys.getrefcount", "operator.index"}
)
# Path arithmetic returns a new string: `self.log = os.path.join(self.tmpdir, "x")` keeps no
# reference to what `self.tmpdir` holds.
SCALAR_CALLS = SCALAR_CALLS | frozenset(
    f"{module}.{name}" for module in ("os.path", "posixpath", "ntpath")
    for name in ("join", "abspath", "realpath", "dirname", "basename", "normpath", "relpath",
                 "expanduser", "expandvars", "splitext", "split")
) | frozenset({"os.fspath", "os.fsencode", "os.fsdecode"})

# Method names on a receiver that only read what they are handed.
READ_ONLY_METHODS = frozenset(
    {
        "debug", "info", "warning", "warn", "error", "exception", "critical", "log",
        "info_once", "warning_once", "debug_once", "write", "format", "join", "startswith",
        "endswith", "count", "index", "get", "__contains__", "isinstance",
    }
)

_SCALAR_PREFIXES = ("is_", "has_", "supports_", "should_", "can_", "use_", "get_num", "num_",
                    "count_", "check_", "requires_", "uses_")


def scalar_name(qualified: Optional[str]) -> bool:
    """Functions whose name says they answer a question about their argument."""
    if not qualified:
        return False
    last = qualified.rsplit(".", 1)[-1].lstrip("_")
    return last.startswith(_SCALAR_PREFIXES)


SCALAR_ATTRS = ("is_", "has_", "num_", "n_", "supports_", "use_", "enable_", "max_", "min_")

# -- prefilter: the file's shape, from the project index's `ast` pass ------------------
# A finding needs a class with a method (a release method, if its name is configured so)
# that releases `self.a`, and another attribute `self.b` that some method of the class
# makes reference `self.a` (the shapes `_holds` and the handed-over calls accept). The
# scan records both per class; `might_match` applies the configured release names. The
# second part is the cost: it is looked for only in classes that release in a method
# with a default release name (for the others, a configured name lets the file through).
_RELEASE_TOKENS = (b"del self.", b"= None", b".clear()", b"delattr")  # the old byte test

_COPY_NAMES = frozenset({"list", "dict", "tuple", "set", "frozenset", "copy", "OrderedDict"})


def _ast_self_root(node: ast.AST) -> Optional[str]:
    """`b` for `self.b.x`, `self.b[0]` (not for `self.b` itself), as `_self_root`."""
    current = node
    while isinstance(current, (ast.Attribute, ast.Subscript)):
        if isinstance(current, ast.Attribute) and isinstance(current.value, ast.Name) \
                and current.value.id == "self":
            return None if current is node else current.attr
        current = current.value
    return None


def _release_named(nodes) -> bool:
    """Is some function of the file named as a default release method?"""
    names = {fn.name for fn in nodes.of(ast.FunctionDef)}
    names.update(fn.name for fn in nodes.of(ast.AsyncFunctionDef))
    return not names.isdisjoint(DEFAULT_RELEASE_METHODS)


def _reads_attribute(value: ast.AST) -> bool:
    """`self.a`, `getattr(self, ...)`: what a local bound to an attribute is assigned."""
    return self_attr(value) is not None or (
        type(value) is ast.Call and type(value.func) is ast.Name and value.func.id == "getattr")


def _none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


class _Scan:
    """One file's classes that release an attribute in a method with a default release
    name: per method, what it releases ((attr, kind), ...) and drops; which attributes
    may reference which ((b, a, how, method handing it over or ""); how: "ref" for the
    same object, a bound method or a container of it, "built", "copy", "handed"). Only
    the nodes that can matter get their owner looked up (that lookup is the cost)."""

    def __init__(self, nodes) -> None:
        self.nodes = nodes
        self.method_class: dict[int, ast.ClassDef] = {}  # direct methods -> their class
        self.release_named = _release_named(nodes)
        if self.release_named:
            for c in nodes.of(ast.ClassDef):
                for stmt in c.body:
                    if type(stmt) is ast.FunctionDef or type(stmt) is ast.AsyncFunctionDef:
                        self.method_class[id(stmt)] = c
        self._imports: Optional[tuple[set, set, set]] = None

    def _method(self, node: ast.AST):
        """The method `node` is directly in (nested functions and lambdas excluded)."""
        fn = self.nodes.owner(node)
        return fn if fn is not None and id(fn) in self.method_class else None

    def found(self) -> Optional[tuple]:
        """None when no function is named as a default release method: the scan stops
        there, and `might_match` tests the bytes for other configured names."""
        if not self.release_named:
            return None
        if not self.method_class:
            return (), ()
        # 1. What may release, by method: where releases are in a method with a default
        #    release name, the class is judged in full; for the others, the names of the
        #    methods that release are enough (`might_match` lets them through if configured).
        maybe: dict[int, list] = {}
        for node in self._release_candidates():
            fn = self._method(node)
            if fn is not None:
                maybe.setdefault(id(fn), []).append(node)
        judged: dict[int, ast.ClassDef] = {}
        other: set[tuple] = set()  # (class, method)
        for fn_id, nodes in maybe.items():
            if not self._releases(nodes)[0]:
                continue
            c = self.method_class[fn_id]
            fn = self.nodes.owner(nodes[0])
            if fn.name == "__del__" or not release_shaped(fn):
                continue  # never a release method to the rule
            if fn.name in DEFAULT_RELEASE_METHODS:
                judged[id(c)] = c
            else:
                other.add((id(c), fn.name))
        unjudged = tuple(sorted({name for c, name in other if c not in judged}))
        if not judged:
            return (), unjudged
        # 2. In judged classes: assignments and calls that can release, drop, bind a local
        #    to an attribute, link one attribute to another or hand one over, by method.
        spans = [(c.lineno, c.end_lineno) for c in judged.values()]
        statements: dict[int, list] = {}
        methods: dict[int, ast.AST] = {}

        def inside(node) -> bool:  # a judged class's lines
            line = node.lineno
            for start, end in spans:
                if start <= line <= end:
                    return True
            return False

        def add(node) -> None:
            fn = self._method(node)
            if fn is not None and id(self.method_class[id(fn)]) in judged:
                methods[id(fn)] = fn
                statements.setdefault(id(fn), []).append(node)

        for node in self.nodes.of(ast.Assign):
            if not inside(node) or (len(node.targets) == 1 and type(node.targets[0]) is ast.Name
                                    and not _reads_attribute(node.value)):
                continue  # `x = ...`: no local bound to an attribute
            add(node)
        for node in self.nodes.of(ast.AnnAssign):
            if node.value is not None and inside(node) and (
                    type(node.target) is not ast.Name or _reads_attribute(node.value)):
                add(node)
        for node in self.nodes.of(ast.Delete):
            if inside(node):
                add(node)
        for node in self.nodes.of(ast.Expr):
            call = node.value
            if type(call) is ast.Call and type(call.func) is ast.Attribute and call.func.attr == "clear" \
                    and inside(node):
                add(node)
        for node in self.nodes.of(ast.Call):
            if not inside(node):
                continue
            func = node.func
            if type(func) is ast.Attribute:
                if not (node.args or node.keywords):
                    continue
                receiver = func.value  # `self.b.m(...)`, `self.b.x[0].m(...)`: handing over
                while type(receiver) is ast.Attribute or type(receiver) is ast.Subscript:
                    receiver = receiver.value
                if type(receiver) is ast.Name and receiver.id == "self" and func.value is not receiver:
                    add(node)
            elif type(func) is ast.Name and func.id in ("delattr", "setattr"):
                add(node)
        result = []
        by_class: dict[int, list] = {}
        for fn_id in statements:
            by_class.setdefault(id(self.method_class[fn_id]), []).append(methods[fn_id])
        for fns in by_class.values():
            releases = []
            released: set[str] = set()
            for fn in fns:
                found, drops = self._releases(statements[id(fn)])
                if found:
                    releases.append((fn.name, tuple(sorted(found)), frozenset(drops)))
                    released.update(a for a, _ in found)
            if releases:
                links = self._links(fns, released, statements)
                if links:
                    result.append((tuple(releases), tuple(sorted(links))))
        return tuple(result), unjudged

    def _release_candidates(self):
        """Statements that may release an attribute (`_releases` decides)."""
        for node in self.nodes.of(ast.Assign):
            kind = type(node.value)
            if (kind is ast.Constant and node.value.value is None) or kind is ast.Tuple or kind is ast.List:
                yield node
        for node in self.nodes.of(ast.AnnAssign):
            if type(node.value) is ast.Constant and node.value.value is None:
                yield node
        yield from self.nodes.of(ast.Delete)
        for node in self.nodes.of(ast.Expr):
            call = node.value
            if type(call) is ast.Call and type(call.func) is ast.Attribute and call.func.attr == "clear":
                yield node
        if b"delattr" in self.nodes.source:
            for node in self.nodes.of(ast.Call):
                if type(node.func) is ast.Name and node.func.id == "delattr":
                    yield node

    # -- what a method releases ----------------------------------------------------
    @staticmethod
    def _releases(statements: list) -> tuple[set, set]:
        found: set[tuple[str, str]] = set()  # (attr, "del" | "none" | "clear")
        drops: set[str] = set()  # a subset of what `_Collector` counts as dropped

        def assigned(target, value) -> None:
            attr = self_attr(target)
            if attr is not None:
                if _none(value):
                    found.add((attr, "none"))
                drops.add(attr)
            elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                    and len(target.elts) == len(value.elts):
                for t, v in zip(target.elts, value.elts):
                    assigned(t.value if isinstance(t, ast.Starred) else t,
                             v.value if isinstance(v, ast.Starred) else v)

        for node in statements:
            kind = type(node)
            if kind is ast.Assign:
                for target in node.targets:
                    assigned(target, node.value)
            elif kind is ast.AnnAssign:
                assigned(node.target, node.value)
            elif kind is ast.Delete:
                targets = list(node.targets)
                while targets:
                    t = targets.pop()
                    if isinstance(t, (ast.Tuple, ast.List)):
                        targets.extend(t.elts)
                    elif self_attr(t) is not None:
                        found.add((t.attr, "del"))
                        drops.add(t.attr)
            elif kind is ast.Call:
                func = node.func
                if type(func) is ast.Name and len(node.args) > 1 \
                        and isinstance(node.args[0], ast.Name) and node.args[0].id == "self" \
                        and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                    drops.add(node.args[1].value)
                    if func.id == "delattr":
                        found.add((node.args[1].value, "del"))
            elif kind is ast.Expr:
                call = node.value
                if not call.args and not call.keywords:
                    attr = self_attr(call.func.value)
                    if attr is not None:
                        found.add((attr, "clear"))
                        drops.add(attr)
        return found, drops

    # -- which attributes reference which ------------------------------------------
    def _links(self, fns: list, released: set, statements: dict) -> set:
        links: set = set()
        for fn in fns:
            nodes = statements[id(fn)]
            holds = _Holds(self, self._names(nodes))
            for node in nodes:
                kind = type(node)
                if kind is ast.Assign:
                    for target in node.targets:
                        self._assign(target, node.value, holds, fn.name, links)
                elif kind is ast.AnnAssign:
                    self._assign(node.target, node.value, holds, fn.name, links)
                elif kind is ast.Call and type(node.func) is ast.Attribute:
                    if node.func.attr in READ_ONLY_METHODS:
                        continue
                    root = self_attr(node.func.value) or _ast_self_root(node.func.value)
                    if root is None:
                        continue
                    for arg in (*node.args, *(k.value for k in node.keywords)):
                        for a, _ in holds(arg.value if isinstance(arg, ast.Starred) else arg, 0):
                            links.add((root, a, "handed", fn.name))
        return {link for link in links if link[1] in released and link[0] != link[1]}

    def _assign(self, target, value, holds, method: str, links: set) -> None:
        attr = self_attr(target)
        if attr is not None:
            if not _none(value):
                for a, how in holds(value, 0):
                    links.add((attr, a, how, ""))
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(target.elts) == len(value.elts):
                for t, v in zip(target.elts, value.elts):
                    self._assign(t.value if isinstance(t, ast.Starred) else t,
                                 v.value if isinstance(v, ast.Starred) else v, holds, method, links)
            return
        root = _ast_self_root(target)
        if root is not None:
            for a, _ in holds(value, 0):
                links.add((root, a, "handed", method))

    @staticmethod
    def _names(statements) -> dict[str, set]:
        """Locals of one method bound to `self.<attr>` (as `name_from_attr`)."""
        names: dict[str, set] = {}

        def bind(name: str, attr: str) -> None:
            names.setdefault(name, set()).add(attr)

        def assigned(target, value, others) -> None:
            attr = self_attr(target)
            if attr is not None:
                if not _none(value):
                    for n in others:
                        bind(n, attr)
                    if isinstance(value, ast.Name):
                        bind(value.id, attr)
            elif isinstance(target, ast.Name):
                source = self_attr(value)
                if source is None and isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
                        and value.func.id == "getattr" and len(value.args) >= 2 \
                        and isinstance(value.args[0], ast.Name) and value.args[0].id == "self" \
                        and isinstance(value.args[1], ast.Constant) and isinstance(value.args[1].value, str):
                    source = value.args[1].value
                if source is not None:
                    bind(target.id, source)
            elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                    and len(target.elts) == len(value.elts):
                for t, v in zip(target.elts, value.elts):
                    assigned(t.value if isinstance(t, ast.Starred) else t,
                             v.value if isinstance(v, ast.Starred) else v, ())

        for node in statements:
            if type(node) is ast.Assign:
                others = [t.id for t in node.targets if isinstance(t, ast.Name)]
                for target in node.targets:
                    assigned(target, node.value, others)
            elif type(node) is ast.AnnAssign:
                assigned(node.target, node.value, ())
        return names

    def _imported(self) -> tuple[set, set, set]:
        """Names imports bind; those bound under another name (`import x as y`); and
        those that may not stand for themselves (`as`, `from m import x`)."""
        if self._imports is None:
            imported, aliased, renamed = set(), set(), set()
            for node in self.nodes.of(ast.Import, ast.ImportFrom):
                for alias in node.names:
                    imported.add((alias.asname or alias.name).split(".")[0])
                    if alias.asname:
                        aliased.add(alias.asname)
                    if alias.asname or isinstance(node, ast.ImportFrom):
                        renamed.add(alias.asname or alias.name)
            self._imports = (imported, aliased, renamed)
        return self._imports

    def scalar_call(self, func: ast.AST) -> bool:
        """Surely a call `_holds` takes for a plain value (`len(...)`, `x.is_ready()`)."""
        imported, aliased, renamed = self._imported()
        if isinstance(func, ast.Name):
            if func.id in imported:  # `from m import is_x` keeps the last name, `as` does not
                return func.id not in aliased and scalar_name(func.id)
            return func.id in SCALAR_CALLS or scalar_name(func.id)
        dotted = _ast_dotted(func)
        if dotted is None:
            return False
        if scalar_name(dotted):  # the last name is the attribute's, whatever the head is
            return True
        return dotted in SCALAR_CALLS and dotted.split(".")[0] not in renamed

    def may_copy(self, func: ast.AST) -> bool:
        dotted = _ast_dotted(func)
        if dotted is None:
            return False
        return dotted.rsplit(".", 1)[-1] in _COPY_NAMES or dotted.split(".")[0] in self._imported()[1]


class _Holds:
    """`_holds` over `ast`, for every attribute at once: the (attr, how) an expression
    may reference. A superset: any attribute of a referenced object counts as a bound
    method of it, and the callee's keeping is not judged here."""

    def __init__(self, scan: _Scan, names: dict) -> None:
        self.scan = scan
        self.names = names

    def refs(self, e: ast.AST) -> set:
        attr = self_attr(e)
        if attr is not None:
            return {attr}
        if type(e) is ast.Name:
            return self.names.get(e.id, set())
        return set()

    def __call__(self, e: ast.AST, depth: int) -> set:
        direct = self.refs(e)
        if direct:
            return {(a, "ref") for a in direct}
        kind = type(e)
        if kind is ast.Attribute:
            return {(a, "ref") for a in self.refs(e.value)}
        if kind is ast.Call:
            func = e.func
            if self.scan.scalar_call(func):
                return set()
            found = set()
            blocked = set()
            if isinstance(func, ast.Attribute):
                if depth == 0 and func.attr == "copy" and not e.args and not e.keywords:
                    found |= {(a, "copy") for a in self.refs(func.value)}
                root = func.value
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    blocked |= self.refs(root)
                    root = root.value
                blocked |= self.refs(root)
            copies = depth == 0 and self.scan.may_copy(func)
            for arg in (*e.args, *(k.value for k in e.keywords)):
                for a, how in self(arg.value if isinstance(arg, ast.Starred) else arg, depth + 1):
                    if a in blocked:
                        continue
                    found.add((a, "built"))
                    if copies and how == "ref":
                        found.add((a, "copy"))
            return found
        if kind in (ast.Tuple, ast.List, ast.Set):
            return {(a, "ref") for element in e.elts
                    for a, _ in self(element.value if isinstance(element, ast.Starred) else element,
                                     depth + 1)}
        if kind is ast.Dict:
            return {(a, "ref") for part in (*e.keys, *e.values) if part is not None
                    for a, _ in self(part, depth + 1)}
        if kind is ast.IfExp:
            return self(e.body, depth) | self(e.orelse, depth)
        if kind is ast.BoolOp:
            return {hit for value in e.values for hit in self(value, depth)}
        if kind is ast.NamedExpr:
            return self(e.value, depth)
        return set()


class ReleaseLeavesAliasPrefilter(Prefilter):
    code = "RL601"

    # The rule needs a method; the scan itself looks for one with a release name.
    triggers = ("def ",)

    scans = True

    @classmethod
    def scan(cls, nodes) -> tuple:
        """See `_Scan`: (classes judged in full, names of the methods that release in
        the others), or None when no function has a default release name."""
        return _Scan(nodes).found()

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        summary = getattr(data, "summary", None)
        found = cls.scanned(data)
        if found is None:
            # No `ast`, or no method with a default release name: the byte test, for
            # the configured names (only the other ones when there is a summary).
            names = [m for m in settings.release_methods
                     if summary is None or m not in DEFAULT_RELEASE_METHODS]
            return any(f"def {m}(".encode() in data for m in names) and any(
                t in data for t in _RELEASE_TOKENS
            )
        release_names = settings.release_methods
        judged, unjudged = found
        if any(name in release_names for name in unjudged):
            return True
        for methods, links in judged:
            for name, releases, drops in methods:
                if name not in release_names:
                    continue
                for a, kind in releases:
                    for b, target, how, via in links:
                        if target != a or b in drops:
                            continue
                        if how == "handed":
                            if kind != "clear" and via not in release_names:
                                return True
                        elif kind == "clear":
                            if how == "copy":
                                return True
                        elif how == "ref" or not b.lstrip("_").startswith(SCALAR_ATTRS):
                            return True
        return False
