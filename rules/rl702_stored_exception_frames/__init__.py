"""RL702 stored-exception-frames: the rule itself - which handlers it reads, where a store
lives, and how a store is judged and reported. Its parts: `stores` (the stores a handler
makes), `consumers` (readers that re-raise, return or take the exception), `callers`
(callers keeping a returned result), `blocks` and
`narrowing` (control flow), `names`, `import_probes`, `examples` (its documentation and
examples)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.analysis.heavy import find_param
from retainlint.analysis.hooks import short
from retainlint.rules.prefilters.rl702 import StoredExceptionFramesPrefilter
from retainlint.analysis.release import named_release
from retainlint.analysis.severity import Facts, level
from retainlint.analysis.rule import RelatedNode, Rule
from retainlint.analysis.holding import (
    Scopes,
    ctx_code,
    has_heavy_attribute,
)
from retainlint.analysis.walk import visit
from retainlint.rules.rl702_stored_exception_frames.blocks import _Leaves, _Rebinds, _leaves_loop
from retainlint.rules.rl702_stored_exception_frames.callers import _KeptResults
from retainlint.rules.rl702_stored_exception_frames.consumers import _Clearing, _Consumers
from retainlint.rules.rl702_stored_exception_frames.examples import DOCS, INVALID, VALID
from retainlint.rules.rl702_stored_exception_frames.import_probes import _import_error_only, _only_imports
from retainlint.rules.rl702_stored_exception_frames.names import _module_binds
from retainlint.rules.rl702_stored_exception_frames.stores import _Handler, _Store, _StoreFinder, _adds


class StoredExceptionFrames(Rule):
    prefilter = StoredExceptionFramesPrefilter
    name = "stored-exception-frames"
    summary = "An exception stored beyond its handler keeps every frame of its traceback alive"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = DOCS
    valid = VALID
    invalid = INVALID

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._scopes = Scopes(ctx)
        self._reported: set[int] = set()
        self._returned: list[tuple[_Handler, _Store]] = []  # judged once callers are known
        self._consumed: Optional[_Consumers] = None  # built on the first store judged

    # -- collection ----------------------------------------------------------------
    def visit_Try(self, node: cst.Try) -> None:
        self._try(node)

    def visit_TryStar(self, node) -> None:
        self._try(node)

    def _try(self, node) -> None:
        scope = self.ctx.scope
        fn = scope.function
        if fn is None:
            return  # module level: import-time frames only
        if _only_imports(node.body):
            return
        cls, owner = self._self_owner()
        for handler in node.handlers:
            if handler.name is None or not isinstance(handler.name.name, cst.Name):
                continue
            if _import_error_only(self.ctx, handler):
                continue
            h = _Handler(handler.name.name.value, handler, fn, cls, owner)
            finder = _StoreFinder(self, h, {h.name})
            visit(handler.body, finder)
            if h.aliases and not h.dropped:
                # the alias lives on in the function: stores of it anywhere count
                rest = _StoreFinder(self, h, set(h.aliases), skip=handler)
                visit(fn.body, rest)
            if h.dropped:
                continue
            if not h.stores and h.assigned:
                self._serving_loop_locals(node, h)
            if h.stores:
                self._judge(h)

    def _serving_loop_locals(self, node, h: _Handler) -> None:
        """A local assigned the exception in a handler of a `try` that a `while True:` loop
        runs again after success: it keeps the last failure's frames until the next
        failure replaces it (Python unbinds only the `as` name)."""
        loop = self._serving_loop(node)
        if loop is None or _leaves_loop(h.node.body):
            return  # a handler that re-raises, returns or breaks: the loop serves no more
        for name, (assign, line) in h.assigned.items():
            rebound = _Rebinds(name, assign)
            visit(loop.body, rebound)
            if rebound.found:
                continue
            heavy = self._heavy_frames(h)
            self.report(
                assign,
                f"`{name}` keeps exception `{h.name}` in a local of `{h.function.name.value}()`, "
                f"whose `while True:` loop keeps serving: until the next failure replaces it, "
                f"every frame of its traceback and their locals stay alive (Python unbinds "
                f"`{h.name}` at the end of the handler, not `{name}`); `del {name}` once it "
                f"is handed on, or clear `{h.name}.__traceback__` first",
                # one failure at a time, replaced by the next: bounded; the frames are the
                # work's (its arguments and results), which the loop does not show: their
                # weight is unknown unless shown heavy, never light
                severity=level(Facts(heavy=heavy or None, grows=False)),
                related=[RelatedNode(f"`{h.name}` bound here", h.node.name)],
                statement=line,
                consequence=Consequence(_frames_kept(h, heavy), f"the local `{name}` of `{h.function.name.value}()`",
                                        "as long as no later failure replaces it"),
            )

    def _serving_loop(self, node) -> Optional[cst.While]:
        """The `while True:` loop the `try` is directly in (no inner loop, same function),
        when the `try` neither returns nor breaks out of it on success."""
        for stmt in reversed(self.ctx.scope.statements):
            if stmt is node:
                continue
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef, cst.For)):
                return None
            if isinstance(stmt, cst.While):
                if ctx_code(self.ctx, stmt.test) not in ("True", "1"):
                    return None
                leaves = _Leaves()
                visit(node.body, leaves)
                if node.orelse is not None:
                    visit(node.orelse, leaves)
                return None if leaves.found else stmt
        return None

    def _self_owner(self) -> tuple[Optional[cst.ClassDef], Optional[cst.FunctionDef]]:
        """The innermost enclosing method (this function or one it is nested in) and its
        class: a closure inside a method reaches the method's `self`."""
        scope = self.ctx.scope
        for fn in reversed(scope.functions):
            for cls in reversed(scope.classes):
                if any(f is fn for f in body_functions(cls)):
                    return cls, fn
        return None, None

    def classify(self, target: cst.BaseExpression, h: _Handler) -> Optional[tuple[str, str, Optional[str]]]:
        """Where a store into `target` (or a container reached through it) lives:
        (kind, holder text, self attribute), or None for a local of this function."""
        if isinstance(target, cst.Attribute) and target.attr.value in ("__cause__", "__context__"):
            return None  # chaining onto an exception being raised
        root = target
        first_attr = None
        first_step = None  # the Attribute/Subscript applied to the root name
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            if isinstance(root.value, cst.Name):
                first_step = root
                if isinstance(root, cst.Attribute):
                    first_attr = root.attr.value
            root = root.value
        if not isinstance(root, cst.Name):
            return None
        text = ctx_code(self.ctx, target)
        name = root.value
        fn = h.function
        if (
            name in ("self", "cls") and h.cls is not None and h.self_owner is not None
            and find_param(h.self_owner, name) is not None
            and (h.self_owner is fn or name not in self._scopes.bindings(fn).bound)
        ):
            if target is root:
                return None
            return ("self", f"`{text}`", first_attr if name == "self" else None)
        if find_param(fn, name) is not None:
            # `state.error = e`: an object the caller owns. Not `result[0] = e` nor
            # `errors.append(e)`: out-parameters the caller reads and drops.
            if target is root or not isinstance(first_step, cst.Attribute):
                return None
            return ("param", f"`{text}` (reached through parameter `{name}`)", None)
        ref = self._scopes_ref(root, fn)
        if ref is None:
            return None
        if ref[0] == "g":
            if name in self.ctx.classes and target is not root:
                return ("class", f"`{text}` (class attribute)", None)
            if target is root or _module_binds(self.ctx.module, name):
                return ("global", f"`{text}` (module global)", None)
        return None

    def _scopes_ref(self, name: cst.Name, fn: cst.FunctionDef) -> Optional[tuple]:
        """Global or local, seen from `fn` (a closure's enclosing locals count as local)."""
        b = self._scopes.bindings(fn)
        if name.value in b.globals:
            return ("g", name.value)
        if name.value in b.nonlocals or name.value in b.bound:
            return ("l", name.value)
        if len(self.ctx.scope.functions) > 1:
            for outer in self.ctx.scope.functions[:-1]:
                ob = self._scopes.bindings(outer)
                if name.value in ob.bound or find_param(outer, name.value) is not None:
                    return ("l", name.value)
        return ("g", name.value)

    # -- judgement -----------------------------------------------------------------
    def _judge(self, h: _Handler) -> None:
        for s in h.stores:
            if s.kind == "self" and s.attr and self._handed_off(h, s.attr):
                continue
            if s.kind == "return":
                # `if error is not None: raise error` before the return: the returned
                # container only ever holds results
                if not h.reraised:
                    self._returned.append((h, s))
                continue
            consumed = False
            if s.slot is not None:
                consumers = self._consumers()
                cls = h.cls if s.kind == "self" else None
                if consumers.takes(s.slot, cls, h.function):
                    continue  # handed off: its reader takes it out
                if consumers.raises(s.slot, cls) or consumers.returns(s.slot, cls) or (
                        s.kind == "self" and self._thread_outcome(h)):
                    # a result kept for a reader that re-raises or returns it (a
                    # hand-written future, a run-once initialiser's terminal failure, a
                    # thread's outcome): by design, unless its frames pin heavy locals
                    # for as long as it is kept
                    if not self._heavy_locals(h):
                        continue
                    consumed = True
            self._report(h, s, consumed=consumed)

    def _thread_outcome(self, h: _Handler) -> bool:
        """Is the handler in `run()` of a `threading.Thread` subclass? A thread runs once:
        what its `run()` records on the thread object is its outcome, read by whoever
        joined it."""
        fn, cls = h.function, h.cls
        return cls is not None and fn is h.self_owner and fn.name.value == "run" and self._is_thread(cls)

    def _is_thread(self, cls: cst.ClassDef, depth: int = 0) -> bool:
        for arg in cls.bases:
            if self.ctx.qualname(arg.value) == "threading.Thread":
                return True
            parent = self.ctx.classes.get(arg.value.value) if isinstance(arg.value, cst.Name) else None
            if parent is not None and parent is not cls and depth < 8 and self._is_thread(parent, depth + 1):
                return True
        return False

    def _consumers(self) -> "_Consumers":
        if self._consumed is None:
            self._consumed = _Consumers(self, self.ctx.module)
        return self._consumed

    def related(self, a: cst.ClassDef, b: cst.ClassDef) -> bool:
        """Are two classes of this file the same, or one a base of the other?"""
        return a is b or self._derives(a, b) or self._derives(b, a)

    def _derives(self, cls: cst.ClassDef, base: cst.ClassDef, depth: int = 0) -> bool:
        if depth > 8:
            return False
        for arg in cls.bases:
            if isinstance(arg.value, cst.Name):
                parent = self.ctx.classes.get(arg.value.value)
                if parent is base or (parent is not None and self._derives(parent, base, depth + 1)):
                    return True
        return False

    def module_global(self, name: str, fn: cst.FunctionDef) -> bool:
        """Is `name`, read in `fn`, a module global (declared, or not bound in `fn` and
        bound at module level)?"""
        b = self._scopes.bindings(fn)
        if name in b.globals:
            return True
        if name in b.bound or name in b.nonlocals or find_param(fn, name) is not None:
            return False
        return _module_binds(self.ctx.module, name)

    def leave_Module(self, node: cst.Module) -> None:
        """A returned container only outlives the call when a caller keeps it: report it
        when a caller in this file stores the result on an object or in a global."""
        if not self._returned:
            return
        kept = _KeptResults(self.ctx, {h.function.name.value for h, _ in self._returned})
        visit(node, kept)
        for h, s in self._returned:
            if h.function.name.value in kept.kept:
                self._report(h, s, kept.kept[h.function.name.value])

    def _report(self, h: _Handler, s: _Store, caller: Optional[cst.CSTNode] = None,
                consumed: bool = False) -> None:
        if id(s.node) in self._reported:
            return  # the same store, reached through several handlers' aliases
        self._reported.add(id(s.node))
        heavy = self._heavy_frames(h)
        via = f" (through `{s.exc}`)" if s.exc != h.name else ""
        related = [RelatedNode(f"`{h.name}` bound here", h.node.name)]
        if caller is not None:
            related.append(RelatedNode("a caller keeps the result here", caller))
        if consumed:
            # re-raised later: the reader needs the exception, not its frames' locals
            fix = (f", heavy ones among them, for as long as it is kept for its reader; "
                   f"clear `{h.name}.__traceback__` before storing it (keep "
                   f"`traceback.format_exc()` if the trace is wanted)")
        else:
            fix = (f"; store `str({h.name})`/`traceback.format_exc()` instead, or clear "
                   f"`{h.name}.__traceback__` first")
        self.report(
            s.node,
            f"{s.holder} keeps exception `{h.name}`{via} alive beyond its handler, and with it "
            f"every frame of its traceback (from `{h.function.name.value}()` down) and their "
            f"locals{fix}",
            # kept for a reader that re-raises it, the exception is meant to stay until then;
            # otherwise one exception per holder, light unless its frames hold tensors - but a
            # result a caller keeps may be in the next call's frames: a chain, unbounded
            # an exception added to a container (`buffer.append((event, exc))`) is one more
            # per failure, until something drains it: growth not ruled out
            severity=level(Facts(heavy=heavy, grows=None if caller is not None or _adds(s.node) else False,
                                 meant_to_go=False if consumed else None)),
            related=related,
            statement=s.statement,
            consequence=self._kept_store(h, s, heavy, caller, consumed),
        )

    def _kept_store(self, h: _Handler, s: _Store, heavy: bool, caller: Optional[cst.CSTNode],
                    consumed: bool) -> Consequence:
        """What a store keeps (the exception and its frames), by what, for how long."""
        holder, growth = s.holder, ""
        if s.kind == "return":
            where = caller.targets[0].target if isinstance(caller, cst.Assign) else \
                caller.func.value if isinstance(caller, cst.Call) and isinstance(caller.func, cst.Attribute) else None
            kept_in = f"`{short(self.ctx.code(where), 40)}`" if where is not None else "what a caller keeps"
            holder, lifetime = f"{s.holder}, kept in {kept_in} by a caller", f"as long as {kept_in} keeps it"
        elif s.kind == "self" and h.cls is not None:
            lifetime = f"as long as the `{h.cls.name.value}` instance" + (
                " keeps it for its reader" if consumed else "")
        elif s.kind == "param":
            lifetime = "as long as the caller keeps the object it handed in"
        else:  # a module global or a class attribute
            lifetime = "the process"
        if _adds(s.node):
            growth = f"one entry per failure in `{h.function.name.value}()`, until drained"
        return Consequence(_frames_kept(h, heavy), holder, lifetime, growth)

    def _handed_off(self, h: _Handler, attr: str) -> bool:
        """Does the class clear `self.<attr>` in a release method, or after reading it
        in some other method (a hand-off: `err = self._e; self._e = None; raise err`)?"""
        if h.cls is None:
            return False
        for method in self.ctx.methods(h.cls).values():
            if method is h.function or method.name.value == "__init__":
                continue
            clearing = _Clearing(attr)
            visit(method.body, clearing)
            if clearing.cleared and (named_release(self.ctx, method) or clearing.read_before):
                return True
        return False

    def _heavy_frames(self, h: _Handler) -> bool:
        """Do the frames hold heavy objects: `self` of a class holding one, or a heavy
        parameter or local of the handler's function?"""
        if h.cls is not None and h.self_owner is not None and has_heavy_attribute(self.ctx, h.cls):
            return True
        return self._heavy_locals(h)

    def _heavy_locals(self, h: _Handler) -> bool:
        """A heavy parameter or local of the handler's function (what its frame pins
        beyond `self`, which a store on `self` keeps anyway)."""
        ctx, fn, cls = self.ctx, h.function, h.cls
        oracle = ctx.heavy
        params = fn.params
        for p in (*params.posonly_params, *params.params, *params.kwonly_params):
            if oracle.is_heavy_annotation(p.annotation):
                return True
        for name, assigned in oracle.local_assignments(fn).items():
            for value, ann in assigned:
                if oracle.is_heavy_annotation(ann) or (
                    value is not None and not name.startswith("self.")
                    and oracle.is_heavy_value(value, fn, cls)
                ):
                    return True
        return False


def _frames_kept(h: _Handler, heavy: bool) -> str:
    """The exception, and the frames its traceback keeps with their locals."""
    return (f"exception `{h.name}` and its traceback's frames from `{h.function.name.value}()` down, "
            f"with their locals" + (" (some heavy)" if heavy else ""))
