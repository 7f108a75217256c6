"""What the prefilters of the checks of what a release keeps (RL610 to RL616) read of a
file: its classes with a release-shaped method and what their attributes may be built by
(`scan`, one `ast` pass per file for all of them), and the byte and index tests of each
shape. No libcst."""

from __future__ import annotations

import ast
import os
import re
from typing import Optional

from retainlint.core.config import DEFAULT_RELEASE_METHODS
from retainlint.project.names import HEAVY_TYPES, TENSOR_FACTORIES, UNION_WRAPPERS, absolute_import
from retainlint.project.nodes import dotted as _dotted
from retainlint.project.prefilter import words
from retainlint.project.release_shape import exception_params, exception_slots, may_release_parts, release_shaped
from retainlint.project.retention_shapes import CLOSING_BASES, OPEN_RESOURCES, WORKER_POOLS


# The scan is stored once, under RL610's code; RL611's prefilter and rule read it there.
PARTS_SCAN = "RL610"

# Calls that hand back an object that exists already: what they return is not built here.
ACCESSORS = frozenset(
    {"next", "getattr", "get", "pop", "setdefault", "cast", "peek", "first", "min", "max", "popitem"}
)

# -- prefilter: the file's shape, from the project index's `ast` pass ------------------
# A finding needs a class with a possible release method and an attribute it assigns
# the result of a call that may build something heavy (`_origin`). The scan records,
# per class, those method names and what the calls name (callee, annotations); whether
# a name is heavy is asked of the project index in `might_match`, qualified with the
# file's imports as `FileContext.imports` may read them (any import of the name).
_MAX_ORIGIN = 12  # `_origin` stops at _MAX_DEPTH; deeper only lets more through


def _annotation_makers(ann: Optional[ast.AST], wrappers: tuple = (), depth: int = 0) -> list:
    """("ann", name, wrappers) for each name `is_heavy_annotation` would judge:
    `X`, `X | Y`, `"X"`, and `W[X, Y]` when every `W` around it is Optional/Union."""
    if ann is None or depth > _MAX_ORIGIN:
        return []
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            parsed = ast.parse(ann.value.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return []
        return _annotation_makers(parsed, wrappers, depth + 1)
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _annotation_makers(ann.left, wrappers, depth + 1) + \
            _annotation_makers(ann.right, wrappers, depth + 1)
    if isinstance(ann, ast.Subscript):
        wrapper = _dotted(ann.value)
        if wrapper is None:
            return []
        items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        return [m for item in items for m in _annotation_makers(item, (*wrappers, wrapper), depth + 1)]
    name = _dotted(ann)
    return [("ann", name, wrappers)] if name else []


def _unreleasable_part(summary, settings, index) -> bool:
    """A class of the file that the index calls heavy (a model is), with no method of a
    release name, held by a project class whose release method may release its other
    parts in place (`may_release_parts`)."""
    names = tuple(n for n in settings.release_methods if n != "__del__")
    return any(
        not any(n in c.methods for n in names) and index.is_heavy_class(c.qualname)
        and index.ask(may_release_parts, (c.qualname, names))
        for c in summary.classes.values()
    )


def _inherits_release(summary, settings, index) -> bool:
    """A class of the file with no method of a release name that inherits one from a
    project base (the rule judges whether that release only flips flags)."""
    names = tuple(n for n in settings.release_methods if n != "__del__")

    def defines(qualified: str, depth: int) -> bool:
        info = index.classes.get(qualified)
        if info is None or depth > _MAX_ORIGIN:
            return False
        return any(n in info.methods for n in names) or any(
            defines(index.resolve(b) or b, depth + 1) for b in info.bases)

    return any(
        not any(n in c.methods for n in names) and any(defines(index.resolve(b) or b, 1) for b in c.bases)
        for c in summary.classes.values()
    )


def _stores_exception(summary, scanned: tuple, settings, index) -> bool:
    """A class of the file with a method of a release name that may store, or inherit a
    method storing, an exception handed to it (`may_store_exception`)."""
    names = [n for n in settings.release_methods if n != "__del__"]
    return any(any(n in c.methods for n in names) and may_store_exception(c.qualname, summary, scanned, index)
               for c in summary.classes.values())


def may_store_exception(qualified: str, summary, scanned: tuple, index) -> bool:
    """Might the class `qualified` of the file `summary` (scanned: its RL602 scan) store,
    or inherit a method storing, an exception handed to it: its own or a base's of this
    file (the scan), a base's in another file (that file's scan, else `exception_slots`)?"""
    storing = dict(scanned[4])
    todo, seen = [qualified], set()
    while todo:
        q = todo.pop()
        base = index.classes.get(q)
        if base is None or q in seen:
            continue
        seen.add(q)
        if base.path != summary.path:
            other = index.files.get(os.path.abspath(base.path))
            scan = other.scans.get(PARTS_SCAN) if other is not None else None
            if scan is None:
                if index.ask(exception_slots, q):
                    return True
                continue
            if q.rsplit(".", 1)[1] in dict(scan[4]):
                return True
        elif q.rsplit(".", 1)[1] in storing:
            return True
        todo += [index.resolve(b) or b for b in base.bases]
    return False


def _names_heavy_type(data: bytes, settings, index) -> bool:
    """The byte test for files without a scan: `torch`, `transformers`, a configured
    heavy type's last component, or a heavy project class's simple name."""
    heavy = ("torch", "transformers", *(t.rsplit(".", 1)[-1] for t in settings.heavy_types))
    return any(t.encode() in data for t in heavy) or not index.heavy_names.isdisjoint(words(data))


class _Scan:
    def __init__(self, nodes) -> None:
        self.nodes = nodes
        self.functions: dict[str, ast.AST] = {}  # top-level functions and classes by name
        self.classes: dict[str, ast.ClassDef] = {}

    def found(self) -> Optional[tuple]:
        """None when no function is named as a default release method, else (judged
        classes: ((release-shaped method names, makers), ...), top-level class bases:
        ((name, (dotted base, ...)), ...), imports: ((local, level, module, name), ...),
        release-shaped method names of the classes not judged)."""
        names = {fn.name for fn in self.nodes.of(ast.FunctionDef)}
        names.update(fn.name for fn in self.nodes.of(ast.AsyncFunctionDef))
        if names.isdisjoint(DEFAULT_RELEASE_METHODS):
            return None  # the scan stops there; `might_match` tests other names' bytes
        classes = self.nodes.of(ast.ClassDef)
        for n in self.nodes.tree.body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[n.name] = n
            elif isinstance(n, ast.ClassDef):
                self.classes[n.name] = n
        # Classes with a release-shaped method of a default name are judged in full; for
        # the others, the names of such methods are enough (through if configured).
        candidates: dict[int, tuple] = {}  # id(method) -> its class's entry
        entries = []
        unjudged: set[str] = set()
        for c in classes:
            methods = [s for s in c.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
            releases = tuple(sorted({m.name for m in methods if release_shaped(m)}))
            if not any(r in DEFAULT_RELEASE_METHODS and r != "__del__" for r in releases):
                unjudged.update(releases)
                continue
            entry = (c, methods, releases, set())
            entries.append(entry)
            for m in methods:
                candidates[id(m)] = entry
        unjudged.discard("__del__")
        if not entries:
            return (), (), (), tuple(sorted(unjudged)), self._exception_classes()
        # Assignments, by method of a judged class (nested scopes left out).
        spans = [(c.lineno, c.end_lineno) for c, *_ in entries]
        assigns: dict[int, list] = {}
        owner = self.nodes.owner
        for node in self.nodes.of(ast.Assign, ast.AnnAssign, ast.NamedExpr):
            line = node.lineno
            if any(start <= line <= end for start, end in spans):
                fn = owner(node)
                if fn is not None and id(fn) in candidates:
                    assigns.setdefault(id(fn), []).append(node)
        result = []
        for c, methods, releases, makers in entries:
            names = {m.name for m in methods}
            by_name = {m.name: m for m in methods}
            for fn in methods:
                found = assigns.get(id(fn))
                if not found:
                    continue
                origin = _Origin(self, fn, found, c, by_name)
                for node in found:
                    targets = node.targets if type(node) is ast.Assign else (
                        [node.target] if type(node) is ast.AnnAssign and node.value is not None else [])
                    for t in targets:
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                                and t.value.id == "self" and t.attr not in names:
                            makers.update(origin(node.value, getattr(node, "annotation", None), 0))
            if makers:
                result.append((releases, tuple(sorted(makers))))
        if not result:
            return (), (), (), tuple(sorted(unjudged)), self._exception_classes()
        heads = {name.split(".")[0] for _, makers in result for _, name, wrappers in makers
                 for name in (name, *wrappers)}
        # Classes of this file named there, and their bases in this file: heavy by their
        # bases (`local_heavy_classes`).
        bases: dict[str, tuple] = {}
        todo = [h for h in heads if h in self.classes]
        while todo:
            name = todo.pop()
            if name not in bases:
                bases[name] = tuple(d for d in map(_dotted, self.classes[name].bases) if d)
                heads.update(d.split(".")[0] for d in bases[name])
                todo.extend(d for d in bases[name] if d in self.classes)
        return (tuple(result), tuple(sorted(bases.items())), self._imports(heads), tuple(sorted(unjudged)),
                self._exception_classes())

    def _exception_classes(self) -> tuple:
        """Top-level classes of the file whose methods store an exception handed to them
        (`self.x = exc`, `release_shape.exception_params`), with their bases as written."""
        found: dict[str, tuple] = {}
        owner = self.nodes.owner
        for node in self.nodes.of(ast.Assign):
            if type(node.value) is not ast.Name or not any(
                    type(t) is ast.Attribute and type(t.value) is ast.Name and t.value.id == "self"
                    for t in node.targets):
                continue
            fn = owner(node)
            cls = owner(fn) if fn is not None else None
            if type(cls) is ast.ClassDef and self.classes.get(cls.name) is cls \
                    and node.value.id in exception_params(fn):
                found[cls.name] = tuple(d for d in map(_dotted, cls.bases) if d)
        return tuple(sorted(found.items()))

    def _imports(self, heads: set) -> tuple:
        """Every import binding one of `heads`: (local, level, module or "", name or None
        for `import`). The libcst import table keeps the first one it walks to; all are
        tried, so that its walking order need not be copied."""
        found: set[tuple] = set()
        for node in self.nodes.of(ast.Import, ast.ImportFrom):
            for alias in node.names:
                if isinstance(node, ast.Import):
                    local = alias.asname or alias.name.split(".")[0]
                    entry = (local, 0, alias.asname and alias.name or local, None)
                else:
                    if alias.name == "*":
                        continue
                    local = alias.asname or alias.name
                    entry = (local, node.level, node.module or "", alias.name)
                if local in heads:
                    found.add(entry)
        return tuple(sorted(found, key=repr))


class _Origin:
    """`_origin` over `ast`: what the calls an attribute may be built by name."""

    def __init__(self, scan: _Scan, fn: ast.AST, assigns: list, cls: ast.ClassDef, methods: dict) -> None:
        self.scan = scan
        self.fn = fn
        self.cls = cls
        self.methods = methods
        args = fn.args
        self.params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        self.assigns = assigns
        self._locals: Optional[dict] = None

    def locals(self, name: str) -> list:
        if self._locals is None:
            self._locals = {}
            for node in self.assigns:
                kind = type(node)
                if kind is ast.Assign:
                    for t in node.targets:
                        if type(t) is ast.Name:
                            self._locals.setdefault(t.id, []).append((node.value, None))
                elif type(node.target) is ast.Name:
                    self._locals.setdefault(node.target.id, []).append(
                        (node.value, node.annotation if kind is ast.AnnAssign else None))
        return self._locals.get(name, [])

    def __call__(self, value, ann, depth: int) -> list:
        if value is None or depth > _MAX_ORIGIN:
            return []
        if isinstance(value, ast.Call):
            func = value.func
            word = func.attr if isinstance(func, ast.Attribute) else (
                func.id if isinstance(func, ast.Name) else None)
            if word in ACCESSORS:
                return []
            found = _annotation_makers(ann)
            name = _dotted(func)
            if name is not None:
                found.append(("call", name, ()))
            callee = self.callee(func)
            if callee is not None:
                found += _annotation_makers(callee.returns)
            return found
        if isinstance(value, ast.IfExp):
            return self(value.body, ann, depth + 1) + self(value.orelse, ann, depth + 1)
        if isinstance(value, ast.BoolOp):
            return self(value.values[-1], ann, depth + 1)
        if isinstance(value, ast.Name):
            if value.id in ("self", "None") or value.id in self.params:
                return []
            return [m for v, a in self.locals(value.id) for m in self(v, a, depth + 1)]
        return []

    def callee(self, func) -> Optional[ast.AST]:
        """A function or method of this file that `func` names (`HeavyOracle._callee`)."""
        if isinstance(func, ast.Name):
            return self.scan.functions.get(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = func.value.id
            if owner in ("self", "cls"):
                return self.methods.get(func.attr)
            target = self.scan.classes.get(owner)
            if target is not None:
                return next((s for s in reversed(target.body) if isinstance(
                    s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == func.attr), None)
        return None


class _Heaviness:
    """`HeavyOracle.is_heavy_qualname` for one file, names qualified as the file's
    libcst import table would; index lookups are recorded as usual."""

    def __init__(self, data, summary, scanned, settings, index) -> None:
        _, bases, imports, *_ = scanned
        self.summary = summary
        self.index = index
        self.bases = dict(bases)
        self.configured = frozenset(settings.heavy_types)
        path = (getattr(data, "path", "") or summary.path).replace("\\", "/")
        path = path.removesuffix(".pyi").removesuffix(".py")
        self.configured_here = frozenset(
            t.rsplit(".", 1)[1] for t in self.configured
            if "." in t and (path == t.rsplit(".", 1)[0].replace(".", "/")
                             or path.endswith("/" + t.rsplit(".", 1)[0].replace(".", "/"))))
        is_package = os.path.basename(summary.path).startswith("__init__.")
        self.imports: dict[str, list[str]] = {}  # local name -> what it may be bound to
        for local, level, module, name in imports:
            if name is None:
                self.imports.setdefault(local, []).append(module)
                continue
            if level and summary.module:
                base = absolute_import(summary.module, is_package, level, module or None)
            else:
                base = "." * level + module
            sep = "" if not base or base.endswith(".") else "."
            self.imports.setdefault(local, []).append(f"{base}{sep}{name}")
        self._local: dict[str, bool] = {}

    def qualnames(self, dotted: str) -> list[str]:
        """What `FileContext.qualname` may give for a dotted name."""
        head, _, rest = dotted.partition(".")
        targets = self.imports.get(head)
        if not targets:
            return [dotted]
        return [f"{target}.{rest}" if rest else target for target in targets]

    def absolute(self, q: str) -> str:
        head = q.split(".", 1)[0]
        if head in self.summary.classes or head in self.summary.functions:
            return f"{self.summary.module}.{q}"
        return q

    def heavy_name(self, q: Optional[str], depth: int = 0) -> bool:
        if not q:
            return False
        if q in HEAVY_TYPES or q in self.configured or q in self.configured_here:
            return True
        if q.startswith("torch.nn.") and q.count(".") == 2 and q.rsplit(".", 1)[1][:1].isupper():
            return True
        if q in self.bases and self.local_heavy(q, depth):
            return True
        return self.index.is_heavy_class(self.absolute(q))

    def local_heavy(self, name: str, depth: int) -> bool:
        """A class of this file heavy by its bases (`local_heavy_classes`)."""
        if name not in self._local:
            self._local[name] = False  # base cycles
            self._local[name] = depth < _MAX_ORIGIN and (
                self.index.is_heavy_class(f"{self.summary.module}.{name}")
                or any(self.heavy_name(q, depth + 1) for b in self.bases[name] for q in self.qualnames(b)))
        return self._local[name]

    def maker(self, maker: tuple) -> bool:
        kind, name, wrappers = maker
        if kind == "ann":
            if not all(UNION_WRAPPERS.intersection(self.qualnames(w)) for w in wrappers):
                return False
            return any(self.heavy_name(q) for q in self.qualnames(name))
        return any(q in TENSOR_FACTORIES or q in WORKER_POOLS or q in OPEN_RESOURCES or q == "open"
                   or self.heavy_name(q) or self.index.returns_heavy(self.absolute(q))
                   for q in self.qualnames(name))


# Registering cleanup on an ExitStack (which the rule checks something closes).
_STACK_REGISTRATIONS = (b".callback(", b".push(", b".enter_context(", b".push_async_callback(",
                        b".push_async_exit(", b".enter_async_context(")


def registers_on_exit_stack(data: bytes) -> bool:
    return b"ExitStack" in data and any(r in data for r in _STACK_REGISTRATIONS)


# A part freed in place (`self.viewer.close()`, `adapter_free(self._adapter)`).
_FREES_A_PART = re.compile(
    rb"self\.\w+\.(?:close|free|release|shutdown|unload|destroy|dispose|terminate|cleanup|teardown)\("
    rb"|(?:free|release|destroy|dealloc\w*|dispose|close|unload)\(self\.\w+")


# Verbs by which an object acquires a resource of its own in place (`self.model.load()`,
# no item handed in), with the calls that give it back. `start` (threads, most of them
# daemons) and `init`/`setup` (configuration) are left out: on the development trees
# they are mostly not resources.
ACQUIRES = {
    "load": frozenset({"unload"}),
    "open": frozenset({"close"}),
    "connect": frozenset({"disconnect", "close"}),
    "acquire": frozenset({"release"}),
    "allocate": frozenset({"free", "deallocate", "release"}),
}
# ... called as a statement on an attribute, with no positional argument.
_ACQUIRES_IN_PLACE = re.compile(
    rb"self\.\w+\.(?:" + b"|".join(v.encode() for v in ACQUIRES) + rb")\(\s*(?:\)|\*\*|\w+\s*=[^=])")


def frees_a_part_elsewhere(data: bytes, settings) -> bool:
    """A release method next to code freeing a part in place: a method other than the
    release path may free a part the release keeps."""
    return any(f"def {m}(".encode() in data for m in settings.release_methods if m != "__del__") \
        and _FREES_A_PART.search(data) is not None


def scan_of(nodes) -> Optional[tuple]:
    """See `_Scan.found`: classes with a release-shaped method and what their attributes
    may be built by, and what qualifies those names."""
    return _Scan(nodes).found()


def acquires_in_place(data: bytes) -> bool:
    return _ACQUIRES_IN_PLACE.search(data) is not None


def unreleasable_part(data: bytes, settings, index) -> bool:
    summary = _offered(data, index)
    return summary is not None and _unreleasable_part(summary, settings, index)


def inherits_flag_release(data: bytes, settings, index) -> bool:
    summary = _offered(data, index)
    return summary is not None and _inherits_release(summary, settings, index)


def stores_exception(data: bytes, settings, index) -> bool:
    summary = _offered(data, index)
    found = summary.scans.get(PARTS_SCAN) if summary is not None else None
    return found is not None and _stores_exception(summary, found, settings, index)


def keeps_heavy_attribute(data: bytes, settings, index) -> bool:
    """A class with a configured release method (not `__del__`) and an attribute
    assigned a call that may build a heavy object: a tensor factory, a heavy type or
    project class, a function annotated to return one, or annotated heavy itself."""
    summary = _offered(data, index)
    found = summary.scans.get(PARTS_SCAN) if summary is not None else None
    if found is None:
        # No `ast`, or no method with a default release name: the byte test, for
        # the configured names (only the other ones when there is a summary).
        names = [m for m in settings.release_methods
                 if summary is None or m not in DEFAULT_RELEASE_METHODS]
        return any(f"def {m}(".encode() in data for m in names) and \
            _names_heavy_type(data, settings, index)
    names = [n for n in settings.release_methods if n != "__del__"]
    if any(name in names for name in found[3]):
        return True
    classes = [makers for releases, makers in found[0] if any(r in names for r in releases)]
    if not classes:
        return False
    heaviness = _Heaviness(data, summary, found, settings, index)
    judged: dict[tuple, bool] = {}
    for makers in classes:
        for maker in makers:
            if maker not in judged:
                judged[maker] = heaviness.maker(maker)
            if judged[maker]:
                return True
    return False


# A class deriving from a library class whose `close()` is its release, and a call that
# opens a resource: such a class may release with that `close()` and keep what it opened.
_CLOSING_BASE = re.compile(rb"^\s*class\s+\w+\s*\([^)]*\b(?:"
                           + b"|".join(sorted({q.rpartition(".")[2].encode() for q in CLOSING_BASES}))
                           + rb")\b", re.MULTILINE)
_OPENS = re.compile(rb"\b(?:" + b"|".join(sorted({q.rpartition(".")[2].encode() for q in OPEN_RESOURCES}))
                    + rb")\(")


def inherits_library_close(data: bytes) -> bool:
    """RL610's byte test for a class without a release method of its own: one deriving
    from `requests.Session`, `logging.Handler`, ... that opens a resource."""
    return _CLOSING_BASE.search(data) is not None and _OPENS.search(data) is not None


def _offered(data: bytes, index):
    """The file's summary, its source offered to the index (the questions may read it)."""
    summary = getattr(data, "summary", None)
    if summary is not None:
        index.offer_source(summary.path, bytes(data))
    return summary
