"""What a class owns, for the release checks (RL610, RL612, RL615, RL616): the attributes it assigns a heavy object it builds itself
(`_Heavy`: a model, tensors, a project object holding them), whether each pins real memory,
whether it is a model, and whether the class is itself an `nn.Module`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions
from retainlint.analysis.heavy import find_param
from retainlint.analysis.walk import visit
from retainlint.analysis.weight import substantial_value, weigher, weightless_layer
from retainlint.project.names import HEAVY_TYPES, TENSOR_TYPES as _TENSOR_TYPES
from retainlint.project.release_parts_scan import ACCESSORS
from retainlint.project.retention_shapes import AWAITED_CLOSE, CLOSING_BASES, OPEN_RESOURCES, WORKER_POOLS

# How deep the release checks follow chains (bases, assignments, methods reached).
_MAX_DEPTH = 8
# Release methods that cannot be called from a fix (they need arguments or run anyway).
_DUNDER_RELEASE = frozenset({"__del__", "__exit__", "__aexit__"})


@dataclass
class _Heavy:
    attr: str
    value: cst.BaseExpression  # what was assigned
    origin: cst.Call  # the call that built it
    annotation: Optional[cst.BaseExpression]
    fn: cst.FunctionDef  # the method that assigns it


def _heavy_attributes(ctx, cls: cst.ClassDef, methods) -> dict[str, _Heavy]:
    found: dict[str, _Heavy] = {}
    oracle = ctx.heavy
    for fn in body_functions(cls):
        for key, entries in oracle.local_assignments(fn).items():
            if not key.startswith("self."):
                continue
            attr = key[5:]
            if attr in found or attr in methods:
                continue
            for value, ann in entries:
                origin = _origin(ctx, value, ann, fn, cls)
                if origin is not None:
                    found[attr] = _Heavy(attr, value, origin, ann.annotation if ann else None, fn)
                    break
    return found


def _origin(ctx, value, ann, fn, cls, depth: int = 0) -> Optional[cst.Call]:
    """The call that builds the heavy object `value` evaluates to, when this class
    builds it (not when it was handed in or fetched from elsewhere)."""
    if value is None or depth > _MAX_DEPTH:
        return None
    if isinstance(value, cst.Call):
        if _callee_word(value) in ACCESSORS:
            return None  # `next(c.residency for c in caches)`: an existing object
        if ctx.heavy.is_heavy_value(value, fn, cls) or is_worker_pool(ctx, value) \
                or is_open_resource(ctx, value):
            return value
        if ann is not None and ctx.heavy.is_heavy_annotation(ann):
            return value
        return None
    if isinstance(value, cst.IfExp):
        return _origin(ctx, value.body, ann, fn, cls, depth + 1) or \
            _origin(ctx, value.orelse, ann, fn, cls, depth + 1)
    if isinstance(value, cst.BooleanOperation):
        return _origin(ctx, value.right, ann, fn, cls, depth + 1)
    if isinstance(value, cst.Name):
        if value.value in ("self", "None") or find_param(fn, value.value) is not None:
            return None
        for v, a in ctx.heavy.local_assignments(fn).get(value.value, ()):
            found = _origin(ctx, v, a, fn, cls, depth + 1)
            if found is not None:
                return found
    return None


def is_worker_pool(ctx, call: cst.Call) -> bool:
    """`ThreadPoolExecutor(...)`, `multiprocessing.Pool(...)`: threads or processes that run,
    with the queue of what was handed to them, until the pool is shut down or collected."""
    return _resolved_name(ctx, call.func) in WORKER_POOLS


def is_open_resource(ctx, call: cst.Call) -> bool:
    """`open(...)`, `socket.socket()`, `requests.Session()`: a file, a socket or a pool of
    connections, open until it is closed."""
    return _resolved_name(ctx, call.func) in OPEN_RESOURCES


def closing_method(ctx, call: cst.Call) -> tuple[str, bool]:
    """The method that gives back the resource `call` opens (`close`), and whether it is
    a coroutine to await (`aiohttp.ClientSession().close()`)."""
    constructed = _resolved_name(ctx, call.func) or ""
    return OPEN_RESOURCES[constructed], constructed in AWAITED_CLOSE


def inherited_close(ctx, cls: cst.ClassDef) -> Optional[str]:
    """The library base (`requests.Session`, `logging.Handler`) whose `close()` is `cls`'s
    release, when neither `cls` nor a project base in between defines one."""
    if ctx.release.lookup(cls, "close") is not None:
        return None
    for base in cls.bases:
        q = _resolved_name(ctx, base.value)
        if q in CLOSING_BASES:
            return q
    return None


def _resolved_name(ctx, expr: cst.BaseExpression) -> Optional[str]:
    """The project-wide name `expr` denotes, through imports and re-exports."""
    q = ctx.absolute(ctx.qualname(expr))
    if not q:
        return None
    if q == "open":  # the builtin: an `open` of this module would be qualified
        return "builtins.open"
    return ctx.index.resolve(q) or q


def _substantial(ctx, h: "_Heavy", cls: Optional[cst.ClassDef]) -> bool:
    """Does the attribute pin real memory or an OS resource (not a few literal elements,
    not a module without weights, not a project object holding only such things)?"""
    if is_worker_pool(ctx, h.origin) or is_open_resource(ctx, h.origin):
        return True
    if not substantial_value(ctx, h.origin, h.fn):
        return False
    if h.annotation is not None and not ctx.heavy.is_heavy_value(h.origin, h.fn, cls):
        # heavy only by its annotation: judge the annotated class
        index = ctx.index
        for expr in _annotation_names(h.annotation):
            q = index.resolve(ctx.absolute(ctx.qualname(expr)))
            if q and index.classes.get(q) is not None and index.is_heavy_class(q):
                return weigher(ctx).class_substantial(q)
    return True


def _is_module_class(ctx, cls: cst.ClassDef) -> bool:
    """Does `cls` derive from `nn.Module` (or a tensor, a `PreTrainedModel`)?"""
    seen: set[str] = set()

    def heavy_type(q: Optional[str]) -> bool:
        if not q:
            return False
        if q in HEAVY_TYPES:
            return True
        return q.startswith("torch.nn.") and q.count(".") == 2 and q.rsplit(".", 1)[1][:1].isupper()

    def summary_derives(q: Optional[str], depth: int) -> bool:
        index = ctx.index
        resolved = index.resolve(q)
        if heavy_type(q) or heavy_type(resolved):
            return True
        if depth > _MAX_DEPTH or not resolved or resolved in seen:
            return False
        seen.add(resolved)
        summary = index.classes.get(resolved)
        return summary is not None and any(summary_derives(b, depth + 1) for b in summary.bases)

    def cst_derives(c: cst.ClassDef, depth: int) -> bool:
        if depth > _MAX_DEPTH:
            return False
        for base in c.bases:
            q = ctx.qualname(base.value)
            if heavy_type(q):
                return True
            local = ctx.classes.get(q) if q else None
            if local is not None and local is not c:
                if cst_derives(local, depth + 1):
                    return True
            elif summary_derives(ctx.absolute(q), depth + 1):
                return True
        return False

    return cst_derives(cls, 0)


def _is_model(ctx, h: _Heavy) -> bool:
    """Is the attribute a model: a module with weights (`nn.Linear(...)`, a project
    `nn.Module` holding layers, what a function annotated to return a module gives)?"""
    index = ctx.index
    exprs = [h.origin.func, *(_annotation_names(h.annotation) if h.annotation is not None else [])]
    for expr in exprs:
        q = ctx.qualname(expr)
        resolved = index.resolve(ctx.absolute(q)) or q
        function = index.functions.get(resolved or "")
        candidates = [resolved, *(function.returns if function is not None else [])]
        for c in candidates:
            c = index.resolve(c) or c
            if _module_type(c) and not weightless_layer(c):
                return True
            if c in index.classes and _derives_module(ctx, c) and weigher(ctx).class_substantial(c):
                return True
    return False


def _derives_module(ctx, qualified: str, depth: int = 0) -> bool:
    summary = ctx.index.classes.get(qualified)
    if summary is None or depth > _MAX_DEPTH:
        return False
    for base in summary.bases:
        resolved = ctx.index.resolve(base) or base
        if _module_type(resolved) or _derives_module(ctx, resolved, depth + 1):
            return True
    return False


def _built_parts(ctx, cls: cst.ClassDef) -> dict[str, cst.Call]:
    """Attributes a method of `cls` assigns a call that builds something (not an
    accessor such as `getattr(...)`, `.get(...)`): attribute -> the call."""
    built: dict[str, cst.Call] = {}
    for fn in body_functions(cls):
        for key, entries in ctx.heavy.local_assignments(fn).items():
            if not key.startswith("self."):
                continue
            for value, _ in entries:
                if isinstance(value, cst.Call) and _callee_word(value) not in ACCESSORS:
                    built.setdefault(key[5:], value)
    return built


def _module_type(q: Optional[str]) -> bool:
    """`torch.nn.Module` and its `torch.nn` layers, `PreTrainedModel`."""
    if not q:
        return False
    return q in HEAVY_TYPES and q not in _TENSOR_TYPES or (
        q.startswith("torch.nn.") and q.count(".") == 2 and q.rsplit(".", 1)[1][:1].isupper())


def _callee_word(call: cst.Call) -> Optional[str]:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None


def _annotation_names(ann: cst.BaseExpression) -> list:
    """`X`, `X | None`, `Optional[X]` -> [X]."""
    if isinstance(ann, cst.BinaryOperation):
        return _annotation_names(ann.left) + _annotation_names(ann.right)
    if isinstance(ann, cst.Subscript):
        return [e.slice.value for e in ann.slice if isinstance(e.slice, cst.Index)
                and isinstance(e.slice.value, (cst.Name, cst.Attribute))]
    if isinstance(ann, (cst.Name, cst.Attribute)):
        return [ann]
    return []


def is_ray_actor(ctx, cls: cst.ClassDef) -> bool:
    """A Ray actor (`@ray.remote`, `ray.remote(Cls)` in this file) runs in a process of
    its own, which goes away with it: what it keeps is not kept past its release."""
    names = ctx.memo("ray actors", lambda: _ray_actors(ctx))
    return cls.name.value in names


def _ray_actors(ctx) -> set[str]:
    names: set[str] = set()
    if "ray" not in ctx.imports.names.values() and not any(
            v.startswith("ray.") for v in ctx.imports.names.values()):
        return names

    class _Actors(cst.CSTVisitor):
        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            for d in node.decorators:
                target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
                if ctx.qualname(target) == "ray.remote":
                    names.add(node.name.value)

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func.func if isinstance(node.func, cst.Call) else node.func
            if ctx.qualname(func) == "ray.remote" and node.args and isinstance(node.args[0].value, cst.Name):
                names.add(node.args[0].value.value)

    visit(ctx.module, _Actors())
    return names


def brief(code: str) -> str:
    """A call's code on one line, cut to 40 characters (for messages)."""
    code = " ".join(code.split())
    return code if len(code) <= 40 else code[:37] + "..."
