"""RL603 ineffective-release.

The rule's class (detection and reports); its documentation and examples are in
`examples.py`, the `WeakMethod` fix in `fix.py`, what a `del` means in `deletions.py`,
source-order walks and `self` attribute shapes in `syntax.py`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.project.names import name_words
from retainlint.analysis.cstutil import body_functions, body_statements, call_args, is_self
from retainlint.core.finding import Applicability, Severity
from retainlint.analysis.heavy import find_param
from retainlint.analysis.hook_exprs import iter_nodes, names_in
from retainlint.analysis.hooks import short
from retainlint.rules.prefilters.rl603 import (
    IneffectiveReleasePrefilter,
    CLEANUP_WORDS,
    DEFAULTDICT,
    EMPTY_FACTORIES,
    KEEPING_VERBS,
    RECLAIM_CALLS,
    RECLAIM_NAMES,
)
from retainlint.analysis.release import release_methods
from retainlint.analysis.rule import RelatedNode, Rule
from retainlint.rules.rl603_ineffective_release.deletions import (
    _after,
    _bare_names,
    _breaks_traceback_cycle,
    _is_docstring,
    _is_parameter,
    _kept_under_alias,
)
from retainlint.rules.rl603_ineffective_release.examples import DOCS, INVALID, VALID
from retainlint.rules.rl603_ineffective_release.fix import _atexit_fix, _finalize_fix
from retainlint.rules.rl603_ineffective_release.syntax import (
    _is_attr,
    _moves_off_device,
    _ordered,
    _ordered_calls,
    _self_root,
    _statement_blocks,
)

WEAK_CALLABLES = frozenset({"weakref.WeakMethod", "weakref.ref"})
# What gives cached allocator blocks back: useless before the objects are let go.
ALLOCATOR_RECLAIMS = frozenset({"empty_cache", "soft_empty_cache", "ipc_collect", "malloc_trim",
                                "clear_device_cache"})
# Calls that let go of loaded objects (`unload_all_models()`, `offload()`, `free_models()`).
UNLOADING_WORDS = frozenset({"unload", "offload", "release", "free", "delete", "destroy", "dispose", "teardown"})
# Calls that read a container without keeping it.
_NON_KEEPING = frozenset(
    {"len", "list", "dict", "tuple", "set", "frozenset", "sorted", "sum", "any", "all", "min", "max",
     "str", "repr", "print", "iter", "enumerate", "zip", "isinstance", "bool", "id", "hash",
     "copy.copy", "copy.deepcopy", "json.dumps", "reversed", "map", "filter", "getattr", "hasattr"}
)
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log",
                          "format", "join", "write"})


class IneffectiveRelease(Rule):
    prefilter = IneffectiveReleasePrefilter
    name = "ineffective-release"
    summary = ("Cleanup code that frees nothing: a deleted parameter or loop variable, a WeakMethod callback, "
               "a rebound shared container, a cache emptied too early or while a returned object holds the value")
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE

    docs = DOCS
    valid = VALID
    invalid = INVALID

    # -- (1) deleted parameters ------------------------------------------------------------
    def visit_Del(self, node: cst.Del) -> None:
        fn = self.ctx.scope.function
        if fn is None:
            return
        targets = _bare_names(node.target)
        for target in targets:
            name = target.value
            param = find_param(fn, name)
            if param is None:
                self._deleted_loop_variable(fn, node, name)
                continue
            if name == "cls":
                continue
            if name == "self" and fn.name.value == "__del__":
                continue  # finalising: no caller holds the instance any more
            if self._unused_argument(fn, node, name):
                continue
            if _breaks_traceback_cycle(fn, node):
                continue
            if name != "self" and not self._deletes_to_free(fn, node, name):
                continue
            # a model handed in is heavy; one tensor may be a scalar or a [b, L, L] mask:
            # its weight is unknown (torchtune's per-step `del advantages`)
            heavy = (self.ctx.heavy.is_heavy_annotation(param.annotation)
                     and not self.ctx.heavy.is_tensor_annotation(param.annotation)) or (
                name == "self" and self.ctx.heavy.is_heavy_class(self.ctx.scope.method_class))
            # the function goes on using the object under another name: the `del` was
            # never the release of it, whatever the caller holds
            heavy = heavy and not _kept_under_alias(fn, node, name)
            what = "the instance" if name == "self" else "the object"
            self.report(
                node,
                f"`del {name}` in `{fn.name.value}()` only unbinds its own "
                f"{'`self`' if name == 'self' else f'parameter `{name}`'}: the caller's "
                f"references keep {what} alive, so nothing is freed; drop the reference where "
                "it is held (the caller's variable or attribute)",
                severity=Severity.ERROR if heavy else Severity.WARNING,
            )

    def _deleted_loop_variable(self, fn: cst.FunctionDef, node: cst.Del, name: str) -> None:
        """`for obj in objs: del obj` where `objs` is a parameter, in a function meant to
        free: each `del` unbinds the loop variable; the caller's list and names keep
        every object."""
        loop = next((n for n in iter_nodes(fn.body) if isinstance(n, cst.For)
                     and isinstance(n.target, cst.Name) and n.target.value == name
                     and isinstance(n.iter, cst.Name) and _is_parameter(fn, n.iter.value)
                     and any(d is node for d in iter_nodes(n.body))), None)
        if loop is None or self.ctx.heavy.local_assignments(fn).get(name):
            return
        if not (name_words(fn.name.value) & CLEANUP_WORDS or self._reclaims_in(fn.body)):
            return
        objects = loop.iter.value
        self.report(
            node,
            f"`del {name}` in `{fn.name.value}()` only unbinds the loop variable over its parameter "
            f"`{objects}`: the caller's `{objects}` and its own names keep every object alive, so "
            f"nothing is freed; the caller has to drop its references (`del a, b`) before collecting",
            severity=Severity.WARNING,
        )

    def _deletes_to_free(self, fn: cst.FunctionDef, node: cst.Del, name: str) -> bool:
        if fn.name.value in ("__exit__", "__aexit__"):
            return False
        if self.ctx.heavy.local_assignments(fn).get(name):
            return False  # rebound in the function: the `del` frees the new object
        if any(isinstance(n, cst.For) and name in names_in(n.target) for n in iter_nodes(fn.body)):
            return False
        if name_words(fn.name.value) & CLEANUP_WORDS or fn.name.value in self.ctx.settings.release_methods:
            return True
        return self._reclaims_in(fn.body)

    def _unused_argument(self, fn: cst.FunctionDef, node: cst.Del, name: str) -> bool:
        """The "unused argument" idiom: `del` of parameters as the first statement (after
        the docstring), the name never used again - in any function, a method, a module
        function or a fake bound later with `MethodType`, and for `self` too. Not the
        idiom, but a deletion meant to free: one right before `gc.collect()` /
        `empty_cache()` (the next statement), `del self` in a method of a class (no
        linter asks a method to use `self`), and a `del` that is all a plain function
        does (`def free(objs): del objs`; a method whose body only deletes an argument
        is a stub)."""
        body = [s for s in body_statements(fn) if not _is_docstring(s)]
        first = body[0] if body else None
        if not (isinstance(first, cst.SimpleStatementLine) and any(s is node for s in first.body)):
            return False
        if sum(1 for n in iter_nodes(fn.body) if isinstance(n, cst.Name) and n.value == name) > 1:
            return False  # used again (or deleted twice)
        in_class = self.ctx.scope.method_class is not None
        if in_class and name == "self":
            return False
        if not in_class and len(body) == 1 and len(first.body) == 1:
            return False
        following = _after(node, first, body[1:])
        if following is None or not self._reclaims_in(following):
            return True
        # an optional parameter (a caller may pass nothing) is no object handed in to be
        # freed, even right before a collection
        param = find_param(fn, name)
        return param is not None and param.default is not None

    def _reclaims_in(self, node: cst.CSTNode) -> bool:
        return any(isinstance(n, cst.Call) and self._reclaims(n) for n in iter_nodes(node))

    def _reclaims(self, call: cst.Call) -> bool:
        q = self.ctx.qualname(call.func)
        if q in RECLAIM_CALLS:
            return True
        last = (q or "").rsplit(".", 1)[-1]
        return last in RECLAIM_NAMES

    # -- (4) reclaiming what is still held ----------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._cache_emptied_before_release(node)
        if self.ctx.scope.method_class is not None:
            self._released_but_handed_out(node)

    def _cache_emptied_before_release(self, fn: cst.FunctionDef) -> None:
        """A cleanup function that empties the allocator's cache right before the call that
        unloads (`torch.cuda.empty_cache()` then `unload_all_models()`), and never after:
        the cache gives back only blocks nothing uses yet, and what the unload frees
        afterwards stays reserved."""
        if not name_words(fn.name.value) & CLEANUP_WORDS:
            return
        for block in _statement_blocks(fn):
            for i, stmt in enumerate(block[:-1]):
                emptied = next((c for c in _ordered_calls(stmt) if self._empties_cache(c)), None)
                if emptied is None:
                    continue
                release = next((c for c in _ordered_calls(block[i + 1]) if self._unloads(c)), None)
                if release is None or any(self._empties_cache(c) for later in block[i + 1:]
                                          for c in _ordered_calls(later)):
                    continue
                self.report(
                    emptied,
                    f"`{self.ctx.code(emptied)}` runs before `{short(self.ctx.code(release))}`: it gives back "
                    "only cached blocks nothing uses yet, and what the unload frees afterwards stays "
                    "reserved by the allocator; empty the cache after the release",
                    severity=Severity.WARNING,
                )

    def _empties_cache(self, call: cst.Call) -> bool:
        last = (self.ctx.qualname(call.func) or "").rsplit(".", 1)[-1]
        return last in ALLOCATOR_RECLAIMS

    def _unloads(self, call: cst.Call) -> bool:
        last = (self.ctx.qualname(call.func) or "").rsplit(".", 1)[-1]
        return bool(name_words(last) & UNLOADING_WORDS) and not self._reclaims(call)

    def _released_but_handed_out(self, fn: cst.FunctionDef) -> None:
        """A method that reloads `self.x` and returns an object built around it
        (`return (Patcher(Wrapper(self.x)),)`): releasing the previous `self.x`
        (`self.x = None`, `del`) before a reclaim call frees nothing, since the object
        this method returned on an earlier call still holds it - unless the old object is
        moved off the device in place first (`old.to("cpu")`)."""
        handed = self._handed_out(fn)
        if not handed:
            return
        released: dict[str, cst.CSTNode] = {}
        aliases: dict[str, str] = {}
        moved: set[str] = set()
        for node in _ordered(fn.body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                target, value = node.targets[0].target, node.value
                if isinstance(target, cst.Name) and self._self_attr(value) in handed:
                    aliases[target.value] = self._self_attr(value) or ""
                elif self._self_attr(target) in handed and isinstance(value, cst.Name) and value.value == "None":
                    released[self._self_attr(target) or ""] = node
            elif isinstance(node, cst.Del):
                for t in iter_nodes(node.target):
                    if self._self_attr(t) in handed:
                        released[self._self_attr(t) or ""] = node
            elif isinstance(node, cst.Call) and _moves_off_device(node):
                owner = node.func.value if isinstance(node.func, cst.Attribute) else None
                attr = self._self_attr(owner) if owner is not None else None
                if attr is None and isinstance(owner, cst.Name):
                    attr = aliases.get(owner.value)
                if attr:
                    moved.add(attr)
            elif isinstance(node, cst.Call) and self._reclaims(node):
                pending = [a for a in released if a not in moved]
                if not pending:
                    continue
                attr = pending[0]
                self.report(
                    node,
                    f"`{self.ctx.code(node)}` after releasing `self.{attr}` frees nothing of it: "
                    f"`{fn.name.value}()` returns an object built around `self.{attr}`, and the one it "
                    "returned on an earlier call still holds the old value; move it off the device in "
                    f"place first (`.to(\"cpu\")`) or have the holder of the returned object drop it",
                    severity=Severity.WARNING,
                    related=[RelatedNode(f"`self.{attr}` released here", released[attr]),
                             RelatedNode("built into what is returned here", handed[attr])],
                )
                return

    def _handed_out(self, fn: cst.FunctionDef) -> dict[str, cst.CSTNode]:
        """`self` attributes that go into an object the method returns: {attr: the call}."""
        built: dict[str, tuple[str, cst.CSTNode]] = {}  # local -> (attr, call)
        found: dict[str, cst.CSTNode] = {}

        def held(expr: cst.CSTNode) -> Optional[tuple[str, cst.CSTNode]]:
            for call in iter_nodes(expr):
                if not isinstance(call, cst.Call) or not self._wraps(call):
                    continue
                for arg in call.args:
                    attr = self._self_attr(arg.value)
                    if attr is not None:
                        return attr, call
                    if isinstance(arg.value, cst.Name) and arg.value.value in built:
                        return built[arg.value.value]
            return None

        for node in _ordered(fn.body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0].target, cst.Name):
                kept = held(node.value)
                if kept is not None:
                    built[node.targets[0].target.value] = kept
            elif isinstance(node, cst.Return) and node.value is not None:
                kept = held(node.value)
                if kept is not None:
                    found.setdefault(*kept)
        return found

    def _wraps(self, call: cst.Call) -> bool:
        """Does the call build an object that keeps its arguments (a class, a factory,
        `ModelPatcher(model)`), rather than read them (`len(x)`, `logger.info(x)`)?"""
        q = self.ctx.qualname(call.func) or ""
        last = q.rsplit(".", 1)[-1]
        if not last or q in _NON_KEEPING or q.removeprefix("builtins.") in _NON_KEEPING:
            return False
        return last[:1].isupper() or "factory" in last or bool(name_words(last) & KEEPING_VERBS)

    @staticmethod
    def _self_attr(expr: Optional[cst.CSTNode]) -> Optional[str]:
        if isinstance(expr, cst.Attribute) and is_self(expr.value):
            return expr.attr.value
        return None

    # -- (2) WeakMethod callbacks ----------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        q = self.ctx.qualname(node.func)
        if q == "weakref.finalize":
            positional, _ = call_args(node)
            if len(positional) < 2 or any(a.star for a in node.args[:2]):
                return
            owner, callback = positional[0].value, positional[1].value
            registry = "weakref.finalize"
        elif q == "atexit.register":
            if not node.args or node.args[0].star or node.args[0].keyword is not None:
                return
            owner, callback = None, node.args[0].value
            registry = "atexit.register"
        else:
            return
        weak = self._weak_callable(callback)
        if weak is None:
            return
        kind = self.ctx.qualname(weak.func).rsplit(".", 1)[-1]
        target = short(self.ctx.code(weak.args[0].value)) if weak.args else "?"
        message = (f"`{short(self.ctx.code(callback))}` is the callback of `{self.ctx.code(node.func)}`: "
                   f"calling a `{kind}` only returns `{target}` (or `None`) and never calls it, so "
                   "the cleanup never runs")
        if registry == "weakref.finalize":
            message += (f"; and when the finalizer runs `{short(self.ctx.code(owner))}` is already gone: "
                        "pass a function or staticmethod that receives the resources")
        fix = None
        if weak is callback:
            fix = (_finalize_fix(self, node, owner, weak) if registry == "weakref.finalize"
                   else _atexit_fix(self, node, weak))
        self.report(node, message, severity=Severity.ERROR, fix=fix)

    def _weak_callable(self, expr: cst.BaseExpression) -> Optional[cst.Call]:
        """The `WeakMethod(...)` / `weakref.ref(...)` call `expr` is (or a local or `self`
        attribute assigned from one)."""
        if isinstance(expr, cst.Call):
            return expr if self.ctx.qualname(expr.func) in WEAK_CALLABLES else None
        fn = self.ctx.scope.function
        if fn is None:
            return None
        if isinstance(expr, cst.Name):
            for value, _ in self.ctx.heavy.local_assignments(fn).get(expr.value, ()):
                if isinstance(value, cst.Call) and self.ctx.qualname(value.func) in WEAK_CALLABLES:
                    return value
        elif isinstance(expr, cst.Attribute) and is_self(expr.value):
            cls = self.ctx.scope.method_class
            if cls is None:
                return None
            for method in body_functions(cls):
                for value, _ in self.ctx.heavy.local_assignments(method).get(f"self.{expr.attr.value}", ()):
                    if isinstance(value, cst.Call) and self.ctx.qualname(value.func) in WEAK_CALLABLES:
                        return value
        return None

    # -- (3) rebinding a shared container ---------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        methods = self.ctx.methods(node)
        for release in release_methods(self.ctx, node, finalizer=True):
            for line in iter_nodes(release.body):
                if not isinstance(line, cst.Assign) or len(line.targets) != 1:
                    continue
                target = line.targets[0].target
                if not (isinstance(target, cst.Attribute) and is_self(target.value)):
                    continue
                kind = self._empty_container(line.value)
                if kind is None:
                    continue
                drops = self.ctx.release.drops(node, [release])
                if drops is None:
                    break  # drops what we cannot name: who still holds the old container is unknown
                attr = target.attr.value
                holder = self._shared_with(methods, release, attr, drops.all)
                if holder is None:
                    continue
                who, where = holder
                heavy = self.ctx.heavy.is_heavy_class(node) or self.ctx.index.is_heavy_class(
                    f"{self.ctx.module_name}.{node.name.value}")
                self.report(
                    line,
                    f"`self.{attr} = {short(self.ctx.code(line.value))}` in `{release.name.value}()` only "
                    f"rebinds the attribute: {who} still references the old {kind} and everything "
                    f"in it; `self.{attr}.clear()` empties the object both share",
                    severity=Severity.ERROR if heavy else Severity.WARNING,
                    related=[RelatedNode(f"`self.{attr}` is shared here", where)],
                    statement=self._line_of(release, line),
                )

    @staticmethod
    def _line_of(fn: cst.FunctionDef, small: cst.CSTNode) -> Optional[cst.CSTNode]:
        for node in iter_nodes(fn.body):
            if isinstance(node, cst.SimpleStatementLine) and any(s is small for s in node.body):
                return node
        return None

    def _empty_container(self, value: cst.BaseExpression) -> Optional[str]:
        if isinstance(value, cst.Dict) and not value.elements:
            return "dict"
        if isinstance(value, cst.List) and not value.elements:
            return "list"
        if isinstance(value, cst.Call):
            q = self.ctx.qualname(value.func) or ""
            if q in EMPTY_FACTORIES and not value.args:
                return q.rsplit(".", 1)[-1]
            if q in DEFAULTDICT and len(value.args) <= 1:
                return "defaultdict"
        return None

    def _shared_with(self, methods: dict, release: cst.FunctionDef, attr: str,
                     dropped: set[str]) -> Optional[tuple[str, cst.CSTNode]]:
        """(who, where) for an object other than `self` that was handed `self.<attr>`
        and that the release path does not drop (`dropped`)."""
        for method in methods.values():
            if method is release:
                continue
            for node in iter_nodes(method.body):
                if isinstance(node, cst.Assign):
                    if not _is_attr(node.value, attr) and not isinstance(node.value, cst.Call):
                        continue
                    for t in node.targets:
                        target = t.target
                        if _is_attr(node.value, attr) and isinstance(target, cst.Attribute) \
                                and not is_self(target.value):
                            owner = _self_root(target.value)
                            if owner is not None and owner in dropped:
                                continue
                            return f"`{short(self.ctx.code(target.value))}`", node
                        if isinstance(node.value, cst.Call) and self._keeps(node.value, attr) and \
                                isinstance(target, cst.Attribute) and is_self(target.value):
                            if target.attr.value in dropped or target.attr.value == attr:
                                continue
                            return f"`self.{target.attr.value}` (built from it)", node
                elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                    verb = node.func.attr.value
                    if not (name_words(verb) & KEEPING_VERBS):
                        continue
                    if not any(_is_attr(a.value, attr) for a in node.args):
                        continue
                    owner_expr = node.func.value
                    if _is_attr(owner_expr, attr) or is_self(owner_expr):
                        continue
                    owner = _self_root(owner_expr)
                    if owner is not None and (owner in dropped or owner == attr):
                        continue
                    return f"`{short(self.ctx.code(owner_expr))}`", node
        return None

    def _keeps(self, call: cst.Call, attr: str) -> bool:
        """Does a call that builds an object get `self.<attr>` itself (not a copy)?"""
        if not any(_is_attr(a.value, attr) for a in call.args):
            return False
        q = self.ctx.qualname(call.func) or ""
        if q in _NON_KEEPING or q.removeprefix("builtins.") in _NON_KEEPING:
            return False
        if isinstance(call.func, cst.Attribute):
            if call.func.attr.value in _LOG_METHODS or _is_attr(call.func.value, attr):
                return False
        last = q.rsplit(".", 1)[-1] if q else ""
        return bool(last) and (last[:1].isupper() or "cls" in last or "factory" in last
                               or name_words(last) & KEEPING_VERBS != set())
