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
import hashlib
import importlib
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Hashable, Iterable, Iterator, Optional, Sequence, TypeVar

from retainlint.core.gcpause import gc_paused
from retainlint.project.index_facts import _cache_decorators, _gc_effects, _heavy_classes, _outside_names
from retainlint.project.installed_types import Verdicts, known_verdicts
from retainlint.project.names import HEAVY_TYPES
from retainlint.project.memoizers import caches_per_instance, memoizes
from retainlint.project.module_names import module_name as module_name, module_names  # cache.py imports it here
from retainlint.project.nodes import FileNodes, dotted, module_level
from retainlint.project.recorded import _Recorded
from retainlint.core.source import MAX_PARSE_BYTES, read_source
from retainlint.project.retention import module_facts
from retainlint.project.summary_walk import _FUNCTION_DEFS, _FileWalk

if TYPE_CHECKING:
    from retainlint.project.prefilter import Prefilter

T = TypeVar("T")

# cachetools' function decorators keep what they are called with as functools' do, each
# bounded by a `maxsize` (128 unless given) and a replacement policy
_CACHETOOLS = frozenset(f"cachetools.func.{name}_cache" for name in ("lru", "lfu", "fifo", "rr", "mru", "ttl", "tlru"))
CACHE_DECORATORS = frozenset({"functools.lru_cache", "functools.cache", "async_lru.alru_cache", *_CACHETOOLS})
# maxsize defaults to 128 for these; functools.cache is unbounded.
_BOUNDED_BY_DEFAULT = frozenset({"functools.lru_cache", "async_lru.alru_cache", *_CACHETOOLS})


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


class _Summarizer(_FileWalk):
    """A file's summary from what its walk collected: its functions (decorators, calls,
    caches applied), its classes (bases, methods, what they hold), and the calls that may
    pass a bound method or the instance itself."""

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
        for node in module_level(self.tree.body):
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
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Call) and self.qualify(node.value.func) in CACHE_DECORATORS:
                # `remember_last = lru_cache(1)`: a cache decorator under the project's name
                name = node.targets[0].id
                functions[name] = FunctionSummary(f"{self.module}.{name}", self.path, node.lineno,
                                                  node.col_offset + 1, [], set(), [], wraps_cache=True)
        bound, instances = self.bound_calls()
        return FileSummary(self.path, self.module, self.imports, classes, functions,
                           bound, instance_calls=instances)


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


# Other files' parsed sources kept by `ProjectIndex.source`.
SOURCES_KEPT = 16

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
        names, decorators = _outside_names(self)
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
        self.heavy_classes = _heavy_classes(self)
        self.cache_decorators = _cache_decorators(self) | outside.cache_decorators
        self.freezers, self.unfreezers = _gc_effects(self)
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
        # see `source`: the least recently read first (a dict keeps insertion order)
        self._sources: dict[str, Optional[tuple[ast.Module, bytes]]] = {}
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
        code (what a callee does with its argument), read as the run reads files (no link
        out of the project, nothing over the size cap). None if it cannot be read or
        parsed. The last `SOURCES_KEPT` files read are kept: a process checking a
        thousand files asks for a few hundred others, and their trees weigh ten times
        their text."""
        if path in self._sources:
            found = self._sources.pop(path)
        else:
            try:
                offered = self._offered.pop(os.path.abspath(path), None)
                data = offered if offered is not None else read_source(path)
                if len(data) > MAX_PARSE_BYTES:
                    raise ValueError("too large")
                found = (ast.parse(data), data)
            except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                found = None
            if len(self._sources) >= SOURCES_KEPT:
                del self._sources[next(iter(self._sources))]
        self._sources[path] = found  # the most recent last
        return found

    def tree(self, path: str) -> Optional[ast.Module]:
        """The `ast` of a project file (see `source`)."""
        found = self.source(path)
        return found[0] if found is not None else None

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

    # -- derived facts (worked out by index_facts when the index is built) ---------
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
