"""Who holds it: a reference chain from a root to an object that should have been freed.

1. Forward BFS from roots (the `weakref.finalize` registry, every module's globals, other
   threads' frames - and the caller's frames for `expect_released` -, `sys.last_*`) over
   `gc.get_referents`, plus the autograd graph of tensors. `gc.get_referents` also works on
   objects that `gc.freeze()` moved to the permanent generation, which `gc.get_referrers`
   cannot see.
2. No root path and a frozen heap: `gc.unfreeze()` and a `DEBUG_SAVEALL` collection show the
   unreachable cycle that pins it (frozen cycles are never collected).
3. Still nothing: references that gc cannot see (refcount excess: `atexit`, C++ registries).

Edges are labelled (attribute, key, index, closure variable, `.__self__`); keys print as
types, not reprs, so the text is stable from run to run. The root maps to the rule that
covers it. No objgraph/refcycle dependency.
"""

from __future__ import annotations

import collections
import functools
import gc
import os
import sys
import sysconfig
import threading
import tracemalloc
import types
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

MAX_VISIT = 5_000_000


@dataclass
class Holder:
    chain: str
    rule: Optional[str]  # the rule that covers this root, when one does
    how: str  # "root path", "frozen cycle", "reference cycle", "held from C", "not found"
    # What a linter can match the chain with: the names on it (attributes, globals, keys)
    # and the source files of the code its objects come from.
    names: tuple = ()
    files: tuple = ()
    # `file:line` where the first object of the chain made under tracemalloc was allocated:
    # the object that ties the new objects to the old root (a bound method handed to a
    # registry, a cache key, a finalizer). None when tracemalloc was off or saw none.
    created: Optional[str] = None

    def as_dict(self) -> dict:
        return {"chain": self.chain, "rule": self.rule, "how": self.how, "names": list(self.names),
                "files": list(self.files), "created": self.created}

    def __str__(self) -> str:
        return self.chain + (f"  [{self.rule}]" if self.rule else "")


# -- node and edge text --------------------------------------------------------------------
_LRU = type(functools.lru_cache(maxsize=None)(lambda: None))
_LRU_BOUNDED = type(functools.lru_cache(maxsize=1)(lambda: None))


def _torch():
    return sys.modules.get("torch")


def _is_grad_node(o: Any) -> bool:
    return not isinstance(o, type) and type(o).__name__.endswith(("Backward0", "Backward1", "Backward")) \
        or type(o).__name__ == "AccumulateGrad"


def node_text(o: Any) -> str:
    t = type(o)
    if isinstance(o, types.ModuleType):
        return f"module {o.__name__}"
    if isinstance(o, type):
        return f"class {o.__module__}.{o.__qualname__}"
    if isinstance(o, (_LRU, _LRU_BOUNDED)):
        wrapped = getattr(o, "__wrapped__", None)
        name = getattr(wrapped, "__qualname__", "?")
        module = getattr(wrapped, "__module__", "?")
        return f"lru_cache {module}.{name} (cache_info {o.cache_info().currsize} entries)"
    if isinstance(o, types.MethodType):
        return f"bound method {type(o.__self__).__qualname__}.{o.__func__.__name__}"
    if isinstance(o, types.FunctionType):
        return f"function {o.__module__}.{o.__qualname__}"
    if isinstance(o, types.FrameType):
        return f"frame {o.f_code.co_name}"
    if isinstance(o, (dict, list, tuple, set, frozenset, collections.deque)):
        return f"{t.__name__}(len={len(o)})"
    torch = _torch()
    if torch is not None:
        if isinstance(o, torch.Tensor):
            return f"{t.__name__}{tuple(o.shape)}"
        if isinstance(o, torch.nn.Module):
            return f"{t.__qualname__} (nn.Module)"
    return t.__qualname__


def key_text(k: Any) -> str:
    if isinstance(k, (str, int, float, bool, type(None))):
        text = repr(k)
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(k, weakref.ref):
        target = k()
        return f"<weakref to {type(target).__qualname__}>" if target is not None else "<dead weakref>"
    return f"<{type(k).__qualname__}>"


def _slots(o: Any) -> Iterable[str]:
    for cls in type(o).__mro__:
        s = cls.__dict__.get("__slots__", ())
        yield from ((s,) if isinstance(s, str) else s)


def _class_dict(o: type) -> Optional[dict]:
    refs = gc.get_referents(o.__dict__)
    return refs[0] if refs and isinstance(refs[0], dict) else None


def _dict_of(o: Any) -> Optional[dict]:
    if isinstance(o, type):
        return _class_dict(o)
    try:
        d = object.__getattribute__(o, "__dict__")
    except Exception:
        return None
    return d if isinstance(d, dict) else None


def edge_text(p: Any, c: Any) -> tuple[str, str]:
    """(label, kind) of the edge p -> c. kind: key, value, attr, index, ..."""
    if isinstance(p, dict):
        for k, v in list(p.items()):
            if v is c:
                if type(k) is int and k == id(v):  # a registry keyed by id(): stable text
                    return f"[id({type(v).__qualname__})]", "value"
                return f"[{key_text(k)}]", "value"
            if k is c:
                return " key", "key"
        return "", "?"
    if isinstance(p, (list, tuple, collections.deque)):
        for i, v in enumerate(p):
            if v is c:
                return f"[{i}]", "index"
        return "", "?"
    if isinstance(p, (set, frozenset)):
        return " item", "key"
    if isinstance(p, types.MethodType):
        return (".__self__", "attr") if p.__self__ is c else (".__func__", "attr")
    if isinstance(p, types.FunctionType):
        for i, cell in enumerate(p.__closure__ or ()):
            if cell is c:
                return f" closure {p.__code__.co_freevars[i]}", "closure"
        for name in ("__defaults__", "__kwdefaults__", "__globals__", "__dict__"):
            if getattr(p, name, None) is c:
                return f".{name}", "attr"
        return "", "?"
    if isinstance(p, types.CellType):
        return ".cell_contents", "attr"
    if isinstance(p, BaseException):
        for name in ("__traceback__", "__context__", "__cause__"):
            if getattr(p, name, None) is c:
                return f".{name}", "attr"
    if isinstance(p, types.TracebackType):
        return (".tb_frame", "attr") if p.tb_frame is c else (".tb_next", "attr")
    if isinstance(p, types.FrameType):
        for name, v in p.f_locals.items():
            if v is c:
                return f" local {name}", "local"
        return "", "?"
    if isinstance(p, (_LRU, _LRU_BOUNDED)):
        return " cache", "cache"
    if _is_grad_node(p):
        if getattr(p, "variable", None) is c:
            return ".variable", "autograd"
        for i, (fn, _) in enumerate(getattr(p, "next_functions", ())):
            if fn is c:
                return f".next_functions[{i}]", "autograd"
        return "", "autograd"
    torch = _torch()
    if torch is not None and isinstance(p, torch.Tensor):
        if p.grad_fn is c:
            return ".grad_fn", "autograd"
        if p.grad is c:
            return ".grad", "attr"
    for name in _slots(p):
        try:
            if getattr(p, name) is c:
                return f".{name}", "attr"
        except Exception:
            pass
    d = _dict_of(p)
    if d is c:
        return ".__dict__", "dict"
    if d is not None:  # instance attributes kept inline (no __dict__ object in the graph)
        for name, v in list(d.items()):
            if v is c:
                return f".{name}", "attr"
    return "", "?"


class _ExtraEdges:
    """Edges gc does not report: the autograd graph behind a tensor. Whether a type can have
    any is asked once per type: a heap walk meets hundreds of thousands of objects of a few
    thousand types."""

    def __init__(self) -> None:
        torch = _torch()
        self._tensor = torch.Tensor if torch is not None else None
        self._kind: dict[type, str] = {}

    def __call__(self, o: Any) -> list:
        t = type(o)
        kind = self._kind.get(t)
        if kind is None:
            kind = "tensor" if self._tensor is not None and issubclass(t, self._tensor) \
                else "grad" if _is_grad_node(o) else ""
            self._kind[t] = kind
        out: list = []
        if kind == "tensor":
            try:
                if o.grad_fn is not None:
                    out.append(o.grad_fn)
            except Exception:
                pass
        elif kind == "grad":
            for fn, _ in getattr(o, "next_functions", ()):
                if fn is not None:
                    out.append(fn)
            var = getattr(o, "variable", None)
            if var is not None:
                out.append(var)
        return out


def render(root_label: str, path: list, root_kind: str = "") -> tuple[str, list]:
    """Text of a path [root, ..., target]; folds `X -> __dict__ -> [k]` into `X.k`.
    Returns (text, [(node, edge kind, label)])."""
    parts = [root_label]
    kinds = []
    i = 0
    while i < len(path) - 1:
        p, c = path[i], path[i + 1]
        label, kind = edge_text(p, c)
        if i == 0 and root_kind == "module" and label.startswith("["):
            label = " global " + label[1:-1].strip("'\"")
        if kind == "dict" and i + 2 < len(path):
            inner, _ = edge_text(c, path[i + 2])
            if inner.startswith("[") and inner.endswith("]"):
                name = inner[1:-1].strip("'\"")
                label, kind = f".{name}", "attr"
                i += 1
        kinds.append((path[i], kind, label))
        parts[-1] += label
        parts.append(node_text(path[i + 1]))
        i += 1
    return " -> ".join(parts), kinds


# -- roots ---------------------------------------------------------------------------------
def roots(extra_frames: Iterable[types.FrameType] = ()) -> list:
    out: list = []
    registry = getattr(weakref.finalize, "_registry", None)
    if isinstance(registry, dict):
        out.append((registry, "weakref.finalize._registry", "finalize"))
    kept = getattr(sys.modules.get("retainlint.verify.runtime"), "PROCESS_STATE", None)
    if kept is not None:  # first: what a scenario keeps on purpose is the nearest root
        out.append((kept, "kept by the scenario (ctx.keep)", "kept"))
    for name in sorted(list(sys.modules)):
        module = sys.modules.get(name)
        d = getattr(module, "__dict__", None) if module is not None else None
        if isinstance(d, dict):
            out.append((d, f"module {name}", "module"))
    me = threading.get_ident()
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        f = frame
        while f is not None:
            out.append((f, f"thread {names.get(ident, ident)} frame {f.f_code.co_name}", "frame"))
            f = f.f_back
    for f in extra_frames:
        out.append((f, f"frame {f.f_code.co_name} ({f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_lineno})",
                    "frame"))
    for name in ("last_value", "last_traceback", "last_exc"):
        v = getattr(sys, name, None)
        if v is not None:
            out.append((v, f"sys.{name}", "exception"))
    return out


# -- rule mapping ----------------------------------------------------------------------------
_HOOK_GLOBALS = ("_global_", "_bytecode_hooks")
_HOOK_ATTRS = ("._forward_hooks", "._forward_pre_hooks", "._backward_hooks", "._backward_pre_hooks",
               "._state_dict_hooks", "._load_state_dict_post_hooks")


def covering_rule(root_kind: str, root_label: str, text: str, kinds: list) -> Optional[str]:
    """The rule whose pattern this root and chain show, when the shape alone tells; None
    when it does not (plain attributes of an object still alive: `attribution` asks the
    linter which finding names them)."""
    if root_kind == "finalize":
        return "RL202" if "_Info.func" in text else "RL201"
    if root_kind == "frozen":
        return "RL401"
    if root_kind == "cycle":
        return "RL701"
    if root_kind == "c":
        return "RL203"
    if root_kind in ("frame", "exception"):
        return None  # an artefact of the harness or the test, not of the code under test
    caches = [node for node, _, _ in kinds if isinstance(node, (_LRU, _LRU_BOUNDED))]
    if caches:  # the cached function is a method (its qualname is Class.name): RL102
        qualname = getattr(getattr(caches[0], "__wrapped__", None), "__qualname__", "")
        method = "." in qualname.replace(".<locals>.", "")
        return "RL102" if method and "bound method" not in text else "RL101"
    parts = text.split(" -> ")
    if root_kind == "module" and len(parts) > 1 and parts[1].endswith(".__traceback__"):
        return "RL907"  # the module's global is the exception: each raise added to its traceback
    if ".__traceback__ -> " in text:
        return "RL702"
    if ".loggerDict" in text:
        return "RL801"
    first = text.split(" -> ", 1)[0]
    if any(g in first for g in _HOOK_GLOBALS):
        return "RL501"  # a process-wide hook registry
    if any(a in text for a in _HOOK_ATTRS):
        return "RL502"  # a hook left on an object that outlives its owner
    if root_kind == "module" and kinds:
        if "WeakKeyDictionary" in text:
            return "RL304"
        second = kinds[1] if len(kinds) > 1 else None
        if second is not None and second[1] == "key":
            return "RL301"
        if second is not None and second[1] == "value" and isinstance(second[0], dict):
            return "RL305" if second[2].startswith("[id(") else "RL302"
        return "RL303"
    return None


# -- the search --------------------------------------------------------------------------------
def _bfs(target_id: int, root_list: list, skip: set) -> Optional[tuple]:
    return _bfs_many({target_id}, root_list, skip).get(target_id)


def _bfs_many(target_ids: set, root_list: list, skip: set) -> dict:
    """One walk from the roots for several targets: {target id: (path, root entry)} for
    each target reached."""
    parent: dict[int, Optional[int]] = {}
    objs: dict[int, Any] = {}
    root_of: dict[int, int] = {}
    q: collections.deque = collections.deque()
    skip = skip | {id(parent), id(objs), id(root_of), id(q), id(root_list)}
    for idx, (r, _label, _kind) in enumerate(root_list):
        if id(r) in parent or id(r) in skip:
            continue
        parent[id(r)] = None
        objs[id(r)] = r
        root_of[id(r)] = idx
        q.append(r)
    left = {t for t in target_ids if t not in parent}
    extra_edges = _ExtraEdges()
    while q and left and len(parent) < MAX_VISIT:
        o = q.popleft()
        try:
            children = gc.get_referents(o)
            more = extra_edges(o)
            if more:
                children += more
            if isinstance(o, types.FrameType):  # a running frame does not traverse its locals
                children += list(o.f_locals.values())
        except Exception:
            continue
        for c in children:
            cid = id(c)
            if cid in parent or cid in skip:
                continue
            parent[cid] = id(o)
            objs[cid] = c
            root_of[cid] = root_of[id(o)]
            if cid in left:
                left.discard(cid)
                if not left:
                    break
            q.append(c)
    out = {}
    for target_id in target_ids:
        if target_id not in parent:
            continue
        path = []
        cur: Optional[int] = target_id
        while cur is not None:
            path.append(objs[cur])
            cur = parent[cur]
        path.reverse()
        out[target_id] = (path, root_list[root_of[target_id]])
    return out


def find_path(box: list, *, extra_frames: Iterable[types.FrameType] = (),
              skip: Iterable[Any] = ()) -> Optional[Holder]:
    """A root path to `box[0]` (passed in a list so that no local of ours holds it)."""
    root_list = roots(extra_frames)
    skip_ids = {id(box), id(sys.modules)} | {id(s) for s in skip}
    with warnings.catch_warnings():  # lazy deprecated torch attributes warn when touched
        warnings.simplefilter("ignore")
        hit = _bfs(id(box[0]), root_list, skip_ids)
    if hit is None:
        return None
    return _holder(hit, None)


def _holder(hit: tuple, traceback_of: Optional[Callable[[Any], Any]]) -> Holder:
    path, (_, label, kind) = hit
    text, kinds = render(label, path, kind)
    files = source_files(path)
    created = created_at(path, traceback_of)
    del path
    return Holder(text, covering_rule(kind, label, text, kinds), "root path", names_on(kinds), files, created)


def explain_many(box: list, *, skip: Iterable[Any] = (),
                 traceback_of: Optional[Callable[[Any], Any]] = None) -> list[Holder]:
    """`explain` for several objects (`box`, emptied by the caller) with one walk of the
    heap; `traceback_of(obj)` stands in for `tracemalloc.get_object_traceback` (the traces
    can be read before the walk, and tracing stopped: it slows the walk tenfold)."""
    root_list = roots()
    skip_ids = {id(box), id(sys.modules)} | {id(s) for s in skip}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hits = _bfs_many({id(o) for o in box}, root_list, skip_ids)
    out = []
    for i in range(len(box)):  # by index: a loop variable would be one more reference to it
        hit = hits.pop(id(box[i]), None)
        if hit is not None:
            out.append(_holder(hit, traceback_of))
            continue
        one = [box[i]]
        box[i] = None  # one list holds it while its referrers are counted
        held = explain_c_held(one, traceback_of=traceback_of, skip=skip_ids) if not gc.get_freeze_count() \
            else None
        box[i] = one.pop()
        out.append(held or Holder(f"no root path found to {node_text(box[i])}", None, "not found"))
    hits.clear()
    return out


def names_on(kinds: list) -> tuple:
    """The names a chain's edges use: attributes, globals, locals, string keys."""
    out = []
    for _node, _kind, label in kinds:
        name = label.strip().removeprefix("global ").removeprefix("local ").removeprefix("closure ")
        name = name.lstrip(".").strip("[]").strip("'\"")
        if name.isidentifier() and not name.startswith("__"):
            out.append(name)
    return tuple(dict.fromkeys(out))


def source_files(path: list) -> tuple:
    """The source files of the code the chain's objects come from (their modules)."""
    out = []
    for o in path:
        if isinstance(o, types.MethodType):
            o = o.__func__
        if isinstance(o, types.FunctionType):
            out.append(o.__code__.co_filename)
            continue
        module = o.get("__name__") if isinstance(o, dict) and "__builtins__" in o else \
            (o.__module__ if isinstance(o, type) else type(o).__module__)
        f = getattr(sys.modules.get(module) if isinstance(module, str) else None, "__file__", None)
        if isinstance(f, str):
            out.append(f)
    return tuple(dict.fromkeys(out))


# -- where the chain was made ------------------------------------------------------------------
def _library_dirs() -> tuple:
    """Code whose frames never name the line a user should read: the standard library, the
    test runner, torch and retainlint itself (their frames only carry out the user's call)."""
    dirs = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")}
    for name in ("torch", "_pytest", "pluggy", "retainlint"):
        module = sys.modules.get(name)
        f = getattr(module, "__file__", None)
        if isinstance(f, str):
            dirs.add(os.path.dirname(f))  # the package's folder
    return tuple(d.rstrip("/") + "/" for d in dirs if d)


def _user_frame(tb: tracemalloc.Traceback, skip: tuple) -> Optional[str]:
    for frame in reversed(tb):  # oldest first: the innermost frame is the last one
        name = frame.filename
        if name.startswith("<") or name.startswith(skip):
            continue
        return f"{name}:{frame.lineno}"
    return None


# Types CPython recycles through free lists: a reused object keeps the traceback of the block's
# first allocation, often another line.
_RECYCLED = (tuple, list, dict, float)


def created_at(path: list, traceback_of: Optional[Callable[[Any], Any]] = None) -> Optional[str]:
    """Where the first object of `path` (root first) that tracemalloc traced was allocated,
    in the innermost frame of user code. A key added to an old dict is often made long
    before (the model): the value stored with it was made by the registering line. On
    Python 3.11, instances of plain classes carry no traceback (`get_object_traceback`
    misses their managed-dict header; fixed in 3.12): the chain's other objects tell."""
    if traceback_of is None:
        if not tracemalloc.is_tracing():
            return None
        traceback_of = tracemalloc.get_object_traceback
    skip = _library_dirs()
    for i, node in enumerate(path):
        tb = None
        parent = path[i - 1] if i else None
        if isinstance(parent, dict) and traceback_of(parent) is None:
            for k, v in list(parent.items()):
                if k is node:
                    tb = None if isinstance(v, _RECYCLED) else traceback_of(v)
                    break
        if tb is None and not isinstance(node, _RECYCLED):
            tb = traceback_of(node)
        if tb is None:
            continue
        where = _user_frame(tb, skip)
        if where is not None:
            return where
    return None


def explain_cycle(target_id: int, target_kind: str) -> Optional[Holder]:
    """The target is unreachable but alive: find the reference cycle that pins it - in the
    permanent generation when the heap is frozen (never collected: RL401), else one waiting
    for the cycle collector (RL701). Unfreezes the heap and collects with DEBUG_SAVEALL
    (which clears weakrefs): call only after measuring, and with no strong reference to the
    target left."""
    frozen = gc.get_freeze_count()
    where, rule = ("gc permanent generation (gc.freeze())", "RL401") if frozen else \
        ("reference cycle, freed only when the cycle collector runs", "RL701")
    gc.unfreeze()
    old = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        garbage = list(gc.garbage)
        gc.garbage.clear()
    finally:
        gc.set_debug(old)
    try:
        by_id = {id(o): o for o in garbage}
        if target_id not in by_id:
            return None
        fwd = {i: [id(c) for c in gc.get_referents(o) if id(c) in by_id] for i, o in by_id.items()}
        rev: dict[int, list] = collections.defaultdict(list)
        for i, cs in fwd.items():
            for c in cs:
                rev[c].append(i)
        # Nearest ancestor of the target (itself included) that lies on a cycle.
        order, seen, q = [], {target_id}, collections.deque([target_id])
        down: dict[int, int] = {}
        while q:
            i = q.popleft()
            order.append(i)
            for a in rev.get(i, ()):
                if a not in seen:
                    seen.add(a)
                    down[a] = i
                    q.append(a)
        for a in order:
            cyc = _path_ids(fwd, a, a)
            if cyc is None:
                continue
            cycle_text, kinds = render(node_text(by_id[a]), [by_id[i] for i in cyc])
            tail = [a]
            while tail[-1] != target_id:
                tail.append(down[tail[-1]])
            text = f"{where}: unreachable cycle [{cycle_text}]"
            if len(tail) > 1:
                tail_text, tail_kinds = render(node_text(by_id[a]), [by_id[i] for i in tail])
                text += f" ; {tail_text}"
                kinds += tail_kinds
            # The cycle's names and source files let the linter say which finding made it
            # (a kept back-reference: RL902), when its shape alone says only "a cycle".
            files = source_files([by_id[i] for i in (*cyc, *tail)])
            return Holder(text, rule, "frozen cycle" if frozen else "reference cycle", names_on(kinds), files)
        return Holder(f"{where}: {target_kind} is unreachable garbage", rule,
                      "frozen cycle" if frozen else "reference cycle")
    finally:
        del garbage
        by_id = None  # noqa: F841
        gc.collect()


def _path_ids(fwd: dict, start: int, goal: int) -> Optional[list]:
    prev: dict[int, int] = {}
    q = collections.deque([start])
    while q:
        i = q.popleft()
        for c in fwd.get(i, ()):
            if c == goal:
                path = [c, i]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                path.reverse()
                return path
            if c not in prev:
                prev[c] = i
                q.append(c)
    return None


def _excess(nodes: list, i: int) -> int:
    o = nodes[i]
    total = sys.getrefcount(o) - 2  # `o` here and getrefcount's argument
    seen = 0
    for r in gc.get_referrers(o):
        if r is nodes:
            seen += 1
            continue
        for x in gc.get_referents(r):
            if x is o:
                seen += 1
    return total - seen


def explain_c_held(box: list, depth: int = 6, traceback_of: Optional[Callable[[Any], Any]] = None,
                   skip: Iterable[int] = ()) -> Optional[Holder]:
    """Walk gc referrers up from box[0]; the first object with more references than gc can
    see is held from C (atexit callbacks live in interpreter state). `skip`: ids of the
    caller's own containers (a running frame's locals are invisible to gc: a list in one
    would look held from C)."""
    nodes = [box[0]]
    child: list[Optional[int]] = [None]  # child[i]: index of the node nodes[i] refers to
    own = {id(f) for f in _own_frames()} | {id(box), id(nodes), id(child)} | set(skip)
    start, end = 0, 1
    for _ in range(depth):
        for i in range(start, end):
            extra = _excess(nodes, i)
            if extra > 0:
                chain, j = [], i
                while j is not None:
                    chain.append(nodes[j])
                    j = child[j]
                text, kinds = render(node_text(chain[0]), chain)
                files, created = source_files(chain), created_at(chain, traceback_of)
                del chain
                return Holder(f"held from C ({extra} reference(s) invisible to gc, e.g. atexit): {text}",
                              "RL203", "held from C", names_on(kinds), files, created)
        for i in range(start, end):
            for r in gc.get_referrers(nodes[i]):
                if id(r) in own or isinstance(r, types.FrameType) or any(r is n for n in nodes):
                    continue
                nodes.append(r)
                child.append(i)
            r = None
        if len(nodes) == end:
            break
        start, end = end, len(nodes)
    return None


def _own_frames() -> list:
    out = []
    f = sys._getframe()
    while f is not None:
        if f.f_globals.get("__name__") == __name__:
            out.append(f)
        f = f.f_back
    return out


def explain(box: list, *, extra_frames: Iterable[types.FrameType] = (), skip: Iterable[Any] = ()) -> Holder:
    """A root path; else a holder invisible to gc; else what is known (frozen heap)."""
    holder = find_path(box, extra_frames=extra_frames, skip=skip)
    if holder is not None:
        return holder
    holder = explain_c_held(box) if not gc.get_freeze_count() else None
    if holder is not None:
        return holder
    if gc.get_freeze_count():
        return Holder("no root path (frozen heap: see the frozen-cycle analysis)", "RL401", "frozen")
    return Holder(f"no root path found to {node_text(box[0])}", None, "not found")
