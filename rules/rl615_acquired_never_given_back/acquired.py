"""RL615's resources acquired in place and never given back: a part the class makes acquire
a resource of its own (`self.model.load()`), whether anything in the file gives it back
(`unload()`) or drops it, and whether the part's project class defines an inverse at all."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions, self_attribute
from retainlint.analysis.walk import visit
from retainlint.project.release_parts_scan import ACQUIRES
from retainlint.analysis.owned_parts import _MAX_DEPTH


# Synchronization primitives: a lock or semaphore acquired and never released holds no
# memory and no resource to give back (a deadlock is another matter).
_SYNC_PRIMITIVES = frozenset(
    f"{module}.{name}"
    for module in ("threading", "multiprocessing", "asyncio", "trio")
    for name in ("Lock", "RLock", "Semaphore", "BoundedSemaphore", "Condition", "Event", "Barrier",
                 "CapacityLimiter")
)


def _acquired_in_place(cls: cst.ClassDef) -> dict[str, tuple[str, cst.Call]]:
    """`self.x.load()` / `.open()` / `.connect(timeout=5)` as a statement in a method
    of `cls`, with no positional argument (an item handed in - `allocate(seq)`,
    `connect(address)`, `load(weights)` - is no resource of the part's own):
    attribute -> (verb, the first such call)."""
    found: dict[str, tuple[str, cst.Call]] = {}

    class _Acquires(cst.CSTVisitor):
        def visit_Expr(self, node: cst.Expr) -> None:
            call = node.value
            if isinstance(call, cst.Await):
                call = call.expression
            if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
                return
            verb = call.func.attr.value
            if verb not in ACQUIRES or any(a.keyword is None and a.star != "**" for a in call.args):
                return
            attr = self_attribute(call.func.value)
            if attr is not None:
                found.setdefault(attr, (verb, call))

    for fn in body_functions(cls):
        visit(fn.body, _Acquires())
    return found


def _given_back(module: cst.Module, inverses: dict[str, frozenset]) -> set[str]:
    """Attributes something in the file gives back or drops: `<anything>.x.unload`
    (called or handed on), the inverse called on a name bound to `<anything>.x` or to
    `getattr(<anything>, "x", ...)`, `self.x = None` / `del self.x` / `delattr(self, "x")`."""
    given: set[str] = set()
    aliases: dict[str, set[str]] = {}  # local name -> attributes it was bound to

    def named(expr) -> Optional[str]:
        if isinstance(expr, cst.Attribute):
            return expr.attr.value
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "getattr" \
                and len(expr.args) >= 2 and isinstance(expr.args[1].value, cst.SimpleString):
            return expr.args[1].value.evaluated_value if isinstance(expr.args[1].value.evaluated_value, str) \
                else None
        return None

    class _Bindings(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            attr = named(node.value)
            for t in node.targets:
                if isinstance(t.target, cst.Name) and attr in inverses:
                    aliases.setdefault(t.target.value, set()).add(attr)
                target = self_attribute(t.target)
                if target in inverses and isinstance(node.value, cst.Name) and node.value.value == "None":
                    given.add(target)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            attr = named(node.value)
            if attr in inverses and isinstance(node.target, cst.Name):
                aliases.setdefault(node.target.value, set()).add(attr)

        def visit_Del(self, node: cst.Del) -> None:
            targets = node.target.elements if isinstance(node.target, cst.Tuple) else [node.target]
            for t in targets:
                target = self_attribute(t.value if isinstance(t, cst.Element) else t)
                if target in inverses:
                    given.add(target)

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "delattr" and len(node.args) >= 2 \
                    and isinstance(node.args[1].value, cst.SimpleString):
                name = node.args[1].value.evaluated_value
                if name in inverses:
                    given.add(name)

    class _Inverses(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            verb = node.attr.value
            receiver = node.value
            attrs = {receiver.attr.value} if isinstance(receiver, cst.Attribute) else \
                aliases.get(receiver.value, set()) if isinstance(receiver, cst.Name) else set()
            given.update(a for a in attrs if verb in inverses.get(a, ()))

    visit(module, _Bindings())
    visit(module, _Inverses())
    return given


def _has_inverse(ctx, call: cst.Call, verb: str, depth: int = 0) -> bool:
    """Can the part give the resource back: unless it is a project class (or built
    by one's classmethod) that defines none of the inverse methods, assume it can."""
    index = ctx.index
    q = ctx.qualname(call.func)
    if q is None:
        return True
    q = index.resolve(ctx.absolute(q)) or q
    candidates = [q, q.rsplit(".", 1)[0]]  # the class, or the class of a classmethod
    for c in candidates:
        c = _project_class(index, index.resolve(c) or c)
        if c is not None:
            return _defines_any(index, c, ACQUIRES[verb])
    return True


def _project_class(index, qualified: str) -> Optional[str]:
    """The project class `qualified` names: itself, or the one class whose name it ends
    with (a namespace package's modules are indexed from below it: `deepdoc.server.
    adapters.x.C` is indexed as `adapters.x.C`)."""
    if qualified in index.classes:
        return qualified
    if "." not in qualified:
        return None
    return index.ask(class_named_by_suffix, qualified)


def class_named_by_suffix(index, qualified: str) -> Optional[str]:
    """The one project class whose qualified name `qualified` ends with, if exactly one
    does. A question for `ProjectIndex.ask` (it reads every class name)."""
    matches = [k for k in index.classes if qualified.endswith("." + k)]
    return matches[0] if len(matches) == 1 else None


def _defines_any(index, qualified: str, names: frozenset, depth: int = 0) -> bool:
    """Does the project class `qualified`, or a base of it, define one of `names`? A base
    outside the project may."""
    info = index.classes.get(qualified)
    if info is None or depth > _MAX_DEPTH:
        return True
    if any(n in info.methods for n in names):
        return True
    for base in info.bases:
        resolved = index.resolve(base) or base
        if resolved in ("object", "builtins.object"):
            continue
        if _defines_any(index, resolved, names, depth + 1):
            return True
    return False
