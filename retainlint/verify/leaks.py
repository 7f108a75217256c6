"""What a test leaves alive: the objects made during a test (or a fixture's lifetime) that
survive a full collection, with their size, the chain that holds them and where that chain
was made.

Watched objects: `torch.nn.Module`s, tensors and numpy arrays of at least `min_bytes`,
instances of the listed types (and their subclasses) - reported from the first test - and
instances of the project's own classes, reported once they survive in `growth_tests` tests
(a type whose live count grows across tests). "Made during the test" is "absent from the
snapshot taken before it": ids of the watched objects alive then.

Never imports torch or numpy: they are looked up in `sys.modules` (a suite that does not
import them has no tensors to watch).
"""

from __future__ import annotations

import collections
import gc
import os
import sys
import tracemalloc
import types
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from retainlint.verify.probe import MiB, cuda_allocated, storage_key

HEAVY = ("module", "tensor", "ndarray", "listed")

# Types never worth following when sizing what a survivor owns or which survivors another
# one holds: through them everything in the process is reachable.
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.CodeType,
           types.FrameType, types.MethodType, weakref.ref)


@dataclass
class LeakSettings:
    mode: Optional[str] = None  # None (off), "report", "fail"
    types: tuple = ()  # dotted class names (`pkg.mod.Class`) always watched
    min_bytes: int = MiB  # tensors and arrays smaller than this are not watched
    growth_tests: int = 3  # a project type surviving in this many tests is reported
    explain: int = 5  # holder chains searched per test (each walks the heap)
    json_path: Optional[str] = None


@dataclass
class Survivor:
    kind: str  # module, tensor, ndarray, listed, growth
    what: str
    cpu_bytes: int = 0
    cuda_bytes: int = 0
    holder: Optional[dict] = None  # holders.Holder.as_dict(), with attribution's rule/finding
    tests: list = field(default_factory=list)  # for a growing type: the tests it survived

    def as_dict(self) -> dict:
        h = self.holder or {}
        rule = h.get("rule")
        finding = h.get("finding")
        if finding:
            verdict = f"confirmed at runtime: {rule} reported at {finding}"
        elif h.get("how") in ("frame", "exception"):
            verdict = "held by the test run itself (a frame or a failed test's traceback)"
        elif rule:
            verdict = (f"no rule covers this: runtime only (the chain has the shape {rule} looks for, "
                       "but retainlint check reports nothing on its files)")
        else:
            verdict = "no rule covers this: runtime only"
        out = {"kind": self.kind, "what": self.what, "cpu_bytes": self.cpu_bytes,
               "cuda_bytes": self.cuda_bytes, "held_by": h.get("chain"), "how": h.get("how"),
               "created_at": h.get("created"), "rule": rule, "finding": finding,
               "finding_path": h.get("finding_path"), "finding_line": h.get("finding_line"),
               "runtime_only": not finding and h.get("how") not in ("frame", "exception"),
               "verdict": verdict}
        if self.tests:
            out["tests"] = list(self.tests)
        return out


class Seen:
    """Objects by identity, proof against a reused id: a weak reference where the type
    takes one (a freed model's id is soon a new model's)."""

    def __init__(self, objs: Iterable[Any] = ()):
        self._refs: dict[int, Optional[weakref.ref]] = {}
        for o in objs:
            self.add(o)

    def add(self, o: Any) -> None:
        try:
            self._refs[id(o)] = weakref.ref(o)
        except TypeError:
            self._refs[id(o)] = None

    def __contains__(self, o: Any) -> bool:
        if id(o) not in self._refs:
            return False
        ref = self._refs[id(o)]
        return ref is None or ref() is o

    def __len__(self) -> int:
        return len(self._refs)


class Watch:
    """Which live objects are watched, and what a survivor owns."""

    def __init__(self, settings: LeakSettings, root: Path):
        self.settings = settings
        self.root = str(root.resolve()).rstrip(os.sep) + os.sep
        self.listed = set(settings.types)
        self._kinds: "weakref.WeakKeyDictionary[type, Optional[str]]" = weakref.WeakKeyDictionary()

    # -- classification ------------------------------------------------------------------
    def _type_kind(self, cls: type) -> Optional[str]:
        try:
            return self._kinds[cls]
        except KeyError:
            pass
        except TypeError:
            return None
        kind = self._classify(cls)
        try:
            self._kinds[cls] = kind
        except TypeError:
            pass
        return kind

    def _classify(self, cls: type) -> Optional[str]:
        torch = sys.modules.get("torch")
        if torch is not None:
            if issubclass(cls, torch.nn.Module):
                return "module"
            if issubclass(cls, torch.Tensor):
                return "tensor"
        mro = getattr(cls, "__mro__", (cls,))
        if self.listed and any(f"{c.__module__}.{c.__qualname__}" in self.listed for c in mro):
            return "listed"
        module = sys.modules.get(getattr(cls, "__module__", "") or "")
        f = getattr(module, "__file__", None)
        if isinstance(f, str) and os.path.realpath(f).startswith(self.root) \
                and f"{os.sep}site-packages{os.sep}" not in f:
            return "project"
        return None

    def kind(self, o: Any) -> Optional[str]:
        kind = self._type_kind(type(o))
        if kind == "tensor":
            try:
                if o.untyped_storage().nbytes() < self.settings.min_bytes:
                    return None
            except Exception:
                return None
        return kind

    def watched(self) -> list:
        """Every watched object alive now. Arrays are not tracked by gc: they are found
        among the referents of dicts (attributes, globals, registries) and of watched objects
        (the inline attributes of a project object); one in a list or tuple only is missed."""
        kinds: dict = {}  # this scan's type -> kind: a plain dict, faster than the weak one
        out = []
        holders: list = []  # what may hold an array: dicts and watched objects
        with warnings.catch_warnings():  # touching some torch objects warns
            warnings.simplefilter("ignore")
            np = sys.modules.get("numpy")
            nd = np.ndarray if np is not None else None
            for o in gc.get_objects():
                cls = type(o)
                try:
                    kind = kinds[cls]
                except KeyError:
                    kind = kinds[cls] = None if issubclass(cls, type) else self._type_kind(cls)
                if kind is not None:
                    if kind != "tensor" or self.kind(o) is not None:
                        out.append(o)
                if nd is not None and (kind is not None or cls is dict):
                    holders.append(o)
            # one call for all the holders' referents: a call per dict took most of the scan
            arrays = [r for r in gc.get_referents(*holders) if type(r) is nd] if holders else []
            holders.clear()
        if arrays:
            floor = self.settings.min_bytes
            seen = {id(o) for o in out}
            for a in arrays:
                if id(a) not in seen and a.base is None and a.nbytes >= floor:
                    seen.add(id(a))
                    out.append(a)
        return out

    def snapshot(self) -> Seen:
        return Seen(self.watched())

    def kind_of_survivor(self, o: Any) -> str:
        np = sys.modules.get("numpy")
        if np is not None and type(o) is np.ndarray:
            return "ndarray"
        return self.kind(o) or "project"

    # -- what a survivor owns --------------------------------------------------------------
    @staticmethod
    def owned(o: Any, limit: int = 50_000) -> list:
        """What `o` reaches through data (attributes, containers, tensors), never through
        classes, modules or functions (through those everything is reachable)."""
        seen = {id(o)}
        out = [o]
        q = collections.deque([o])
        while q and len(out) < limit:
            for c in gc.get_referents(q.popleft()):
                if id(c) in seen or isinstance(c, _OPAQUE):
                    continue
                seen.add(id(c))
                out.append(c)
                q.append(c)
        return out

    @staticmethod
    def size(owned: Iterable[Any]) -> tuple[int, int]:
        """(CPU bytes, CUDA bytes) of the tensor storages, arrays and byte buffers owned."""
        torch = sys.modules.get("torch")
        np = sys.modules.get("numpy")
        storages: dict = {}
        cpu = 0
        for x in owned:
            if torch is not None and isinstance(x, torch.Tensor):
                try:
                    key, nbytes = storage_key(x)
                except Exception:
                    continue
                storages[key] = nbytes
            elif np is not None and type(x) is np.ndarray and x.base is None:
                cpu += x.nbytes
            elif isinstance(x, (bytes, bytearray)):
                cpu += sys.getsizeof(x)
        cuda = sum(n for k, n in storages.items() if k[0] == "cuda")
        return cpu + sum(n for k, n in storages.items() if k[0] != "cuda"), cuda


def _order(watch: Watch, objs: list) -> list:
    """Modules first, biggest first (a model before its layers), then listed types, then
    tensors and arrays: a survivor another one owns is reported through its owner."""
    rank = {"module": 0, "listed": 1, "tensor": 2, "ndarray": 3, "project": 4}
    torch = sys.modules.get("torch")

    def key(o: Any) -> tuple:
        kind = watch.kind_of_survivor(o)
        width = -sum(1 for _ in o.modules()) if torch is not None and kind == "module" else 0
        return rank.get(kind, 5), width

    return sorted(objs, key=key)


def held_by_fixtures(values: Iterable[Any], limit: int = 200_000) -> set:
    """Ids of what the live fixtures of wider scope own (their values and all they reach
    through data): theirs until their own teardown."""
    seen: set = set()
    q = collections.deque()
    for v in values:
        if id(v) not in seen:
            seen.add(id(v))
            q.append(v)
    while q and len(seen) < limit:
        for c in gc.get_referents(q.popleft()):
            if id(c) not in seen and not isinstance(c, _OPAQUE):
                seen.add(id(c))
                q.append(c)
    return seen


class Traces:
    """Allocation tracebacks of the objects made since tracemalloc (re)started, read in one
    pass the first time one is asked for; then tracing stops when it is ours (`owned`): the
    heap walks that follow allocate a lot, and tracing would slow them tenfold."""

    def __init__(self, owned: bool):
        self.owned = owned
        self._by_id: Optional[dict] = None

    def _read(self) -> dict:
        out: dict = {}
        if not tracemalloc.is_tracing():
            return out
        objects = gc.get_objects()
        # values kept in dicts (a count, a size) are not gc-tracked: asked too, with the keys
        held = gc.get_referents(*[o for o in objects if type(o) is dict])
        untracked = [v for v, tracked in zip(held, map(gc.is_tracked, held)) if not tracked]
        held.clear()
        for many in (objects, untracked):
            for o, tb in zip(many, map(tracemalloc.get_object_traceback, many)):
                if tb is not None:
                    out.setdefault(id(o), tb)
        objects.clear()
        if self.owned:
            tracemalloc.stop()
        return out

    def __call__(self, o: Any) -> Any:
        if self._by_id is None:
            self._by_id = self._read()
        return self._by_id.get(id(o))

    def clear(self) -> None:
        self._by_id = None


def survivors(watch: Watch, now: list, before: Seen, exclude: set, skip: list, inside: Iterable[Path],
              reported: Seen, traces: Traces) -> tuple[list[Survivor], list]:
    """Of the watched objects alive after a collection (`now`), the heavy ones not in `before` nor in
    `reported`, nor owned by the fixtures of wider scope (`exclude`: ids), each explained
    once (its owner's report covers what it owns), and the new objects of project types
    (for growth). Returns (heavy survivors, [project-type objects]); the watched objects
    the survivors own are added to `reported`."""
    fresh = [o for o in now if o not in before and o not in reported and id(o) not in exclude]
    if not fresh:
        return [], []
    heavy, project, found = [], [], []
    covered: set = set()
    for o in _order(watch, fresh):
        kind = watch.kind_of_survivor(o)
        if kind == "project":
            project.append(o)
            continue
        if id(o) in covered:
            continue
        owned = watch.owned(o)
        covered.update(id(x) for x in owned)
        for x in owned:
            if watch.kind(x) is not None:
                reported.add(x)
        cpu, cuda = watch.size(owned)
        del owned
        heavy.append(o)
        found.append(Survivor(kind, _what(o), cpu, cuda))
    del o
    fresh.clear()
    box = heavy[:watch.settings.explain]
    heavy.clear()
    for s, holder in zip(found, explain(box, skip + [heavy, project], inside, traces)):
        s.holder = holder
    return found, project


def _what(o: Any) -> str:
    from retainlint.verify.holders import node_text

    cls = type(o)
    text = node_text(o)
    return text if cls.__module__ in ("builtins", "torch", "numpy") or "nn.Module" in text \
        else f"{cls.__module__}.{text}"


def explain(box: list, skip: list, inside: Iterable[Path], traces: Traces) -> list[dict]:
    """The holder chains of the objects in `box` (emptied here) as dicts, with the rule and
    static finding that cover each one."""
    from retainlint.verify import attribution, holders

    if not box:
        return []
    traces(None)  # read the tracebacks before the walk (and stop tracing)
    was_enabled = gc.isenabled()
    gc.disable()  # the heap walk must not run the collector over the objects it lists
    try:
        found = [h.as_dict() for h in holders.explain_many(box, skip=skip, traceback_of=traces)]
    finally:
        box.clear()
        if was_enabled:
            gc.enable()
    for holder in found:
        if holder["how"] == "root path" and holder["chain"].startswith(("frame ", "sys.last", "thread ")):
            holder["how"] = "exception" if holder["chain"].startswith("sys.last") else "frame"
            holder["rule"] = None
            continue
        attribution.cover(holder, inside)
    return found


def cuda_bytes_now() -> Optional[int]:
    """Live CUDA tensor bytes, when the tests already use CUDA (never initializes it)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    return cuda_allocated(torch)
