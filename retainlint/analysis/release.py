"""Release paths: which methods release an object, and what they let go of.

A release method is where an owner gives back what it holds: a method with a release
name (`shutdown`, `close`, ... - configurable), callable with `self` alone, that releases
the whole object rather than one item per call (`free(self, idx)` is a per-step hot path,
not a release). What it drops is followed through the methods it calls on `self`, the
project base classes (in this file or another) and `super()`. RL601, RL602 and RL606 ask
what a release path drops; RL502 which methods release a hook owner; RL203, RL305, RL401,
RL501 and RL502 which release method a fix goes into; RL702 whether a method that clears
a stored exception is named a release.
The prefilters' `ast` twin of the method shape is `project/release_shape.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Union

import libcst as cst

from retainlint.analysis.cstutil import (
    OwnScopeVisitor,
    body_functions,
    body_statements,
    decorator_names,
    is_instance_method,
    is_self,
    releases_whole_object,
    self_attribute,
)
from retainlint.analysis.exit_stacks import _exit_stacks, _StackUses
from retainlint.analysis.walk import visit
from retainlint.analysis.weight import sources
from retainlint.project.names import OFFLOADS, releases

if TYPE_CHECKING:
    from retainlint.analysis.context import FileContext
    from retainlint.project.index import ClassSummary

# Calls that only read what they are handed (`logger.info("closing %s", self)`).
READERS = frozenset(
    {
        "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "print",
        "info_once", "warning_once", "debug_once", "repr", "str", "id", "type", "isinstance",
        "hasattr", "getattr", "format", "unregister", "callable",
    }
)
FINALIZER = "__del__"
_MAX_DEPTH = 8

# A class as the analysis sees it: a ClassDef of this file, or a summary of another file.
Owner = Union[cst.ClassDef, "ClassSummary"]


# -- which methods release ------------------------------------------------------------


def is_release_method(ctx: FileContext, fn: cst.FunctionDef) -> bool:
    """A method named as a release method (configurable) that releases the whole object:
    an instance method callable with `self` alone (`releases_whole_object`: not
    `free(self, blocks)`, not `free(self, idx=None)` that returns when given nothing), not
    abstract, an overload or a property, and not a stub that raises (subclasses
    release)."""
    if fn.name.value not in ctx.settings.release_methods or not is_instance_method(ctx, fn):
        return False
    names = decorator_names(ctx, fn)
    if any(n.rsplit(".", 1)[-1] in ("abstractmethod", "overload", "property") for n in names):
        return False
    statements = body_statements(fn)
    if statements and all(_is_stub(s) for s in statements) and any(_raises(s) for s in statements):
        return False
    return releases_whole_object(ctx, fn)


def release_methods(ctx: FileContext, cls: cst.ClassDef, finalizer: bool = False) -> list[cst.FunctionDef]:
    """The class's own release methods, in the configured order; `__del__` only when
    `finalizer` (what a finalizer leaves on `self` dies with the object)."""
    methods = ctx.methods(cls)
    return [methods[name] for name in ctx.settings.release_methods
            if name in methods and (finalizer or name != FINALIZER) and is_release_method(ctx, methods[name])]


def fix_release_method(ctx: FileContext, cls: cst.ClassDef, finalizer: bool = False,
                       skip: frozenset[str] = frozenset()) -> Optional[cst.FunctionDef]:
    """The release method a fix puts cleanup into (`gc.unfreeze()`, `atexit.unregister(...)`,
    taking a registry entry out): the first of the class's own release methods not named
    in `skip` (methods the class installs as callbacks). Never a per-item
    `free(self, block_id)` (it runs once per item), and `__del__` only when `finalizer`:
    it does not run while something still holds the instance (a hook over `self`)."""
    found = [fn for fn in release_methods(ctx, cls, finalizer) if fn.name.value not in skip]
    return found[0] if found else None


def named_release(ctx: FileContext, fn: cst.FunctionDef) -> bool:
    """Is `fn` named as a release method (the configured names, `__del__` among them),
    whatever its shape? For state a method clears (RL702's stored exception taken out):
    a per-item `release(self, request_id)` that clears it clears it all the same."""
    return fn.name.value in ctx.settings.release_methods


def release_names(ctx: FileContext) -> list[str]:
    """The configured release-method names a caller can call to release an object: all
    but the finalizer `__del__`."""
    return [name for name in ctx.settings.release_methods if name != FINALIZER]


def _is_stub(stmt) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(
            isinstance(s, (cst.Pass, cst.Raise))
            or (isinstance(s, cst.Expr) and isinstance(s.value, (cst.SimpleString, cst.Ellipsis,
                                                                  cst.ConcatenatedString)))
            for s in stmt.body
        )
    return False


def _raises(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Raise) for s in stmt.body)


# -- what one method body does to `self` --------------------------------------------------


@dataclass
class MethodDrops:
    """What one method body does to `self`'s attributes (nested scopes left out)."""

    unbound: set = field(default_factory=set)  # references let go: del, any new value, .clear()
    released: set = field(default_factory=set)  # released in place: own release, offload, handed to a releaser
    flags: set = field(default_factory=set)  # assigned a literal (`self.closed = True`): a state, no object let go
    dynamic: bool = False  # drops attributes we cannot name, or hands `self` over
    self_calls: set = field(default_factory=set)  # self.m(...)
    super_calls: set = field(default_factory=set)  # super().m(...)
    base_calls: list = field(default_factory=list)  # (Base expression, m) for Base.m(self)


def _is_self_dict(expr) -> bool:
    if isinstance(expr, cst.Attribute) and is_self(expr.value) and expr.attr.value == "__dict__":
        return True
    return (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "vars"
        and len(expr.args) == 1 and is_self(expr.args[0].value)
    )


def _getattr_of_self(expr) -> Optional[str]:
    """`x` for `getattr(self, "x"[, default])`."""
    if (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name)
        and expr.func.value == "getattr" and len(expr.args) >= 2
        and is_self(expr.args[0].value) and isinstance(expr.args[1].value, cst.SimpleString)
    ):
        value = expr.args[1].value.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _shrinks_to_nothing(method: str, node: cst.Call) -> bool:
    """`.resize_(0)`: a tensor or its storage gives its memory back in place."""
    return method == "resize_" and len(node.args) == 1 and isinstance(node.args[0].value, cst.Integer) \
        and node.args[0].value.evaluated_value == 0


def _storage_owner(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`self.x` for `self.x.storage()`, `self.x.untyped_storage()`, `self.x.data`: what
    owns the memory a resize gives back."""
    while True:
        if isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value in ("storage", "untyped_storage", "_typed_storage"):
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            expr = expr.value
        else:
            return expr


class _Collector(OwnScopeVisitor):
    def __init__(self) -> None:
        self.facts = MethodDrops()
        self.aliases: dict[str, set[str]] = {}  # local name -> attributes it holds

    def _held(self, expr) -> set[str]:
        attr = self_attribute(expr) or _getattr_of_self(expr)
        if attr is not None:
            return {attr}
        if isinstance(expr, cst.Name):
            return set(self.aliases.get(expr.value, ()))
        return set()

    def _bind(self, target, value) -> None:
        if isinstance(target, cst.Name):
            held = self._held(value)
            if isinstance(value, (cst.Tuple, cst.List)):
                held = set().union(*(self._held(e.value) for e in value.elements)) if value.elements else set()
            if held:
                self.aliases.setdefault(target.value, set()).update(held)

    def visit_Del(self, node: cst.Del) -> None:
        targets = [node.target]
        while targets:
            t = targets.pop()
            if isinstance(t, (cst.Tuple, cst.List)):
                targets.extend(e.value for e in t.elements)
                continue
            attr = self_attribute(t)
            if attr is not None:
                self.facts.unbound.add(attr)
            elif isinstance(t, cst.Subscript) and _is_self_dict(t.value):
                self.facts.dynamic = True
            elif isinstance(t, cst.Subscript) and self_attribute(t.value) is not None:
                self.facts.unbound.add(self_attribute(t.value))  # `del self.caches[:]`

    def _assigned(self, target, value) -> None:
        attr = self_attribute(target)
        if attr is not None:
            self.facts.unbound.add(attr)  # `= None`, or any new value: the old one goes
            if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)) or (
                    isinstance(value, cst.Name) and value.value in ("True", "False")):
                self.facts.flags.add(attr)
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._assigned(element.value, None)
            return
        if isinstance(target, cst.Subscript) and _is_self_dict(target.value):
            self.facts.dynamic = True
            return
        if value is not None:
            self._bind(target, value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._assigned(t.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assigned(node.target, node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, node.iter)

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.facts
        func = node.func
        if isinstance(func, cst.Name):
            if func.value == "super":
                return  # `super(Cls, self)`: the call on it is what counts (`super_calls`)
            if func.value in ("delattr", "setattr") and node.args and is_self(node.args[0].value):
                name = node.args[1].value if len(node.args) > 1 else None
                if isinstance(name, cst.SimpleString) and isinstance(name.evaluated_value, str):
                    facts.unbound.add(name.evaluated_value)
                else:
                    facts.dynamic = True
                return
            if func.value == "vars" and any(is_self(a.value) for a in node.args):
                facts.dynamic = True
                return
        method = func.attr.value if isinstance(func, cst.Attribute) else (
            func.value if isinstance(func, cst.Name) else None)
        if isinstance(func, cst.Attribute):
            receiver = func.value
            if is_self(receiver):
                facts.self_calls.add(method)
            elif (
                isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name)
                and receiver.func.value == "super"
            ):
                facts.super_calls.add(method)
            elif _is_self_dict(receiver):
                if method in ("clear", "pop", "popitem", "update", "__delitem__", "__setitem__"):
                    facts.dynamic = True
            elif method == "clear" and not node.args and self_attribute(receiver) is not None:
                facts.unbound.add(self_attribute(receiver))  # empties the object itself
            elif releases(method) or method in OFFLOADS:
                facts.released |= self._held(receiver)
            elif _shrinks_to_nothing(method, node):
                facts.released |= self._held(_storage_owner(receiver))
        for i, arg in enumerate(node.args):
            if is_self(arg.value):
                if method in READERS:
                    continue
                if i == 0 and isinstance(func, cst.Attribute) and not is_self(func.value):
                    facts.base_calls.append((func.value, method))  # Base.close(self)
                else:
                    facts.dynamic = True  # `_teardown(self)`: may drop anything
            elif method is not None and releases(method):
                facts.released |= self._held(arg.value)
            elif isinstance(arg.value, cst.Attribute) and releases(arg.value.attr.value) \
                    and method not in READERS:
                # a part's own release handed to a runner: `asyncio.to_thread(self.pool.shutdown)`
                facts.released |= self._held(arg.value.value)


def method_drops(fn: cst.FunctionDef) -> MethodDrops:
    collector = _Collector()
    visit(fn.body, collector)
    return collector.facts


# -- the whole release path ------------------------------------------------------------


@dataclass
class Drops:
    """What a release path lets go of."""

    unbound: set  # references dropped: `del self.x`, `self.x = None` (or any value), `.clear()`
    released: set  # released where it stays referenced: `self.x.shutdown()`, `.to("cpu")`
    flags: set  # only assigned literals: `self.closed = True`
    methods: list  # the methods on the path, release methods first: (owner, FunctionDef)

    @property
    def all(self) -> set:
        return self.unbound | self.released

    @property
    def objects(self) -> set:
        """Attributes whose object the path lets go of or releases (not mere flags)."""
        return self.released | (self.unbound - self.flags)


class ReleasePaths:
    """Release paths of one file's classes (`FileContext.release`)."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self._facts: dict[int, MethodDrops] = {}
        self._callbacks: dict[int, dict[str, tuple[set[str], set[str]]]] = {}
        self._drops: dict[tuple[int, ...], Optional[Drops]] = {}

    def facts(self, fn: cst.FunctionDef) -> MethodDrops:
        key = id(fn)
        if key not in self._facts:
            self._facts[key] = method_drops(fn)
        return self._facts[key]

    def called_on_self(self, cls: cst.ClassDef, start: str) -> set[str]:
        """The names `start` (a method of `cls`) calls on `self` (`self.cleanup()`),
        directly or through `cls`'s own methods: what runs when it runs."""
        methods = self.ctx.methods(cls)
        found: set[str] = set()
        pending = [start]
        while pending:
            method = methods.get(pending.pop())
            if method is None:
                continue
            for callee in self.facts(method).self_calls - found:
                found.add(callee)
                pending.append(callee)
        return found

    # -- classes of this file and of the project -----------------------------------
    def bases(self, owner: Owner) -> list:
        """Base classes of `owner` the project has: ClassDefs of this file, summaries of
        other files."""
        ctx, index = self.ctx, self.ctx.index
        found: list = []
        if isinstance(owner, cst.ClassDef):
            for base in owner.bases:
                q = ctx.qualname(base.value)
                local = ctx.classes.get(q) if q else None
                if local is not None and local is not owner:
                    found.append(local)
                    continue
                summary = index.classes.get(index.resolve(ctx.absolute(q)) or "")
                if summary is not None:
                    found.append(summary)
        else:
            for base_name in owner.bases:
                summary = index.classes.get(index.resolve(base_name) or "")
                if summary is not None and summary is not owner:
                    found.append(summary)
        return found

    def method(self, owner: Owner, name: str) -> Optional[cst.FunctionDef]:
        """The method `name` defined by `owner` itself (another file's, re-read)."""
        if isinstance(owner, cst.ClassDef):
            return self.ctx.methods(owner).get(name)
        summary = owner.methods.get(name)
        if summary is None:
            return None
        return sources(self.ctx.index).function(summary.path, summary.line)

    def lookup(self, owner: Owner, name: str, depth: int = 0):
        """(defining class, method) for `name` looked up from `owner` (MRO-like); the
        method is None when another file's could not be read."""
        if depth > _MAX_DEPTH:
            return None
        defined = name in (self.ctx.methods(owner) if isinstance(owner, cst.ClassDef) else owner.methods)
        if defined:
            return owner, self.method(owner, name)
        for base in self.bases(owner):
            found = self.lookup(base, name, depth + 1)
            if found is not None:
                return found
        return None

    # -- what a release path drops ---------------------------------------------------
    def drops(self, cls: cst.ClassDef, releases_: list[cst.FunctionDef]) -> Optional[Drops]:
        """What the release methods `releases_` of `cls` drop, with the methods they call
        on `self` (wherever the class finds them), through `super()` and `Base.m(self)`,
        and the methods registered on an `ExitStack` they close; None when they drop
        attributes we cannot name (`vars(self)`, `self.__dict__`, `self` handed to other
        code, a callable attribute called, a project method we could not read). Asked by
        several checks of the same class: worked out once."""
        key = (id(cls), *map(id, releases_))
        if key not in self._drops:
            self._drops[key] = self._follow(cls, releases_)
        return self._drops[key]

    def _follow(self, cls: cst.ClassDef, releases_: list[cst.FunctionDef]) -> Optional[Drops]:
        assigned: set[str] = set()
        for fn in body_functions(cls):
            assigned.update(k[5:] for k in self.ctx.heavy.local_assignments(fn) if k.startswith("self."))
        unbound: set[str] = set()
        released: set[str] = set()
        flags: set[str] = set()
        path: list = []
        seen: set[int] = set()
        todo: list = [(cls, fn) for fn in reversed(releases_)]
        callbacks = self._stack_callbacks(cls)
        while todo:
            owner, fn = todo.pop()
            if fn is None:
                if owner is not cls:
                    return None  # a project method we could not read
                continue
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            path.append((owner, fn))
            facts = self.facts(fn)
            if facts.dynamic:
                return None
            unbound |= facts.unbound
            released |= facts.released
            flags |= facts.flags
            # closing an `ExitStack` runs what was registered on it: the methods of the
            # class handed to it (`self._stack.callback(self._free)`) run on this path, and
            # the parts whose release was handed to it (`.callback(self._pool.shutdown)`) go
            closed = [callbacks[attr] for attr in facts.released if attr in callbacks]
            for _, parts in closed:
                released |= parts
            for name in {m for methods, _ in closed for m in methods} | facts.self_calls:
                found = self.lookup(cls, name)
                if found is not None:
                    todo.append(found)
                elif name in assigned:
                    return None  # a callable attribute (a finalizer): may drop anything
            for name in facts.super_calls:
                for base in self.bases(owner):
                    found = self.lookup(base, name)
                    if found is not None:
                        todo.append(found)
                        break
            for base_expr, name in facts.base_calls:
                target = self._named_base(owner, base_expr)
                if target is None:
                    return None  # `helper.close(self)`: hands `self` over
                found = self.lookup(target, name)
                if found is not None:
                    todo.append(found)
        return Drops(unbound, released, flags, path)

    def _stack_callbacks(self, cls: cst.ClassDef) -> dict[str, tuple[set[str], set[str]]]:
        """{`ExitStack` attribute: (methods of `cls` registered on it, attributes whose
        release is)}: `self.<stack>.callback(self._free)` registers a method,
        `.callback(self._pool.shutdown)` and `.enter_context(self._file)` a part."""
        key = id(cls)
        if key not in self._callbacks:
            uses = _StackUses(set(_exit_stacks(self.ctx, cls)))
            if uses.attrs:
                visit(cls, uses)
            found: dict[str, tuple[set[str], set[str]]] = {}
            for attr, calls in uses.registrations.items():
                registered, parts = found.setdefault(attr, (set(), set()))
                for call, _ in calls:
                    handed = call.args[0].value if call.args else None
                    if (name := self_attribute(handed)) is not None:
                        (registered if self.lookup(cls, name) is not None else parts).add(name)
                    elif isinstance(handed, cst.Attribute) and releases(handed.attr.value) \
                            and (part := self_attribute(handed.value)) is not None:
                        parts.add(part)
            self._callbacks[key] = found
        return self._callbacks[key]

    def _named_base(self, owner: Owner, base_expr: cst.BaseExpression):
        """The project base of `owner` that `Base` names in `Base.m(self)`."""
        if not isinstance(owner, cst.ClassDef):
            return None
        q = self.ctx.qualname(base_expr)
        if not q:
            return None
        for base in self.bases(owner):
            label = base.name.value if isinstance(base, cst.ClassDef) else base.qualname
            if label == q or label.endswith("." + q.rsplit(".", 1)[-1]):
                return base
        return None
