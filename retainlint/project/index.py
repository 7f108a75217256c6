"""The project index: what rules need to know about other files.

Built once per run over every checked file with the standard library's `ast` (about
ten times cheaper than libcst, and nothing here needs formatting): module names from
paths, each module's imports (relative ones made absolute), classes and their bases,
functions with their decorators, calls, `gc.freeze`/`gc.unfreeze` use and return
annotations, what each class assigns to `self.x`. From those it derives project-wide
facts: heavy classes (deriving from `torch.nn.Module`, or holding tensors or heavy
objects, through any chain of project classes, across files and re-exports),
cache-decorated functions (including project decorators that wrap `functools.lru_cache`),
and functions that freeze or unfreeze the GC heap directly or through other project
functions. Per-file summaries are plain data so they can cross process boundaries."""

from __future__ import annotations

import ast
import bisect
import hashlib
import importlib
import os
from sys import intern
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Hashable, Iterable, Iterator, Optional, Sequence, TypeVar

from retainlint.core.gcpause import gc_paused
from retainlint.project.installed_types import Verdicts, known_verdicts
from retainlint.project.names import HEAVY_TYPES, TENSOR_FACTORIES, absolute_import
from retainlint.project.memoizers import caches_per_instance, memoizes
from retainlint.project.module_names import module_name as module_name, module_names  # cache.py imports it here
from retainlint.project.nodes import OWNERS, FileNodes, dotted
from retainlint.core.source import MAX_PARSE_BYTES, read_source
from retainlint.project.retention import module_facts

if TYPE_CHECKING:
    from retainlint.project.prefilter import Prefilter

T = TypeVar("T")

CACHE_DECORATORS = frozenset({"functools.lru_cache", "functools.cache", "async_lru.alru_cache"})
# maxsize defaults to 128 for these; functools.cache is unbounded.
_BOUNDED_BY_DEFAULT = frozenset({"functools.lru_cache", "async_lru.alru_cache"})
GC_FREEZE, GC_UNFREEZE = "gc.freeze", "gc.unfreeze"


@dataclass
class FunctionSummary:
    qualname: str
    path: str
    line: int
    column: int  # 1-based
    decorators: list[str]  # qualified names (calls reduced to their callee)
    calls: set[str]  # qualified names of everything called in the body
    returns: list[str]  # qualified names the return annotation allows (X, X | None, Optional[X])
    is_method: bool = False
    bounded: Optional[bool] = None  # for cached functions: maxsize given and not None
    wraps_cache: bool = False  # the body applies a cache decorator (a decorator factory)


@dataclass
class ClassSummary:
    qualname: str
    path: str
    line: int
    bases: list[str]
    methods: dict[str, FunctionSummary] = field(default_factory=dict)
    # `self.x = f(...)` in any method -> {"x": [qualified f, ...]}: what the class holds
    attributes: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class FileSummary:
    path: str
    module: str
    imports: dict[str, str]  # local name -> absolute qualified name
    classes: dict[str, ClassSummary]
    functions: dict[str, FunctionSummary]
    bound_calls: dict[str, list[int]] = field(default_factory=dict)
    # callee -> lines of calls passing the instance itself (`self`, or a name bound to it)
    instance_calls: dict[str, list[int]] = field(default_factory=dict)
    # rule code -> what its `Rule.scan` found here (rules whose triggers the file has)
    scans: dict[str, object] = field(default_factory=dict)
    # the retention model's facts of this module (`retention.ModuleFacts.plain`)
    retention: tuple = ()


# Attributes that are methods on any nn.Module / callable: `model.forward` is bound.
METHOD_NAMES = frozenset({"forward", "__call__", "__init__"})


def _getattr_of_method(value: ast.AST) -> bool:
    """`getattr(obj, "forward", ...)` and the like."""
    return (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
        and value.func.id == "getattr" and len(value.args) >= 2
        and isinstance(value.args[1], ast.Constant) and value.args[1].value in METHOD_NAMES
    )




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


class _Summarizer:
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
        self.local = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, *_FUNCTION_DEFS))}
        self.calls: list[ast.Call] = []  # outside logger classes: for bound_calls
        self.assigns: list[ast.Assign] = []
        self.bodies: dict[int, _Body] = {}  # id(function node) -> its contents
        for node in tree.body:  # module-level imports win over function-local ones
            if isinstance(node, _IMPORTS):
                self._import(node)
        self._scan()

    def _import(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imports.setdefault(alias.asname, alias.name)
                else:
                    head = alias.name.split(".")[0]
                    self.imports.setdefault(head, head)
            return
        base = absolute_import(self.module, self.is_package, node.level, node.module)
        for alias in node.names:
            if alias.name != "*":
                self.imports.setdefault(alias.asname or alias.name,
                                        f"{base}.{alias.name}" if base else alias.name)

    def _scan(self) -> None:
        # (node, the summarized function it is in, inside a logger class, is a method,
        #  the innermost function/class/lambda around it)
        by_type, owner_of = self.nodes.by_type, self.nodes.owner_of
        fields = _CHILD_FIELDS
        top_level = {id(n) for n in self.tree.body}  # `node in tree.body` per def: quadratic
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
            _Summarizer._self_assign(body, func.value, call.args[position])

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

    def function(self, fn, prefix: str, is_method: bool) -> FunctionSummary:
        decorators, bounded = [], None
        for d in fn.decorator_list:
            target = d.func if isinstance(d, ast.Call) else d
            q = self.qualify(target)
            if not q:
                continue
            decorators.append(q)
            if q in CACHE_DECORATORS:
                size = None
                if isinstance(d, ast.Call):
                    given = [k.value for k in d.keywords if k.arg == "maxsize"] or d.args[:1]
                    size = given[0] if given else None
                if size is None:
                    bounded = q in _BOUNDED_BY_DEFAULT
                else:
                    bounded = not (isinstance(size, ast.Constant) and size.value is None)
        body = self.bodies[id(fn)]
        calls: set[str] = set()
        wraps_cache = False
        for node in body.calls:
            q = self.qualify(node.func)
            if q:
                calls.add(q)
            # `lru_cache(maxsize=n)(fn)`, `functools.cache(fn)`: applies a cache
            if isinstance(node.func, ast.Call) and self.qualify(node.func.func) in CACHE_DECORATORS:
                wraps_cache = True
            elif q in CACHE_DECORATORS and node.args and isinstance(node.args[0], ast.Name):
                wraps_cache = True
        if any(self.qualify(d.func if isinstance(d, ast.Call) else d) in CACHE_DECORATORS
               for nested in body.defs for d in nested.decorator_list) \
                and not caches_per_instance(body.defs):
            wraps_cache = True  # a nested cached function, returned as the wrapper
        if not wraps_cache and (body.defs or is_method) and memoizes(
                fn, body.defs, self.nodes.owner_of.get(id(fn)) if is_method else None):
            wraps_cache = True  # a hand-written memo: `cache[args] = func(*args)`
        return FunctionSummary(
            qualname=f"{prefix}.{fn.name}",
            path=self.path,
            line=fn.lineno,
            column=fn.col_offset + 1,
            decorators=decorators,
            calls=calls,
            returns=self.alternatives(fn.returns),
            is_method=is_method,
            bounded=bounded,
            wraps_cache=wraps_cache,
        )

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

    def _maybe_bound(self, arg: ast.AST, bound_names: set[str]) -> bool:
        """`self`; `x.m` where `m` is `forward`/`__call__`/`__init__` or called as a method
        on the same receiver in this file, and `x` is not an imported module or a class;
        a name assigned from such an attribute or a `getattr(...)` (anywhere in the file)."""
        if isinstance(arg, ast.Name):
            return arg.id == "self" or arg.id in bound_names
        if isinstance(arg, ast.Attribute):
            base = arg.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if not isinstance(base, ast.Name) or base.id in self.imports or base.id in self.local:
                return False
            if base.id[:1].isupper():
                return False
            if arg.attr in METHOD_NAMES:
                return True
            # `self.x(...)` may be a callable attribute: only other receivers count here
            return base.id != "self" and f"{ast.unparse(arg.value)}.{arg.attr}(" in self.source
        return False

    def bound_calls(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        """Callee -> lines of calls passing something that may be a bound method, and
        callee -> lines of those passing the instance itself, which no unwrapping of
        bound methods can help (calls inside logger classes left out: a logger lives as
        long as the process)."""
        found: dict[str, list[int]] = {}
        instances: dict[str, list[int]] = {}
        bound_names = {
            t.id for a in self.assigns for t in a.targets
            if isinstance(t, ast.Name) and (
                self._maybe_bound(a.value, set()) or _getattr_of_method(a.value))
        }
        self_names = {"self"} | {
            t.id for a in self.assigns for t in a.targets
            if isinstance(t, ast.Name) and isinstance(a.value, ast.Name) and a.value.id == "self"}
        for call in self.calls:
            args = [*call.args, *(k.value for k in call.keywords)]
            if any(self._maybe_bound(a, bound_names) for a in args):
                q = self.qualify(call.func)
                if q:
                    found.setdefault(q, []).append(call.lineno)
                    if any(isinstance(a, ast.Name) and a.id in self_names for a in args):
                        instances.setdefault(q, []).append(call.lineno)
        return found, instances

    def summary(self) -> FileSummary:
        classes, functions = {}, {}
        for node in self.tree.body:
            if isinstance(node, _FUNCTION_DEFS):
                functions[node.name] = self.function(node, self.module, False)
            elif isinstance(node, ast.ClassDef):
                qual = f"{self.module}.{node.name}"
                methods = [item for item in node.body if isinstance(item, _FUNCTION_DEFS)]
                cls = ClassSummary(qual, self.path, node.lineno,
                                   [q for q in (self.qualify(b) for b in node.bases) if q],
                                   attributes=self.attribute_makers(methods))
                for item in methods:
                    cls.methods[item.name] = self.function(item, qual, True)
                classes[node.name] = cls
        bound, instances = self.bound_calls()
        return FileSummary(self.path, self.module, self.imports, classes, functions,
                           bound, instance_calls=instances)


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


def summarize(path: str, data: bytes, scanners: Sequence[type[Prefilter]]) -> Optional[FileSummary]:
    """The file's summary, with the structural facts each of `scanners` (rules'
    prefilters: every rule's, whichever are selected, since summaries are cached across
    runs) finds in it; None if it does not parse."""
    if len(data) > MAX_PARSE_BYTES:  # its tree would take gigabytes; linting reports it
        return None
    with gc_paused():  # the tree dies with `_summarize`'s frame, before collections resume
        return _summarize(path, data, scanners)


def _summarize(path: str, data: bytes, scanners: Sequence[type[Prefilter]]) -> Optional[FileSummary]:
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    # absolute: summaries are cached and shared, whatever the current directory
    summarizer = _Summarizer(os.path.abspath(path), tree, data.decode("utf-8", "replace"), data)
    summary = summarizer.summary()
    summary.scans = _scans(summarizer.nodes, scanners)
    summary.retention = module_facts(summarizer.module, tree, data, summarizer.nodes,
                                     summarizer.imports).plain()
    summarizer.nodes.release()
    return summary


# What `scans` holds for a rule whose scan raised: its prefilter lets the file through.
SCAN_FAILED = "<scan failed>"


def _scans(nodes: FileNodes, scanners: Sequence[type[Prefilter]]) -> dict[str, object]:
    """The scanners' structural facts, for those whose triggers are here. A scan that
    fails costs only its own prefilter, not the file's summary."""
    found: dict[str, object] = {}
    for rule in scanners:
        if rule.scans and rule.triggered_by(nodes.source):
            try:
                found[rule.code] = rule.scan(nodes)
            except Exception:  # noqa: BLE001 - the libcst pass will see what it is
                found[rule.code] = SCAN_FAILED
    return found


@dataclass
class Consulted:
    files: dict[str, Optional[str]] = field(default_factory=dict)  # path -> digest (filled later)
    absent: set[tuple[str, str]] = field(default_factory=set)  # (table, name) looked up in vain
    everything: bool = False  # iterated a whole table: depends on every file
    # project-wide questions asked through `ProjectIndex.ask`: ("module:function", key) -> answer
    answers: dict = field(default_factory=dict)


class _Recorded(dict):
    """A lookup table of the index that, while a lint is recorded, notes which files'
    facts were consulted (values carry their `path`; `modules` and `files` values are
    file summaries). In an index restored from a snapshot, an entry is loaded with its
    file's summary the first time it is looked up (`pending`: key -> that file)."""

    log: Optional[Consulted] = None
    name: str = ""
    pending: Optional[dict[str, str]] = None
    load: Optional[Callable[[Optional[str]], None]] = None  # a file's summary; None: all

    def _note(self, key, value) -> None:
        if value is None:
            self.log.absent.add((self.name, key))
        else:
            self.log.files.setdefault(value.path, None)

    def _value(self, key):
        value = dict.get(self, key)
        if value is None and self.pending:
            path = self.pending.get(key)
            if path is not None:
                self.load(path)
                value = dict.get(self, key)
        return value

    def _complete(self) -> None:
        if self.pending:
            self.load(None)

    def get(self, key, default=None):
        value = self._value(key)
        if self.log is not None:
            self._note(key, value)
        return default if value is None else value

    def __getitem__(self, key):
        value = self._value(key)
        if self.log is not None:
            self._note(key, value)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key) -> bool:
        value = self._value(key)
        if self.log is not None:
            self._note(key, value)
        return value is not None

    def __iter__(self):
        self._complete()
        if self.log is not None:
            self.log.everything = True
        return dict.__iter__(self)

    def items(self):
        self._complete()
        if self.log is not None:
            self.log.everything = True
        return dict.items(self)

    def values(self):
        self._complete()
        if self.log is not None:
            self.log.everything = True
        return dict.values(self)


_TABLES = ("files", "modules", "classes", "functions")
# Derived facts a snapshot carries, so that a restored index need not recompute them.
_FACTS = ("heavy_types", "heavy_factories", "bound_callers", "instance_callers", "heavy_classes", "cache_decorators", "freezers",
          "unfreezers", "heavy_names", "cached_names")


class ProjectIndex:
    def __init__(self, summaries: Iterable[FileSummary], heavy_types: Iterable[str] = (),
                 installed: Optional[Callable[[set[str], set[str]], Verdicts]] = None) -> None:
        """`installed`: what installed packages say of the names the project imports from
        outside itself (see installed_types); the shipped table answers without it."""
        self._tables()
        self._fingerprint: Optional[str] = None
        self.answers: dict[tuple[str, Hashable], Hashable] = {}  # see `ask`
        for s in summaries:
            self.files[os.path.abspath(s.path)] = s
            self.modules.setdefault(s.module, s)
            for c in s.classes.values():
                self.classes.setdefault(c.qualname, c)
                for m in c.methods.values():
                    self.functions.setdefault(m.qualname, m)
            for f in s.functions.values():
                self.functions.setdefault(f.qualname, f)
        # The other names a file is imported under (a script folder's sibling import, a
        # namespace folder around a regular package) come after every file's own name.
        for s in list(dict.values(self.files)):
            for alias in module_names(s.path)[1:]:
                self.modules.setdefault(alias, s)
        names, decorators = self._outside_names()
        outside = known_verdicts(names)
        if installed is not None:
            read = installed(names, decorators)
            outside = Verdicts(outside.heavy_types | read.heavy_types,
                               outside.heavy_factories | read.heavy_factories, read.cache_decorators)
        self.heavy_types = frozenset(heavy_types) | outside.heavy_types
        self.heavy_factories = outside.heavy_factories  # functions outside returning a heavy type
        # cached function -> [(path, line)] of calls that may pass a bound method
        self.bound_callers: dict[str, list[tuple[str, int]]] = {}
        # ... of those, calls that pass the instance itself
        self.instance_callers: dict[str, list[tuple[str, int]]] = {}
        for summary in self.files.values():
            for callers, calls in ((self.bound_callers, summary.bound_calls),
                                   (self.instance_callers, summary.instance_calls)):
                for callee, lines in calls.items():
                    callers.setdefault(self.resolve(callee) or callee, []).extend(
                        (summary.path, line) for line in lines)
        self.heavy_classes = self._heavy_classes()
        self.cache_decorators = self._cache_decorators() | outside.cache_decorators
        self.freezers, self.unfreezers = self._gc_effects()
        # Simple names, as bytes, for prefilters (computed now: a lint may be recorded later).
        self.heavy_names = frozenset(q.rsplit(".", 1)[1].encode() for q in (
            *self.heavy_classes, *outside.heavy_types, *outside.heavy_factories))
        self.cached_names = frozenset(  # cached module-level functions
            f.qualname.rsplit(".", 1)[1].encode() for f in self.functions.values()
            if not f.is_method and any(self.is_cache_decorator(d) for d in f.decorators))

    def _tables(self) -> None:
        self.files: dict[str, FileSummary] = _Recorded()
        self.modules: dict[str, FileSummary] = _Recorded()
        self.classes: dict[str, ClassSummary] = _Recorded()
        self.functions: dict[str, FunctionSummary] = _Recorded()
        for name in _TABLES:
            getattr(self, name).name = name
        self._memos: dict[str, object] = {}  # see `memo`
        self._sources: dict[str, Optional[tuple[ast.Module, bytes]]] = {}  # see `source`
        self._offered: dict[str, bytes] = {}  # see `offer_source`

    # -- what analyses work out once per index ------------------------------------------
    def memo(self, name: str, make: Callable[[], T]) -> T:
        """A table or cache an analysis keeps for this index (`make()` the first time): the
        index does not change during a run, and the memo goes with it, so an edited file
        in a later run (an editor, a test session) never meets a stale answer."""
        found = self._memos.get(name)
        if found is None:
            found = self._memos[name] = make()
        return found  # type: ignore[return-value]

    def source(self, path: str) -> Optional[tuple[ast.Module, bytes]]:
        """The `ast` and bytes of a project file, for analyses that read another file's
        code (what a callee does with its argument); read once per index, as the run reads
        files (no link out of the project, nothing over the size cap). None if it cannot
        be read or parsed."""
        if path not in self._sources:
            try:
                offered = self._offered.pop(os.path.abspath(path), None)
                data = offered if offered is not None else read_source(path)
                if len(data) > MAX_PARSE_BYTES:
                    raise ValueError("too large")
                self._sources[path] = (ast.parse(data), data)
            except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                self._sources[path] = None
        return self._sources[path]

    def offer_source(self, path: str, data: bytes) -> None:
        """The bytes a lint of `path` reads (an editor's buffer, a test's source): `source`
        parses these rather than the file on disk, so that what an analysis reads of the
        linted file is what is linted. One file at a time: the one being linted."""
        if path not in self._sources:
            self._offered = {os.path.abspath(path): data}

    # -- snapshots: the same index again without reading every summary ---------------
    def snapshot(self) -> dict:
        """Plain data from which `restore` rebuilds this index: the derived facts, and
        which file's summary holds each table entry."""
        holders: dict[str, list[tuple[str, str]]] = {}
        for name in _TABLES:
            for key, value in dict.items(getattr(self, name)):
                holders.setdefault(value.path, []).append((name, key))
        facts = {name: getattr(self, name) for name in _FACTS}
        return {"facts": facts, "holders": holders, "fingerprint": self.fingerprint(),
                "answers": dict(self.answers)}

    @classmethod
    def restore(cls, snapshot: dict, summary_of: Callable[[str], Optional[FileSummary]]) -> "ProjectIndex":
        """The index `snapshot` was taken of, given each file's summary on demand (only
        the files whose entries are looked up are read; iterating a table reads all)."""
        index = cls.__new__(cls)
        index._tables()
        for name, value in snapshot["facts"].items():
            setattr(index, name, value)
        index._fingerprint = snapshot["fingerprint"]
        # The same index, so the same answers: a question asked last time (by the file
        # now edited, say) is not asked of every summary again.
        index.answers = dict(snapshot["answers"])
        holders: dict[str, list[tuple[str, str]]] = snapshot["holders"]
        for name in _TABLES:
            table = getattr(index, name)
            table.pending = {}
            table.load = lambda path: index._load(path, holders, summary_of)
        for path, entries in holders.items():
            for name, key in entries:
                getattr(index, name).pending[key] = path
        return index

    def _load(self, path: Optional[str], holders, summary_of) -> None:
        for path in ([path] if path is not None else list({p for name in _TABLES
                                                         for p in getattr(self, name).pending.values()})):
            summary = summary_of(path)
            if summary is None:
                raise RuntimeError(f"{path}: its summary is missing from the cache")
            found = {"files": {os.path.abspath(summary.path): summary},
                     "modules": dict.fromkeys((summary.module, *module_names(summary.path)), summary),
                     "classes": {}, "functions": {}}
            for c in summary.classes.values():
                found["classes"][c.qualname] = c
                for m in c.methods.values():
                    found["functions"][m.qualname] = m
            for f in summary.functions.values():
                found["functions"][f.qualname] = f
            for name, key in holders.get(path, ()):
                table = getattr(self, name)
                # An alias the file no longer has (a project marker came or went) stays absent.
                if table.pending.pop(key, None) is not None and key in found[name]:
                    dict.__setitem__(table, key, found[name][key])

    # -- what a file's findings depend on (for the result cache) -----------------
    @contextmanager
    def recording(self) -> Iterator[Consulted]:
        """Note every file whose facts are looked up (and every name looked up in vain)
        while the block runs: a file's findings depend on those, and on `fingerprint()`."""
        consulted = Consulted()
        self._log(consulted)
        try:
            yield consulted
        finally:
            self._log(None)

    def _log(self, consulted: Optional[Consulted]) -> None:
        for table in (self.files, self.modules, self.classes, self.functions):
            table.log = consulted

    def ask(self, question: Callable[["ProjectIndex", Hashable], Hashable], key: Hashable):
        """Answer a project-wide question (`is X cleared anywhere?`), a module-level
        function of (index, key) that may read every file. A result cached while it was
        asked depends on the answer, not on every file read to find it: the answer is
        noted, and the question asked again before the result is reused. The index does
        not change, so each answer is worked out once (`answers`, kept in snapshots)."""
        asked = (f"{question.__module__}:{question.__qualname__}", key)
        consulted = self.files.log
        self._log(None)
        try:
            answer = self._answer(asked, question)
        finally:
            self._log(consulted)
        if consulted is not None:
            consulted.answers[asked] = answer
        return answer

    def _answer(self, asked: tuple[str, Hashable], question: Callable) -> Hashable:
        if asked not in self.answers:
            self.answers[asked] = question(self, asked[1])
        return self.answers[asked]

    def still_valid(self, consulted: "Consulted", digests: dict[str, str]) -> bool:
        """Would the lookups noted in `consulted` give the same answers in this index?
        `digests`: path -> content digest of every file now."""
        if consulted.everything:
            return False
        if not all(digests.get(p) == d for p, d in consulted.files.items()):
            return False
        if any(name in getattr(self, table) for table, name in consulted.absent):
            return False
        for (name, key), answer in consulted.answers.items():
            module, _, function = name.partition(":")
            try:
                question = getattr(importlib.import_module(module), function)
            except (ImportError, AttributeError):
                return False
            if self._answer((name, key), question) != answer:
                return False
        return True

    def fingerprint(self) -> str:
        """A digest of the project-wide facts that any file's findings may depend on."""
        if self._fingerprint is None:
            self._fingerprint = self._facts_digest()
        return self._fingerprint

    def _facts_digest(self) -> str:
        cached = sorted((q, f.bounded) for q, f in dict.items(self.functions)
                        if any(self.is_cache_decorator(d) for d in f.decorators))
        callers = sorted((q, sorted(self.bound_callers.get(q, ())),
                          sorted(self.instance_callers.get(q, ()))) for q, _ in cached)
        facts = (sorted(self.heavy_classes), sorted(self.cache_decorators), cached, callers,
                 sorted(self.freezers), sorted(self.unfreezers), sorted(self.heavy_types),
                 sorted(self.heavy_factories))
        return hashlib.sha1(repr(facts).encode()).hexdigest()

    # -- names ---------------------------------------------------------------------
    def resolve(self, qualified: Optional[str], _depth: int = 0) -> Optional[str]:
        """Follow re-exports and aliases (`pkg.Model` -> `pkg.models.base.Model`)."""
        if not qualified or _depth > 10 or qualified in self.classes or qualified in self.functions:
            return qualified
        module, _, name = qualified.rpartition(".")
        summary = self.modules.get(module)
        if summary is not None and summary.module != module:  # imported under an alias
            return self.resolve(f"{summary.module}.{name}", _depth + 1)
        if summary is not None and name in summary.imports:
            target = summary.imports[name]
            if target != qualified:
                return self.resolve(target, _depth + 1)
        if module and module not in self.modules:  # `pkg.sub.Cls` via a re-exported module
            head = self.resolve(module, _depth + 1)
            if head and head != module:
                return self.resolve(f"{head}.{name}", _depth + 1)
        return qualified

    def module_of(self, path: str) -> str:
        summary = self.files.get(os.path.abspath(path))
        return summary.module if summary is not None else module_name(path)

    # -- derived facts -------------------------------------------------------------
    def _outside_names(self) -> tuple[set[str], set[str]]:
        """Names from outside the checked tree the project imports, derives from, calls
        or annotates with; and those it decorates functions with."""
        # Each file's own name only: an alias (a script's `helpers`) resolves to one of those.
        tops = {s.module.partition(".")[0] for s in dict.values(self.files)}
        names: set[str] = set()
        decorators: set[str] = set()
        for summary in dict.values(self.files):
            names.update(summary.imports.values())
            for cls in summary.classes.values():
                names.update(cls.bases)
                for makers in cls.attributes.values():
                    names.update(makers)
            for f in (*summary.functions.values(),
                      *(m for c in summary.classes.values() for m in c.methods.values())):
                names.update(f.calls)
                names.update(f.returns)
                decorators.update(f.decorators)
        names = {r for r in map(self.resolve, names) if r and r.partition(".")[0] not in tops}
        decorators = {r for r in map(self.resolve, decorators) if r and r.partition(".")[0] not in tops}
        return names, decorators

    def _heavy_classes(self) -> frozenset[str]:
        """Project classes deriving from a heavy type, or holding a heavy attribute (one
        assigned a tensor factory's result, a heavy class instance, or the result of a
        function annotated to return one), through any chain of project classes."""
        heavy: set[str] = set()
        # Names are resolved once per class; heaviness then spreads from the classes that
        # are heavy by themselves to those that depend on them (bases, makers, returns).
        dependents: dict[str, list[str]] = {}
        for name, cls in dict.items(self.classes):
            depends: set[str] = set()
            for base in cls.bases:
                resolved = self.resolve(base)
                if self._heavy_builtin(base) or self._heavy_builtin(resolved):
                    heavy.add(name)
                    break
                depends.add(resolved)
            else:
                for callee in {c for makers in cls.attributes.values() for c in makers}:
                    resolved = self.resolve(callee)
                    if (callee in TENSOR_FACTORIES or resolved in TENSOR_FACTORIES
                            or self._heavy_builtin(callee) or self._heavy_builtin(resolved)
                            or resolved in self.heavy_factories):
                        heavy.add(name)
                        break
                    depends.add(resolved)
                    f = dict.get(self.functions, resolved or "")
                    for r in f.returns if f is not None else ():
                        if self._heavy_builtin(r):
                            heavy.add(name)
                            break
                        depends.add(self.resolve(r))
                    if name in heavy:
                        break
            if name not in heavy:
                for d in depends:
                    dependents.setdefault(d, []).append(name)
        work = list(heavy)
        while work:
            for name in dependents.get(work.pop(), ()):
                if name not in heavy:
                    heavy.add(name)
                    work.append(name)
        return frozenset(heavy)

    def _heavy_builtin(self, qualified: Optional[str]) -> bool:
        if not qualified:
            return False
        if qualified in HEAVY_TYPES or qualified in self.heavy_types:
            return True
        return (qualified.startswith("torch.nn.") and qualified.count(".") == 2
                and qualified.rsplit(".", 1)[1][:1].isupper())

    def ancestors(self, bases: Iterable[Optional[str]]) -> Iterator[ClassSummary]:
        """The project classes among `bases` and above them, each once."""
        todo, seen = list(bases), set()
        while todo:
            q = self.resolve(todo.pop())
            if not q or q in seen or q not in self.classes:
                continue
            seen.add(q)
            summary = self.classes[q]
            yield summary
            todo.extend(summary.bases)

    def is_heavy_class(self, qualified: Optional[str]) -> bool:
        resolved = self.resolve(qualified)
        return resolved in self.heavy_classes or self._heavy_builtin(resolved)

    def returns_heavy(self, qualified: Optional[str]) -> bool:
        """Is `qualified` a project function annotated to return a heavy type?"""
        resolved = self.resolve(qualified) or ""
        if resolved in self.heavy_factories:  # from an installed package, or the table
            return True
        f = self.functions.get(resolved)
        return f is not None and any(self.is_heavy_class(r) for r in f.returns)

    def _cache_decorators(self) -> frozenset[str]:
        """Project functions that apply a cache decorator to what they wrap, and classes
        whose `__call__` memoizes the function they were given."""
        return frozenset(
            (q.rpartition(".")[0] if f.is_method else q) for q, f in self.functions.items()
            if f.wraps_cache and (not f.is_method or q.endswith(".__call__")))

    def is_cache_decorator(self, qualified: Optional[str]) -> bool:
        resolved = self.resolve(qualified)
        return resolved in CACHE_DECORATORS or resolved in self.cache_decorators

    def cached_function(self, qualified: Optional[str]) -> Optional[FunctionSummary]:
        resolved = self.resolve(qualified)
        f = self.functions.get(resolved) if resolved else None
        if f is not None and any(self.is_cache_decorator(d) for d in f.decorators):
            return f
        return None

    @property
    def cache_decorator_names(self) -> frozenset[bytes]:
        """Simple names of the project's own cache decorators (for prefilters)."""
        return frozenset(q.rsplit(".", 1)[1].encode() for q in self.cache_decorators)

    def _gc_effects(self) -> tuple[frozenset[str], frozenset[str]]:
        # Every function's called names in one string: a substring search (in C) finds
        # the few functions that may call a name before any call is resolved.
        functions = list(dict.items(self.functions))
        starts, chunks, at = [], [], 0
        for _, f in functions:
            chunk = "\0" + "\0".join(f.calls) + "\0"
            starts.append(at)
            chunks.append(chunk)
            at += len(chunk)
        called = "".join(chunks)

        def callers_of(last: str) -> Iterator[tuple[str, FunctionSummary]]:
            for needle in ("\0" + last + "\0", "." + last + "\0"):
                at = called.find(needle)
                while at != -1:
                    yield functions[bisect.bisect_right(starts, at) - 1]
                    at = called.find(needle, at + 1)

        def closure(seed: str) -> set[str]:
            """Functions calling `seed`, then module-level functions calling those, ..."""
            found: set[str] = set()
            targets = {seed}
            while targets:
                lasts = {t.rpartition(".")[2] for t in targets}
                more = set()
                for last in lasts:
                    for q, f in callers_of(last):
                        if q in found or q in more or (seed not in targets and f.is_method):
                            continue  # past the first step, only module-level functions
                        if any(c.rpartition(".")[2] in lasts and self.resolve(c) in targets
                               for c in f.calls):
                            more.add(q)
                found |= more
                targets = more
            return found

        unfreezers = closure(GC_UNFREEZE)
        freezers = {q for q in closure(GC_FREEZE) if q not in unfreezers}
        return frozenset(freezers), frozenset(unfreezers)


def qualified_in(summary: Optional[FileSummary], node: ast.AST) -> Optional[str]:
    """`node`, a dotted name, as the project names it seen from `summary`'s file: its head
    through the file's imports, or prefixed with the file's module when defined there."""
    name = dotted(node)
    if name is None:
        return None
    head, dot, rest = name.partition(".")
    if summary is not None:
        if head in summary.imports:
            head = summary.imports[head]
        elif head in summary.classes or head in summary.functions:
            head = f"{summary.module}.{head}"
    return head + dot + rest


def instantiated_in_functions(index: ProjectIndex, qualified: str, outside: str = "") -> bool:
    """Does a function of the project (outside the file `outside`) call `qualified`? A
    question for `ProjectIndex.ask`."""
    return any(index.resolve(c) == qualified for f in index.functions.values()
               if f.path != outside for c in f.calls)

