"""RL603 ineffective-release."""

from __future__ import annotations

import keyword
from typing import Iterator, Optional

import libcst as cst

from retainlint.project.names import name_words
from retainlint.analysis.cstutil import body_functions, body_statements, call_args, is_self
from retainlint.core.finding import Applicability, Severity
from retainlint.analysis.heavy import find_param
from retainlint.analysis.hooks import iter_nodes, names_in, short
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
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.walk import children

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

    docs = """
## What it does
Reports cleanup code that frees nothing:

1. **a deleted parameter** - `del objs` (or `del self`) in a function that is meant to
   free something (its name says so: `free`, `release`, `cleanup`, `delete`, `destroy`,
   `unload`, `close`, ...; or it calls `gc.collect()` / `torch.cuda.empty_cache()`).
   `del` only unbinds the function's own name. Not reported: a parameter rebound in the
   function first (`x = prepare(x); ...; del x` frees the new object), and the
   "unused argument" idiom: `del` as the first statement (after the docstring) of any
   function - a method, a module function, a fake bound later with `MethodType` - the
   names never used again. A deletion meant to free is not that idiom: one right before
   `gc.collect()` / `empty_cache()` (unless the parameter is optional: a caller may pass
   nothing), `del self` in a method of a class, or a `del` that is all a plain function
   does (`def free(objs): del objs`). Nor `del self` in `__del__` (no caller holds the
   instance any more), nor a `del` in an `except ... as e:` handler that hands `e` on
   (`future.set_exception(e)`): the traceback references the frame, the frame its locals,
   and unbinding them breaks that cycle - the `del` does free.
2. **a `WeakMethod` as a cleanup callback** - `weakref.finalize(obj, weakref.WeakMethod(obj.close))`
   or `atexit.register(weakref.WeakMethod(self.close))` (a `weakref.ref` the same way).
   Calling a `WeakMethod` only dereferences it: it returns the bound method (or `None`)
   and never calls it, so the cleanup silently never runs.
3. **a rebound shared container** - a release method that does `self.cache = {}` (or
   `[]`, `set()`, `dict()`, ...) when the class handed `self.cache` to another object
   (`self.runner = Runner(self.cache)`, `engine.cache = self.cache`,
   `registry.register(self.cache)`) that the release path does not drop (nor release:
   `self.runner.shutdown()`), in the method or the methods it calls on `self`: that object
   still holds the old, full container. `self.cache.clear()` was meant. (Release methods
   callable with `self` alone; not `free(self, idx)`, which lets go of one item.)
4. **a deleted loop variable** - `for obj in objs: del obj` over a parameter, in a
   function meant to free (a cleanup name, or a reclaim call in it): each `del` unbinds
   the loop variable; the caller's list and names keep every object. The caller has to
   `del` its own names before collecting.
5. **the cache emptied before the release** - in a cleanup function,
   `torch.cuda.empty_cache()` (or `soft_empty_cache()`, `ipc_collect()`, ...) right before
   the statement that unloads (`unload_all_models()`, `offload(...)`, `free_...()`), and
   never again after it: the allocator gives back only blocks nothing uses yet, and what
   the unload frees stays reserved.
6. **a reload that frees what it handed out** - a method that returns an object built
   around `self.x` (`return Pipeline(self.x)`, through locals too) and, when called again,
   lets go of the previous `self.x` (`self.x = None`, `del`) before `gc.collect()` /
   `empty_cache()`: the object it returned last time (kept by the caller, a framework's
   model list) still holds the old value, so nothing is freed. Not reported when the old
   object is moved off the device in place first (`old.to("cpu")`, `.cpu()`), which
   empties its storage whoever holds it.

Severity: an error for the `WeakMethod` case (the cleanup never runs); for the others a
warning, an error when what is kept is heavy (a parameter annotated as a model -
one tensor may be a scalar or a big mask: a warning - or a container of a heavy class) - unless the function itself keeps using the object
under a local name (`env = env_or_factory` ... `del env_or_factory`): then the `del` was
never its release. Cases 4 to 6 are warnings: what is kept depends
on the caller.

## Why it leaks
Memory is freed when the last reference goes. Unbinding a local name, calling a function
that never runs, or rebinding one of two references leaves the object - a model, a KV
cache, a dict of tensors - reachable, while the code reads as if it were released.

## Example
```python
def free_model(model):
    model.cpu()
    del model  # RL603: the caller still holds the model
    torch.cuda.empty_cache()

class Client:
    def __init__(self):
        self._finalizer = weakref.finalize(self, weakref.WeakMethod(self.close))  # RL603

def release_all(objects):
    for obj in objects:
        del obj  # RL603: the caller's list and names keep every object
    gc.collect()

def free_vram():
    torch.cuda.empty_cache()  # RL603: the models are still loaded here
    manager.unload_all_models()

class Loader:
    def load(self, path):
        self.model = None
        torch.cuda.empty_cache()  # RL603: the Pipeline returned last time holds the old model
        self.model = build(path)
        return Pipeline(self.model)
```

## Fix (unsafe, `WeakMethod` case)
For `weakref.finalize(self, weakref.WeakMethod(self.m))` where `m` is a method of the
class that only reads attributes of `self`: a staticmethod `_m_finalizer` receiving those
attributes is added after `m`, and the finalizer is registered as
`weakref.finalize(self, Class._m_finalizer, self.a, self.b)`. Unsafe: the attributes are
captured when the finalizer is registered, and the finalizer keeps them alive until it
runs. For `atexit.register(weakref.WeakMethod(x.m))` the callback becomes a lambda that
dereferences the `WeakMethod` and calls the method when it is still alive. Other cases are
reported without a fix: pass a function or staticmethod that receives the resources.
"""

    valid = [
        # the parameter is rebound first: the `del` frees the new object
        """
import gc

def step(inputs):
    inputs = prepare(inputs)
    loss = run(inputs)
    del inputs
    gc.collect()
    return loss
""",
        # the unused-argument idiom, in a method or any other function
        """
class Hooks:
    def close(self, force):
        del force
        self.stop()

def sample_clean_root(*, seed_tokens, logits):
    "Sample the clean root."
    del seed_tokens
    return logits.argmax(-1)
""",
        # a deletion inside a function that frees nothing by intent
        """
def forward(x, cache):
    y = x + 1
    del cache
    return y
""",
        # a finalizer with a plain function receiving the resources
        """
import weakref

def _close(proc):
    proc.kill()

class Worker:
    def __init__(self, proc):
        self.proc = proc
        self._finalizer = weakref.finalize(self, _close, proc)
""",
        # a loop over a local list; the cache emptied after the unload; the old model moved off the device
        """
import gc
import torch

def release_pending(queue):
    pending = list(queue)
    for item in pending:
        del item
    gc.collect()

def free_vram(manager):
    manager.unload_all_models()
    torch.cuda.empty_cache()

class Loader:
    def load(self, path):
        old = self.model
        self.model = None
        old.to("cpu")
        torch.cuda.empty_cache()
        self.model = build(path)
        return Pipeline(self.model)
""",
        # rebinding a container only this object holds
        """
class Cache:
    def __init__(self):
        self.entries = {}

    def close(self):
        self.entries = {}
""",
    ]
    invalid = [
        Example(
            """
import torch

def free_model(model):
    model.cpu()
    del model
    torch.cuda.empty_cache()
""",
            lines=[6],
        ),
        Example(
            """
import weakref

class Client:
    def __init__(self, sock, pool):
        self.sock = sock
        self._pool = pool
        self._finalizer = weakref.finalize(self, weakref.WeakMethod(self.close))

    def close(self):
        self.sock.close()
        self._pool.shutdown(wait=False)
""",
            lines=[8],
            fixed="""
import weakref

class Client:
    def __init__(self, sock, pool):
        self.sock = sock
        self._pool = pool
        self._finalizer = weakref.finalize(self, Client._close_finalizer, self.sock, self._pool)

    def close(self):
        self.sock.close()
        self._pool.shutdown(wait=False)

    @staticmethod
    def _close_finalizer(sock, pool):
        sock.close()
        pool.shutdown(wait=False)
""",
        ),
        Example(
            """
import atexit
from weakref import WeakMethod

class Core:
    def __init__(self):
        atexit.register(WeakMethod(self.unload))

    def unload(self):
        pass
""",
            lines=[7],
            fixed="""
import atexit
from weakref import WeakMethod

class Core:
    def __init__(self):
        atexit.register(lambda method=WeakMethod(self.unload): method() and method()())

    def unload(self):
        pass
""",
        ),
        Example(
            """
import gc

def release_all(objects):
    for obj in objects:
        del obj
    gc.collect()
""",
            lines=[6],
        ),
        Example(
            """
import torch

def free_vram(manager):
    torch.cuda.empty_cache()
    manager.unload_all_models()
""",
            lines=[5],
        ),
        Example(
            """
import torch

class Loader:
    def load(self, path):
        self.model = None
        torch.cuda.empty_cache()
        self.model = build(path)
        return Pipeline(self.model)
""",
            lines=[7],
        ),
        Example(
            """
class Worker:
    def __init__(self, runner_cls):
        self.kv_caches = {}
        self.runner = runner_cls(kv_caches=self.kv_caches)

    def shutdown(self):
        self.kv_caches = {}
""",
            lines=[8],
        ),
    ]

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
            fix = (self._finalize_fix(node, owner, weak) if registry == "weakref.finalize"
                   else self._atexit_fix(node, weak))
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

    def _atexit_fix(self, call: cst.Call, weak: cst.Call):
        if len(call.args) != 1 or self.ctx.qualname(weak.func) != "weakref.WeakMethod":
            return None
        code = f"lambda method={self.ctx.code(weak)}: method() and method()()"
        return self.fix("Call the method the `WeakMethod` returns",
                        {weak: cst.parse_expression(code)})

    def _finalize_fix(self, call: cst.Call, owner: cst.BaseExpression, weak: cst.Call):
        cls, fn = self.ctx.scope.method_class, self.ctx.scope.function
        if cls is None or fn is None or not is_self(owner) or len(call.args) != 2:
            return None
        if self.ctx.qualname(weak.func) != "weakref.WeakMethod" or len(weak.args) != 1:
            return None
        bound = weak.args[0].value
        if not (isinstance(bound, cst.Attribute) and is_self(bound.value)):
            return None
        methods = self.ctx.methods(cls)
        method = methods.get(bound.attr.value)
        if method is None or method.decorators or method.asynchronous is not None:
            return None
        if any(method is f for f in self.ctx.scope.functions):
            return None
        params = method.params
        if len(params.params) != 1 or params.posonly_params or params.kwonly_params or \
                isinstance(params.star_arg, (cst.Param, cst.ParamStar)) or params.star_kwarg is not None:
            return None
        attrs = self._plain_reads(method, set(methods))
        if attrs is None:
            return None
        used = names_in(method.body)
        renames: dict[str, str] = {}
        for attr in attrs:
            plain = attr.lstrip("_") or attr
            if plain in renames.values() or keyword.iskeyword(plain) or plain in used or not plain.isidentifier():
                plain = attr
            if plain in renames.values() or plain in used:
                return None
            renames[attr] = plain
        new_name = f"_{bound.attr.value.lstrip('_')}_finalizer"
        if new_name in methods or new_name in self.ctx.code(cls):
            return None
        body = method.body.visit(_SelfToParams(renames))
        static = cst.FunctionDef(
            name=cst.Name(new_name),
            params=cst.Parameters(params=[cst.Param(cst.Name(p)) for p in renames.values()]),
            body=body,
            decorators=[cst.Decorator(cst.Name("staticmethod"))],
            leading_lines=[cst.EmptyLine(indent=False)],
        )
        args = [call.args[0], cst.Arg(cst.parse_expression(f"{cls.name.value}.{new_name}"))]
        args += [cst.Arg(cst.parse_expression(f"self.{a}")) for a in renames]
        args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args]
        return self.fix(
            f"Register the staticmethod `{new_name}` receiving what `{bound.attr.value}()` uses",
            {call: call.with_changes(args=args),
             method: cst.FlattenSentinel([method, static])},
        )

    def _plain_reads(self, method: cst.FunctionDef, method_names: set[str]) -> Optional[list[str]]:
        """Attributes of `self` the method only reads, in order; None when it uses `self`
        otherwise (stores, deletes, calls its own methods, passes `self` on)."""
        attrs: list[str] = []
        reads: set[int] = set()
        for node in iter_nodes(method.body):
            if isinstance(node, cst.Attribute) and is_self(node.value):
                reads.add(id(node.value))
                if node.attr.value in method_names:
                    return None
                if node.attr.value not in attrs:
                    attrs.append(node.attr.value)
            elif isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)):
                target = node.target
                if any(isinstance(t, cst.Attribute) and is_self(t.value) for t in iter_nodes(target)):
                    return None
        for node in iter_nodes(method.body):
            if isinstance(node, cst.Name) and node.value == "self" and id(node) not in reads:
                return None
        # source order (the walk is depth first, not in reading order)
        text = self.ctx.code(method.body)
        attrs.sort(key=lambda a: text.find(f"self.{a}"))
        return attrs

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


class _SelfToParams(cst.CSTTransformer):
    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def leave_Attribute(self, original, updated):
        if is_self(original.value) and original.attr.value in self.renames:
            return cst.Name(self.renames[original.attr.value])
        return updated


def _ordered(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Everything below `node` in source order, nested functions, classes and lambdas
    left out (they run at another time)."""
    for child in children(node):
        if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        yield child
        yield from _ordered(child)


def _ordered_calls(node: cst.CSTNode) -> list[cst.Call]:
    return [n for n in (node, *_ordered(node)) if isinstance(n, cst.Call)]


def _statement_blocks(fn: cst.FunctionDef) -> list[list[cst.CSTNode]]:
    """Every sequence of statements in `fn` (its body, each indented block), nested
    functions left out."""
    blocks = [list(fn.body.body)] if isinstance(fn.body, cst.IndentedBlock) else []
    blocks += [list(n.body) for n in _ordered(fn.body) if isinstance(n, cst.IndentedBlock)]
    return blocks


def _moves_off_device(call: cst.Call) -> bool:
    """`x.cpu()`, `x.to("cpu")`, `x.to(device="meta")`: storage moved in place."""
    if not isinstance(call.func, cst.Attribute):
        return False
    if call.func.attr.value == "cpu" and not call.args:
        return True
    return call.func.attr.value == "to" and any(
        isinstance(a.value, cst.SimpleString) and a.value.value.strip("\"'") in ("cpu", "meta") for a in call.args)


def _is_parameter(fn: cst.FunctionDef, name: str) -> bool:
    """A parameter of `fn`, `*args` included."""
    star = fn.params.star_arg
    return find_param(fn, name) is not None or (isinstance(star, cst.Param) and star.name.value == name)


def _breaks_traceback_cycle(fn: cst.FunctionDef, node: cst.Del) -> bool:
    """Is the `del` in an `except ... as e:` handler of `fn` that hands `e` on (stores it,
    sets it on a future, queues it)? The exception's traceback references this frame,
    whose locals reference the holder of the exception: unbinding them cuts that cycle,
    so the `del` frees what the cyclic collector would otherwise have to."""
    for handler in _ordered(fn.body):
        if not isinstance(handler, cst.ExceptHandler) or handler.name is None:
            continue
        if not isinstance(handler.name.name, cst.Name):
            continue
        if not any(n is node for n in _ordered(handler.body)):
            continue
        error = handler.name.name.value
        if any(isinstance(n, cst.Name) and n.value == error for n in _ordered(handler.body)):
            return True
    return False


def _kept_under_alias(fn: cst.FunctionDef, node: cst.Del, name: str) -> bool:
    """Does `fn` bind a local to the parameter `name` itself (`env = factory`, an arm of a
    conditional) before the `del`, and read that local after it?"""
    aliases: set[str] = set()
    passed = False
    for n in _ordered(fn.body):
        if n is node:
            passed = True
        elif not passed and isinstance(n, cst.Assign) and _evaluates_to(n.value, name):
            aliases |= {t.target.value for t in n.targets if isinstance(t.target, cst.Name)}
        elif passed and isinstance(n, cst.Name) and n.value in aliases:
            return True
    return False


def _evaluates_to(expr: cst.CSTNode, name: str) -> bool:
    if isinstance(expr, cst.Name):
        return expr.value == name
    if isinstance(expr, cst.IfExp):
        return _evaluates_to(expr.body, name) or _evaluates_to(expr.orelse, name)
    if isinstance(expr, cst.BooleanOperation):
        return _evaluates_to(expr.left, name) or _evaluates_to(expr.right, name)
    return False


def _bare_names(target: cst.CSTNode) -> list[cst.Name]:
    """`a` and `b` in `del a, (b, c.d)` - plain names only, not attribute targets."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _bare_names(e.value)]
    return []


def _after(small: cst.CSTNode, line: cst.SimpleStatementLine, rest: list) -> Optional[cst.CSTNode]:
    """What runs right after `small`, a statement of `line`: the next one on the line
    (`del x; gc.collect()`), else the first of the statements `rest` that follow."""
    position = next(i for i, s in enumerate(line.body) if s is small)
    if position + 1 < len(line.body):
        return line.body[position + 1]
    return rest[0] if rest else None


def _is_docstring(stmt) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _is_attr(expr: cst.CSTNode, attr: str) -> bool:
    return isinstance(expr, cst.Attribute) and is_self(expr.value) and expr.attr.value == attr


def _self_root(expr: cst.CSTNode) -> Optional[str]:
    """`b` for `self.b`, `self.b.c`, `self.b[0]`."""
    node = expr
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Attribute) and is_self(node.value):
            return node.attr.value
        node = node.value
    return None
