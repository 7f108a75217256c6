"""The project-wide facts the index derives from every file's summary when it is built:
names from outside the project, heavy classes, cache decorators, and the functions
that freeze or unfreeze the GC heap."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Iterator

from retainlint.project.names import TENSOR_FACTORIES

if TYPE_CHECKING:
    from retainlint.project.index import FunctionSummary, ProjectIndex

GC_FREEZE, GC_UNFREEZE = "gc.freeze", "gc.unfreeze"


def _outside_names(index: ProjectIndex) -> tuple[set[str], set[str]]:
    """Names from outside the checked tree the project imports, derives from, calls
    or annotates with; and those it decorates functions with."""
    # Each file's own name only: an alias (a script's `helpers`) resolves to one of those.
    tops = {s.module.partition(".")[0] for s in dict.values(index.files)}
    names: set[str] = set()
    decorators: set[str] = set()
    for summary in dict.values(index.files):
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
    names = {r for r in map(index.resolve, names) if r and r.partition(".")[0] not in tops}
    decorators = {r for r in map(index.resolve, decorators) if r and r.partition(".")[0] not in tops}
    return names, decorators


def _heavy_classes(index: ProjectIndex) -> frozenset[str]:
    """Project classes deriving from a heavy type, or holding a heavy attribute (one
    assigned a tensor factory's result, a heavy class instance, or the result of a
    function annotated to return one), through any chain of project classes."""
    heavy: set[str] = set()
    # Names are resolved once per class; heaviness then spreads from the classes that
    # are heavy by themselves to those that depend on them (bases, makers, returns).
    dependents: dict[str, list[str]] = {}
    for name, cls in dict.items(index.classes):
        depends: set[str] = set()
        for base in cls.bases:
            resolved = index.resolve(base)
            if index._heavy_builtin(base) or index._heavy_builtin(resolved):
                heavy.add(name)
                break
            depends.add(resolved)
        else:
            for callee in {c for makers in cls.attributes.values() for c in makers}:
                resolved = index.resolve(callee)
                if (callee in TENSOR_FACTORIES or resolved in TENSOR_FACTORIES
                        or index._heavy_builtin(callee) or index._heavy_builtin(resolved)
                        or resolved in index.heavy_factories):
                    heavy.add(name)
                    break
                depends.add(resolved)
                f = dict.get(index.functions, resolved or "")
                for r in f.returns if f is not None else ():
                    if index._heavy_builtin(r):
                        heavy.add(name)
                        break
                    depends.add(index.resolve(r))
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


def _cache_decorators(index: ProjectIndex) -> frozenset[str]:
    """Project functions that apply a cache decorator to what they wrap, and classes
    whose `__call__` memoizes the function they were given."""
    return frozenset(
        (q.rpartition(".")[0] if f.is_method else q) for q, f in index.functions.items()
        if f.wraps_cache and (not f.is_method or q.endswith(".__call__")))


def _gc_effects(index: ProjectIndex) -> tuple[frozenset[str], frozenset[str]]:
    # Every function's called names in one string: a substring search (in C) finds
    # the few functions that may call a name before any call is resolved.
    functions = list(dict.items(index.functions))
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
                    if any(c.rpartition(".")[2] in lasts and index.resolve(c) in targets
                           for c in f.calls):
                        more.add(q)
            found |= more
            targets = more
        return found

    unfreezers = closure(GC_UNFREEZE)
    freezers = {q for q in closure(GC_FREEZE) if q not in unfreezers}
    return frozenset(freezers), frozenset(unfreezers)
