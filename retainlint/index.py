"""The project index: what rules need to know about other files.

Built once per run over every checked file with the standard library's `ast` (about
ten times cheaper than libcst, and nothing here needs formatting): module names from
paths, each module's imports (relative ones made absolute), classes and their bases,
functions with their decorators, calls, `gc.freeze`/`gc.unfreeze` use and return
annotations. From those it derives project-wide facts: heavy classes (deriving from
`torch.nn.Module` through any chain of project classes, across files and re-exports),
cache-decorated functions (including project decorators that wrap `functools.lru_cache`),
and functions that freeze or unfreeze the GC heap directly or through other project
functions. Per-file summaries are plain data so they can cross process boundaries."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Optional

from retainlint.heavy import HEAVY_TYPES
from retainlint.imports import absolute_import

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


@dataclass
class FileSummary:
    path: str
    module: str
    imports: dict[str, str]  # local name -> absolute qualified name
    classes: dict[str, ClassSummary]
    functions: dict[str, FunctionSummary]
    bound_calls: dict[str, list[int]] = field(default_factory=dict)


@lru_cache(maxsize=4096)
def _is_package_dir(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "__init__.py"))


def module_name(path: str) -> str:
    """`pkg.sub.mod` for pkg/sub/mod.py, walking up while directories are packages."""
    path = os.path.abspath(path)
    directory, filename = os.path.split(path)
    stem = filename.rsplit(".", 1)[0]
    parts = [] if stem == "__init__" else [stem]
    while _is_package_dir(directory):
        directory, name = os.path.split(directory)
        parts.append(name)
        if not name:
            break
    return ".".join(reversed(parts)) or stem


# Attributes that are methods on any nn.Module / callable: `model.forward` is bound.
METHOD_NAMES = frozenset({"forward", "__call__", "__init__"})


def _getattr_of_method(value: ast.AST) -> bool:
    """`getattr(obj, "forward", ...)` and the like."""
    return (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
        and value.func.id == "getattr" and len(value.args) >= 2
        and isinstance(value.args[1], ast.Constant) and value.args[1].value in METHOD_NAMES
    )


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Summarizer:
    def __init__(self, path: str, tree: ast.Module, source: str) -> None:
        self.path = path
        self.source = source
        self.module = module_name(path)
        self.is_package = os.path.basename(path).startswith("__init__.")
        self.imports: dict[str, str] = {}
        self.tree = tree
        self.local = {
            n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.calls: list[ast.Call] = []
        self.assigns: list[ast.Assign] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                self.calls.append(node)
            elif isinstance(node, ast.Assign):
                self.assigns.append(node)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports.setdefault(alias.asname, alias.name)
                    else:
                        head = alias.name.split(".")[0]
                        self.imports.setdefault(head, head)
            elif isinstance(node, ast.ImportFrom):
                base = absolute_import(self.module, self.is_package, node.level, node.module)
                for alias in node.names:
                    if alias.name != "*":
                        self.imports.setdefault(alias.asname or alias.name, f"{base}.{alias.name}" if base else alias.name)

    def qualify(self, node: ast.AST) -> Optional[str]:
        name = _dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if head in self.imports:
            target = self.imports[head]
        elif head in self.local:
            target = f"{self.module}.{head}"
        else:
            return name
        return f"{target}.{rest}" if rest else target

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
        calls: set[str] = set()
        wraps_cache = False
        for statement in fn.body:
            for node in ast.walk(statement):
                if isinstance(node, ast.Call):
                    q = self.qualify(node.func)
                    if q:
                        calls.add(q)
                    # `lru_cache(maxsize=n)(fn)`, `functools.cache(fn)`: applies a cache
                    if isinstance(node.func, ast.Call) and self.qualify(node.func.func) in CACHE_DECORATORS:
                        wraps_cache = True
                    elif q in CACHE_DECORATORS and node.args and isinstance(node.args[0], ast.Name):
                        wraps_cache = True
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    self.qualify(d.func if isinstance(d, ast.Call) else d) in CACHE_DECORATORS
                    for d in node.decorator_list
                ):
                    wraps_cache = True  # a nested cached function, returned as the wrapper
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

    def bound_calls(self) -> dict[str, list[int]]:
        """Callee -> lines of calls passing something that may be a bound method."""
        found: dict[str, list[int]] = {}
        bound_names = {
            t.id for a in self.assigns for t in a.targets
            if isinstance(t, ast.Name) and (
                self._maybe_bound(a.value, set()) or _getattr_of_method(a.value))
        }
        loggers = {  # `self` of a logger lives as long as the process anyway
            id(node) for cls in ast.walk(self.tree) if isinstance(cls, ast.ClassDef)
            and any(self.qualify(b) in ("logging.Logger", "logging.LoggerAdapter") for b in cls.bases)
            for node in ast.walk(cls)
        }
        for call in self.calls:
            if id(call) in loggers:
                continue
            args = [*call.args, *(k.value for k in call.keywords)]
            if any(self._maybe_bound(a, bound_names) for a in args):
                q = self.qualify(call.func)
                if q:
                    found.setdefault(q, []).append(call.lineno)
        return found

    def summary(self) -> FileSummary:
        classes, functions = {}, {}
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[node.name] = self.function(node, self.module, False)
            elif isinstance(node, ast.ClassDef):
                qual = f"{self.module}.{node.name}"
                cls = ClassSummary(qual, self.path, node.lineno,
                                   [q for q in (self.qualify(b) for b in node.bases) if q])
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        cls.methods[item.name] = self.function(item, qual, True)
                classes[node.name] = cls
        return FileSummary(self.path, self.module, self.imports, classes, functions,
                           self.bound_calls())


def summarize(path: str, data: bytes) -> Optional[FileSummary]:
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    # absolute: summaries are cached and shared, whatever the current directory
    return _Summarizer(os.path.abspath(path), tree, data.decode("utf-8", "replace")).summary()


class ProjectIndex:
    def __init__(self, summaries: Iterable[FileSummary], heavy_types: Iterable[str] = ()) -> None:
        self.files: dict[str, FileSummary] = {}
        self.modules: dict[str, FileSummary] = {}
        self.classes: dict[str, ClassSummary] = {}
        self.functions: dict[str, FunctionSummary] = {}
        for s in summaries:
            self.files[os.path.abspath(s.path)] = s
            self.modules.setdefault(s.module, s)
            for c in s.classes.values():
                self.classes.setdefault(c.qualname, c)
                for m in c.methods.values():
                    self.functions.setdefault(m.qualname, m)
            for f in s.functions.values():
                self.functions.setdefault(f.qualname, f)
        self.heavy_types = frozenset(heavy_types)
        # cached function -> [(path, line)] of calls that may pass a bound method
        self.bound_callers: dict[str, list[tuple[str, int]]] = {}
        for summary in self.files.values():
            for callee, lines in summary.bound_calls.items():
                self.bound_callers.setdefault(self.resolve(callee) or callee, []).extend(
                    (summary.path, line) for line in lines)
        self.heavy_classes = self._heavy_classes()
        self.cache_decorators = self._cache_decorators()
        self.freezers, self.unfreezers = self._gc_effects()

    # -- names ---------------------------------------------------------------------
    def resolve(self, qualified: Optional[str], _depth: int = 0) -> Optional[str]:
        """Follow re-exports and aliases (`pkg.Model` -> `pkg.models.base.Model`)."""
        if not qualified or _depth > 10 or qualified in self.classes or qualified in self.functions:
            return qualified
        module, _, name = qualified.rpartition(".")
        summary = self.modules.get(module)
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
    def _heavy_classes(self) -> frozenset[str]:
        heavy: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, cls in self.classes.items():
                if name in heavy:
                    continue
                for base in cls.bases:
                    resolved = self.resolve(base)
                    if self._heavy_builtin(base) or self._heavy_builtin(resolved) or resolved in heavy:
                        heavy.add(name)
                        changed = True
                        break
        return frozenset(heavy)

    def _heavy_builtin(self, qualified: Optional[str]) -> bool:
        if not qualified:
            return False
        if qualified in HEAVY_TYPES or qualified in self.heavy_types:
            return True
        return (qualified.startswith("torch.nn.") and qualified.count(".") == 2
                and qualified.rsplit(".", 1)[1][:1].isupper())

    def is_heavy_class(self, qualified: Optional[str]) -> bool:
        resolved = self.resolve(qualified)
        return resolved in self.heavy_classes or self._heavy_builtin(resolved)

    def returns_heavy(self, qualified: Optional[str]) -> bool:
        """Is `qualified` a project function annotated to return a heavy type?"""
        f = self.functions.get(self.resolve(qualified) or "")
        return f is not None and any(self.is_heavy_class(r) for r in f.returns)

    def _cache_decorators(self) -> frozenset[str]:
        """Project functions that apply a cache decorator to what they wrap."""
        return frozenset(q for q, f in self.functions.items() if f.wraps_cache and not f.is_method)

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
    def heavy_names(self) -> frozenset[bytes]:
        """Simple names of heavy project classes, as bytes (for prefilters)."""
        if not hasattr(self, "_heavy_names"):
            self._heavy_names = frozenset(q.rsplit(".", 1)[1].encode() for q in self.heavy_classes)
        return self._heavy_names

    @property
    def cached_names(self) -> frozenset[bytes]:
        """Simple names of every cached module-level function (for prefilters)."""
        if not hasattr(self, "_cached_names"):
            self._cached_names = frozenset(
                f.qualname.rsplit(".", 1)[1].encode() for f in self.functions.values()
                if not f.is_method and any(self.is_cache_decorator(d) for d in f.decorators))
        return self._cached_names

    @property
    def cache_decorator_names(self) -> frozenset[bytes]:
        """Simple names of the project's own cache decorators (for prefilters)."""
        return frozenset(q.rsplit(".", 1)[1].encode() for q in self.cache_decorators)

    def _gc_effects(self) -> tuple[frozenset[str], frozenset[str]]:
        calls = {q: {self.resolve(c) for c in f.calls} for q, f in self.functions.items()}

        def closure(seed: str) -> set[str]:
            found = {q for q, cs in calls.items() if seed in cs}
            changed = True
            while changed:
                changed = False
                for q, cs in calls.items():
                    if q not in found and cs & found and not self.functions[q].is_method:
                        found.add(q)
                        changed = True
            return found

        unfreezers = closure(GC_UNFREEZE)
        freezers = {q for q in closure(GC_FREEZE) if q not in unfreezers}
        return frozenset(freezers), frozenset(unfreezers)


def build_index(files: dict[str, bytes], heavy_types: Iterable[str] = ()) -> ProjectIndex:
    return ProjectIndex((s for p, d in files.items() if (s := summarize(p, d)) is not None), heavy_types)
