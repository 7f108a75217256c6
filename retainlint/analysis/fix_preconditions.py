"""When a fix keeps behaviour: the checks a fix's edit must pass before it is offered.

A safe fix changes nothing a caller can see but memory. Three edits recur in the rules,
and each has preconditions the code around it decides:

- an edit at the end of a method runs only if the method's normal path reaches its end
  (`end_reachable`, `append_at_end`): not after a `try` whose body returns, nor after an
  `if` whose every branch returns or raises;
- `self.x = None` (or `del self.x`) in a release method keeps behaviour only when nothing
  reads `self.x` afterwards (`nulling`): no other method of the class, its bases or its
  subclasses (properties included) reads it without first assigning it - re-entry such as
  `open()` after `close()` is just such a method -, no `hasattr`/`getattr` guard looks at
  it, no class attribute of that name is hidden or exposed, and no other module reads
  `.x`. What code outside the project may read makes a fix on a public name unsafe;
- dropping a reference frees something only when no other attribute still holds the
  object or its parts (`holders`: an optimizer built from `self.model.parameters()`, a
  scheduler built from that optimizer)."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

import libcst as cst

from retainlint.analysis.cstutil import (
    append_to_function,
    body_functions,
    body_statements,
    is_self,
    self_attribute,
)
from retainlint.analysis.hooks import is_property, local_bases, local_subclasses
from retainlint.analysis.walk import children, visit
from retainlint.core.source import MAX_PARSE_BYTES, read_source

if TYPE_CHECKING:
    from retainlint.analysis.context import FileContext

# Methods that run before an instance is in use, never after its release.
_CONSTRUCTION = frozenset({"__init__", "__new__", "__post_init__", "__init_subclass__",
                           "__set_name__", "__class_getitem__"})
# Calls that only look at what they are handed: a value built by one holds nothing of it.
_LOOKS = frozenset({"len", "str", "repr", "id", "type", "isinstance", "issubclass", "hash",
                    "bool", "int", "float", "format", "print", "hasattr", "getattr", "callable",
                    "sum", "min", "max", "any", "all", "sorted"})
# Methods whose result holds parts of the object called on (its weights, its state).
_PART_METHODS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers",
                           "modules", "named_modules", "children", "named_children",
                           "state_dict", "values", "items", "get_submodule", "get_parameter"})


# -- is the end of a method reached? ---------------------------------------------------


def _ends(stmt: cst.BaseStatement) -> bool:
    """Does the normal path stop inside `stmt` (every way through it returns or raises)?
    The `except` clauses of a `try` are the error path: a `try` whose body returns
    ends the normal path even when a handler falls through."""
    if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return any(isinstance(s, (cst.Return, cst.Raise)) for s in stmt.body)
    if isinstance(stmt, cst.If):
        if stmt.orelse is None:
            return False
        other = stmt.orelse
        other_ends = _ends(other) if isinstance(other, cst.If) else _block_ends(other.body)
        return _block_ends(stmt.body) and other_ends
    if isinstance(stmt, cst.Try):
        finally_ends = stmt.finalbody is not None and _block_ends(stmt.finalbody.body)
        else_ends = stmt.orelse is not None and _block_ends(stmt.orelse.body)
        return _block_ends(stmt.body) or else_ends or finally_ends
    if isinstance(stmt, cst.With):
        return _block_ends(stmt.body)
    if isinstance(stmt, cst.While):
        # `while True:` with no `break` never falls through
        forever = isinstance(stmt.test, cst.Name) and stmt.test.value == "True"
        return forever and not any(isinstance(n, cst.Break) for n in _walk(stmt.body))
    return False


def _block_ends(block: cst.BaseSuite) -> bool:
    if isinstance(block, cst.SimpleStatementSuite):  # `if x: return`
        return any(isinstance(s, (cst.Return, cst.Raise)) for s in block.body)
    return any(_ends(s) for s in block.body)


def _walk(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        # statements and their parts in source order (a value is read before it is bound)
        stack.extend(reversed(children(current)))


def _final_return(statements: Sequence[cst.BaseStatement]) -> Optional[cst.Return]:
    last = statements[-1] if statements else None
    if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 and isinstance(last.body[0], cst.Return):
        return last.body[0]
    return None


def end_reachable(fn: cst.FunctionDef) -> bool:
    """Can the normal path of `fn` reach its last statement (a final `return` left out:
    an edit goes before it)?"""
    statements = body_statements(fn)
    if _final_return(statements) is not None:
        statements = statements[:-1]
    return not any(_ends(s) for s in statements)


def append_at_end(fn: cst.FunctionDef, new: Sequence[cst.BaseStatement]) -> Optional[cst.FunctionDef]:
    """`fn` with `new` at its end (before a final bare `return`), or None when its normal
    path never gets there, or it ends returning a value (computed before the edit)."""
    final = _final_return(body_statements(fn))
    if not end_reachable(fn) or (final is not None and final.value is not None):
        return None
    return append_to_function(fn, new)


# -- who reads `self.x` ---------------------------------------------------------------


class _Events(cst.CSTVisitor):
    """In source order, what one method does with `self.<attr>`: reads it ("read"),
    assigns it in its own body ("set": only an assignment that runs on every path
    counts), calls another method on `self` ("call"), or asks `hasattr`/`getattr`
    about it ("guard"). Nested functions and lambdas count: they may run later."""

    def __init__(self, attr: str, top: Sequence[cst.BaseStatement]) -> None:
        self.attr = attr
        self.top = {id(s) for s in top}
        self.events: list[tuple[str, str]] = []
        self._targets: set[int] = set()
        self._line: Optional[cst.CSTNode] = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._line = node

    def _mark_targets(self, targets: Iterable[cst.BaseExpression]) -> None:
        for t in targets:
            if self_attribute(t) == self.attr:
                self._targets.add(id(t))
            elif isinstance(t, (cst.Tuple, cst.List)):
                self._mark_targets(e.value for e in t.elements)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._mark_targets(t.target for t in node.targets)

    def leave_Assign(self, node: cst.Assign) -> None:
        if any(id(t.target) in self._targets for t in node.targets):
            self.events.append(("set" if id(self._line) in self.top else "maybe", self.attr))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._mark_targets([node.target])

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if id(node.target) in self._targets and node.value is not None:
            self.events.append(("set" if id(self._line) in self.top else "maybe", self.attr))

    def visit_Del(self, node: cst.Del) -> None:
        self._mark_targets([node.target])

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if is_self(node.value) and node.attr.value == self.attr and id(node) not in self._targets:
            self.events.append(("read", self.attr))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and is_self(func.value):
            self.events.append(("call", func.attr.value))
        elif isinstance(func, cst.Name) and func.value in ("hasattr", "getattr", "delattr") \
                and len(node.args) >= 2 and is_self(node.args[0].value):
            name = node.args[1].value
            if not isinstance(name, cst.SimpleString) or name.evaluated_value == self.attr:
                self.events.append(("guard", func.value))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # `"x" in self.__dict__` / `in vars(self)`
        if isinstance(node.left, cst.SimpleString) and node.left.evaluated_value == self.attr:
            self.events.append(("guard", "__dict__"))


def _events(fn: cst.FunctionDef, attr: str) -> list[tuple[str, str]]:
    collector = _Events(attr, body_statements(fn))
    visit(fn.body, collector)
    return collector.events


@dataclass
class Nulling:
    """What `self.<attr> = None` at the end of a release changes for callers.
    `blockers`: why no fix may be offered; `changes`: what a caller may see (an unsafe
    fix at most)."""

    blockers: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)

    @property
    def safe(self) -> bool:
        return not self.blockers and not self.changes


def _methods_of(ctx: FileContext, cls: cst.ClassDef) -> list[tuple[str, cst.FunctionDef]]:
    """(class name, method) for every method an instance of `cls` or of a subclass may run:
    its own, its bases' (this file and other project files) and its subclasses'."""
    out: list[tuple[str, cst.FunctionDef]] = []
    for klass in [cls, *local_bases(ctx, cls), *local_subclasses(ctx, cls)]:
        out.extend((klass.name.value, fn) for fn in body_functions(klass))
    release = ctx.release
    seen: set[str] = set()
    todo = list(release.bases(cls))
    for base in (b for b in todo if not isinstance(b, cst.ClassDef)):
        if base.qualname in seen:
            continue
        seen.add(base.qualname)
        for name in base.methods:
            fn = release.method(base, name)
            if fn is not None:
                out.append((base.qualname.rsplit(".", 1)[1], fn))
        todo.extend(release.bases(base))
    for qualified in _project_subclasses(ctx, cls):
        summary = ctx.index.classes.get(qualified)
        if summary is None or os.path.abspath(summary.path) == os.path.abspath(ctx.path):
            continue
        for name in summary.methods:
            fn = release.method(summary, name)
            if fn is not None:
                out.append((qualified.rsplit(".", 1)[1], fn))
    return out


def _project_subclasses(ctx: FileContext, cls: cst.ClassDef) -> tuple[str, ...]:
    return ctx.index.ask(_subclasses, f"{ctx.module_name}.{cls.name.value}")


def _subclasses(index, qualified: str) -> tuple[str, ...]:
    """Every project class deriving from `qualified`, however far down."""
    children: dict[str, list[str]] = {}
    for name, summary in index.classes.items():
        for base in summary.bases:
            children.setdefault(index.resolve(base) or base, []).append(name)
    found: list[str] = []
    todo = [qualified]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.append(child)
                todo.append(child)
    return tuple(found)


def _readers(ctx: FileContext, methods: list[tuple[str, cst.FunctionDef]], attr: str,
             skip: set[int], moot: Optional[set[int]] = None) -> tuple[list[str], list[str]]:
    """(methods that read `self.attr` before assigning it on every path - directly or
    through a method they call first -, `hasattr`-style guards), as `Class.m()`. `moot`:
    methods left out of the readers, and collected into it when given (see `nulling`)."""
    events = {id(fn): _events(fn, attr) for _, fn in methods}
    by_name: dict[str, list[int]] = {}
    for _, fn in methods:
        by_name.setdefault(fn.name.value, []).append(id(fn))
    reading: set[int] = set()
    changed = True
    while changed:
        changed = False
        for _, fn in methods:
            if id(fn) in reading or id(fn) in skip:
                continue  # a release reading it again is re-entry (`changes`), not a reader
            for kind, name in events[id(fn)]:
                if kind == "set":
                    break
                if kind == "read" or (kind == "call" and any(i in reading for i in by_name.get(name, ()))):
                    reading.add(id(fn))
                    changed = True
                    break
    readers = [f"`{owner}.{fn.name.value}()`" for owner, fn in methods
               if id(fn) in reading and fn.name.value not in _CONSTRUCTION
               and (moot is None or id(fn) not in moot)]
    guards = sorted({f"`{kind_name}` in `{owner}.{fn.name.value}()`" for owner, fn in methods
                     for kind, kind_name in events[id(fn)] if kind == "guard"})
    return readers, guards


def _class_attribute(ctx: FileContext, cls: cst.ClassDef, attr: str) -> Optional[str]:
    """The class (this one or a base) that defines `attr` at class level."""
    for klass in [cls, *local_bases(ctx, cls)]:
        for stmt in body_statements(klass):
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value == attr:
                return klass.name.value
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else (
                        [small.target] if isinstance(small, cst.AnnAssign) and small.value is not None else [])
                    if any(isinstance(t, cst.Name) and t.value == attr for t in targets):
                        return klass.name.value
    for base in _project_bases(ctx, cls):
        if attr in base.methods:
            return base.qualname.rsplit(".", 1)[1]
        node = _class_node(ctx, base)
        if node is not None and any(
                isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None
                and any(isinstance(t, ast.Name) and t.id == attr
                        for t in (s.targets if isinstance(s, ast.Assign) else [s.target]))
                for s in node.body):
            return base.qualname.rsplit(".", 1)[1]
    return None


def _project_bases(ctx: FileContext, cls: cst.ClassDef) -> list:
    found, todo, seen = [], list(ctx.release.bases(cls)), set()
    while todo:
        base = todo.pop()
        if isinstance(base, cst.ClassDef) or base.qualname in seen:
            continue
        seen.add(base.qualname)
        found.append(base)
        todo.extend(ctx.release.bases(base))
    return found


def _class_node(ctx: FileContext, summary) -> Optional[ast.ClassDef]:
    parsed = ctx.index.source(summary.path)
    if parsed is None:
        return None
    for node in ast.walk(parsed[0]):
        if isinstance(node, ast.ClassDef) and node.lineno == summary.line:
            return node
    return None


def outside_reads(ctx: FileContext, attr: str) -> tuple[str, ...]:
    """Where project code reads `.attr` on something other than `self`/`cls`
    (`runner.model`), as `path:line`, the first few: it may be this object's."""
    return ctx.index.ask(_outside_reads, attr)


def _outside_reads(index, attr: str) -> tuple[str, ...]:
    needle = ("." + attr).encode()
    found: list[str] = []
    for path in sorted(index.files):
        try:
            data = read_source(path)
        except OSError:
            continue
        if needle not in data or len(data) > MAX_PARSE_BYTES:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, ast.Load) \
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{os.path.relpath(path)}:{node.lineno}")
                break
        if len(found) >= 3:
            break
    return tuple(found)


def _fails_once_deleted(fn: cst.FunctionDef, deleted: str) -> bool:
    """Does `fn` read `self.<deleted>` with no `hasattr`/`getattr` guard and never
    assign it? Once a release has run `del self.<deleted>`, such a method fails with
    AttributeError where it reads it: called after the release, it is already broken."""
    read = False
    for kind, name in _events(fn, deleted):
        if kind in ("guard", "set", "maybe"):
            return False
        read = read or kind == "read"
    return read


def nulling(ctx: FileContext, cls: cst.ClassDef, attr: str, release: cst.FunctionDef,
            state: str = "`None`", deleted: Optional[str] = None) -> Nulling:
    """Does `self.<attr> = None` at the end of `release` keep behaviour? `state`: what
    the attribute is after the edit, for the words of `changes` (`closed` when the edit
    calls the part's own release instead). `deleted`: an attribute `release` deletes
    (`del self.model`): a method that reads it unguarded already fails after the release,
    so its reading `self.<attr>` too is a change the help line names, not a blocker."""
    verdict = Nulling()
    cls_name, where = cls.name.value, f"`{release.name.value}()`"
    methods = _methods_of(ctx, cls)
    for _, fn in methods:
        if fn.name.value == attr and is_property(ctx, fn):
            verdict.blockers.append(f"`{cls_name}.{attr}` is a property")
    owner = _class_attribute(ctx, cls, attr)
    if owner is not None:
        verdict.blockers.append(f"`{owner}.{attr}` is also a class attribute, which `self.{attr} = None` would hide")
    moot: Optional[set[int]] = None
    if deleted is not None:
        moot = {id(fn) for _, fn in methods if fn is not release and _fails_once_deleted(fn, deleted)}
        # and the methods that call one of those on `self` (`_dummy_run()` -> `execute_model()`)
        names = {fn.name.value for _, fn in methods if id(fn) in moot}
        grown = True
        while grown:
            grown = False
            for _, fn in methods:
                if fn is release or id(fn) in moot or any(k == "guard" for k, _ in _events(fn, deleted)):
                    continue
                if any(k == "call" and n in names for k, n in _events(fn, deleted)):
                    moot.add(id(fn))
                    names.add(fn.name.value)
                    grown = True
    readers, guards = _readers(ctx, methods, attr, skip={id(release)}, moot=moot)
    if moot:
        failing, _ = _readers(ctx, [(o, fn) for o, fn in methods if id(fn) in moot], attr, skip={id(release)})
        if failing:
            verdict.changes.append(
                f"{', '.join(failing[:3])}{f' and {len(failing) - 3} more' if len(failing) > 3 else ''} "
                f"read{'s' if len(failing) == 1 else ''} `self.{attr}` "
                f"(now {state}) if called after {where}; "
                f"{'it reads' if len(failing) == 1 else 'they read'} the deleted `self.{deleted}` too, "
                f"unguarded, or call{'s' if len(failing) == 1 else ''} a method that does")
    if readers:
        verdict.blockers.append(f"{', '.join(readers[:3])} still read{'s' if len(readers) == 1 else ''} "
                                f"`self.{attr}` after {where}")
    if guards:
        verdict.blockers.append(f"{guards[0]} tells a released `self.{attr}` from a missing one")
    if any(kind == "read" for kind, _ in _events(release, attr)):
        verdict.changes.append(f"`self.{attr}` is {state} when {where} runs again, and {where} reads it")
    if not attr.startswith("_"):
        # a public name: code outside the project may read it after the release
        verdict.changes.append(f"`{cls_name}.{attr}` is {state} after {where}")
    elsewhere = outside_reads(ctx, attr) if not verdict.blockers and attr.startswith("_") else ()
    if elsewhere:
        verdict.changes.append(f"`{cls_name}.{attr}` is {state} after {where} "
                               f"(`.{attr}` is read at {', '.join(elsewhere)})")
    return verdict


# -- who else holds it -----------------------------------------------------------------


def _holds(expr: cst.BaseExpression, held: set[str], names: set[str], returns: set[str]) -> bool:
    """Does the value of `expr` keep an object in `held` (as `self.<a>`), or a part of
    it, alive? `names`: locals known to hold one; `returns`: methods whose result does."""
    if self_attribute(expr) in held:
        return True
    if isinstance(expr, cst.Name):
        return expr.value in names
    if isinstance(expr, cst.Attribute):
        # a bound method keeps its object; a plain attribute read (`self.model.config`) is
        # another object
        return False
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Name) and func.value in _LOOKS:
            return False
        if isinstance(func, cst.Attribute):
            if is_self(func.value):
                if func.attr.value in returns:
                    return True
            elif func.attr.value in _PART_METHODS and _holds(func.value, held, names, returns):
                return True
            elif self_attribute(func.value) in held or (
                    isinstance(func.value, cst.Name) and func.value.value in names):
                return False  # a result computed by the object, not the object
        return any(_holds(a.value, held, names, returns) for a in expr.args)
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return any(_holds(e.value, held, names, returns) for e in expr.elements)
    if isinstance(expr, (cst.GeneratorExp, cst.ListComp, cst.SetComp)):
        return _holds(expr.for_in.iter, held, names, returns) or _holds(expr.elt, held, names, returns)
    if isinstance(expr, cst.Dict):
        return any(isinstance(e, cst.DictElement) and _holds(e.value, held, names, returns)
                   for e in expr.elements)
    return False


def _assignments(fn: cst.FunctionDef) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    found: list = []
    for node in _walk(fn.body):
        if isinstance(node, cst.Assign):
            found.extend((t.target, node.value) for t in node.targets)
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            found.append((node.target, node.value))
        elif isinstance(node, cst.For):
            found.append((node.target, node.iter))
    return found


def holders(ctx: FileContext, cls: cst.ClassDef, attr: str) -> list[tuple[str, str]]:
    """Other attributes of `cls` that keep `self.<attr>`'s object or its parts alive -
    `self.optimizer = SGD(self.model.parameters())`, through a method's result, and on
    through what was built from those - as (attribute, method that builds it)."""
    held = {attr}
    found: list[tuple[str, str]] = []
    # Each method is walked once per class, not once per attribute asked about: the fixpoint
    # below revisits them for every attribute it adds (a 7,000-line model runner has
    # hundreds of assignments, and a release that keeps ten heavy attributes asks ten times).
    methods = ctx.memo(f"assignments of {id(cls)}", lambda: [
        (fn.name.value, _assignments(fn), _returned(fn)) for fn in body_functions(cls)])
    changed = True
    while changed:
        changed = False
        returns = {name for name, assigned, results in methods
                   if _returns_held(assigned, results, held)}
        for name, assigned, _ in methods:
            names: set[str] = set()
            for target, value in assigned:
                holds = _holds(value, held, names, returns)
                if isinstance(target, cst.Name) and holds:
                    names.add(target.value)
                target_attr = self_attribute(target)
                if holds and target_attr is not None and target_attr not in held:
                    held.add(target_attr)
                    found.append((target_attr, name))
                    changed = True
    return found


def _returned(fn: cst.FunctionDef) -> list[cst.BaseExpression]:
    return [n.value for n in _walk(fn.body) if isinstance(n, cst.Return) and n.value is not None]


def _returns_held(assigned: list[tuple[cst.BaseExpression, cst.BaseExpression]],
                  results: list[cst.BaseExpression], held: set[str]) -> bool:
    names: set[str] = set()
    for target, value in assigned:
        if isinstance(target, cst.Name) and _holds(value, held, names, set()):
            names.add(target.value)
    return any(_holds(r, held, names, set()) for r in results)


def still_held(ctx: FileContext, cls: cst.ClassDef, attr: str, dropped: Iterable[str]) -> list[tuple[str, str]]:
    """`holders` of `self.<attr>` that the release (and the fix) leave in place."""
    gone = set(dropped)
    return [(a, m) for a, m in holders(ctx, cls, attr) if a not in gone]
