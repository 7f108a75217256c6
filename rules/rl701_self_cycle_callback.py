"""RL701 self-cycle-callback."""

from __future__ import annotations

import ast
import os
import re
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import annotation_expression, body_statements, decorator_names, is_self
from retainlint.core.finding import Applicability, Severity
from retainlint.analysis.heavy import find_param
from retainlint.analysis.weight import weightless_layer
from retainlint.project.names import TENSOR_FACTORIES, TENSOR_TYPES as _TENSOR_TYPES, name_words
from retainlint.project.hook_names import AUTOGRAD_HOOKS, HANDLE_HOOKS, STATE_DICT_HOOKS
from retainlint.analysis.hooks import (
    ClassHandles,
    class_methods,
    external_bases,
    hook_argument,
    hook_removed_on_exit,
    is_accumulate_grad,
    is_property,
    iter_nodes,
    local_bases,
    mentions_self,
    parse_file,
    short,
    target_names,
    undone_on_every_exit,
)
from retainlint.project.index import qualified_in
from retainlint.rules.prefilters.rl701 import (
    SelfCycleCallbackPrefilter,
    CALLBACK_WORDS,
    CONTAINER_ADD,
    MODULE_METHODS,
    REGISTER_VERBS,
    STATIC,
    inherited_bound_method,
)
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.severity import Facts, collector_frees, level
from retainlint.analysis.walk import visit

_WEAK = frozenset({"weakref.WeakMethod", "weakref.ref", "weakref.proxy"})
_PARTIAL = frozenset({"functools.partial", "functools.partialmethod"})
_METHOD_TYPE = frozenset({"types.MethodType"})
# Wrappers whose result keeps the function it wraps (and, for caches, every result).
_CACHES = frozenset({"functools.lru_cache", "functools.cache"})
# Constructors that drop the callable they were given once it has run (`Thread.run`
# deletes its `_target`): a thread started with a bound method is no lasting cycle.
_RUN_ONCE = frozenset({"threading.Thread", "threading.Timer"})

_GRAPH_MODULES = frozenset({"torch.fx.GraphModule", "torch.fx.graph_module.GraphModule"})
_MODEL_TYPES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "transformers.PreTrainedModel",
                          "transformers.modeling_utils.PreTrainedModel"})


_STATE_REGISTRATION = frozenset({"register_buffer", "register_parameter"})
# Qt bindings: a signal's `connect` keeps any slot but a plain bound method strongly, in C++.
_QT_MODULES = frozenset({"qtpy", "PyQt5", "PyQt6", "PySide2", "PySide6", "pyqtgraph"})


def _external_holds(index, qualified: Optional[str], depth: int = 0) -> bool:
    """Does a project class of another file (or its project bases) assign a heavy value
    to an attribute of `self` (a heavy class instance, a tensor factory, a parameter) or
    register a buffer/parameter? Read with `ast`, only for classes with a finding."""
    resolved = index.resolve(qualified)
    summary = index.classes.get(resolved) if resolved else None
    if summary is None or depth > 5:
        return False
    known: dict[str, bool] = index.memo("rl701 external holds", dict)
    key = resolved
    if key in known:
        return known[key]
    known[key] = False  # recursion guard
    file = index.files.get(os.path.abspath(summary.path))

    found = False
    tree = parse_file(index, summary.path)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.lineno == summary.line:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call) and any(
                        isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                        for t in sub.targets):
                    q = qualified_in(file, sub.value.func)
                    if q and _holds_value(index, q, depth):
                        found = True
                        break
                elif isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Name) and \
                        _model_name(sub.value.id) and any(
                        isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                        for t in sub.targets):
                    found = True
                    break
                elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                        sub.func.attr in _STATE_REGISTRATION:
                    found = True
                    break
            break
    if not found:
        found = any(_external_holds(index, b, depth + 1) for b in summary.bases)
    known[key] = found
    return found


def _model_name(name: str) -> bool:
    """A parameter named like a model (`model`, `module`, `base_model`, `net`): in PyTorch
    code, what is handed in under that name is a model."""
    return name in ("model", "module", "net", "network") or name.endswith("_model")


def _holds_value(index, q: str, depth: int) -> bool:
    """Does constructing `q` give an object that holds tensors (for classes read with `ast`)?"""
    if q in TENSOR_FACTORIES or q in _TENSOR_TYPES:
        return True
    if q.startswith("torch.nn.") and q.count(".") == 2:
        return not weightless_layer(q)  # not an activation, dropout, pooling...
    if index.resolve(q) in index.classes:
        return _external_holds(index, q, depth + 1)
    return False


# Hooks kept in a tensor's own hook dict, which the cycle collector traverses (torch 2.13:
# a module whose parameter's `register_hook` closes over it is freed by `gc.collect()`).
_TENSOR_TRAVERSED_HOOKS = frozenset({"register_hook"})


def _on_graph(expr: cst.CSTNode) -> bool:
    """`x.grad_fn...`, a gradient accumulator: an autograd graph node, not a tensor."""
    return is_accumulate_grad(expr) or any(
        isinstance(n, cst.Attribute) and n.attr.value in ("grad_fn", "next_functions") for n in iter_nodes(expr))


def _root_name(expr: cst.CSTNode) -> Optional[str]:
    node = expr
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None


# Calls that reach objects the receiver already owns (not new, per-step values).
_OWNED_ITERATORS = frozenset({"parameters", "named_parameters", "modules", "named_modules", "children",
                              "named_children", "buffers", "named_buffers", "values", "items", "keys",
                              "get_submodule", "get_parameter"})
_WRAPPERS = frozenset({"enumerate", "zip", "list", "tuple", "reversed", "iter", "sorted"})


def _owned(expr: cst.CSTNode, owned_locals: set[str]) -> bool:
    """Is `expr` an object reached from `self` (`self.sub`, `self.weight`, a loop variable
    over `self.parameters()`, the gradient accumulator of such a parameter) rather than a
    value computed now (`self.proj(x)`, a forward output)?"""
    if is_accumulate_grad(expr):
        root = _root_name(expr)
        return root == "self" or root in owned_locals
    node = expr
    while True:
        if isinstance(node, cst.Name):
            return node.value == "self" or node.value in owned_locals
        if isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        elif isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _OWNED_ITERATORS:
                node = func.value
            elif isinstance(func, cst.Name) and func.value in _WRAPPERS and node.args:
                node = node.args[0].value
            else:
                return False
        else:
            return False


def _keeps_call_values(ctx, cls: cst.ClassDef) -> bool:
    """Does a method other than `__init__` store one of its own arguments on `self`
    (`self.saved = output` in a hook method): the instance keeps per-call values such as
    activations?"""
    for name, method in ctx.methods(cls).items():
        if name == "__init__":
            continue
        params = {p.name.value for p in (*method.params.posonly_params, *method.params.params,
                                         *method.params.kwonly_params)} - {"self"}
        for node in iter_nodes(method.body):
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and \
                    node.value.value in params and any(
                        _root_name(t.target) == "self" and not isinstance(t.target, cst.Name)
                        for t in node.targets):
                return True
    return False


def _is_super(expr: cst.CSTNode) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "super"


def _own_method_receiver(func: cst.CSTNode) -> Optional[str]:
    """The instance a base class's method runs on: `self` for `super().m(...)`, `obj`
    for `super(C, obj).m(...)`."""
    if not isinstance(func, cst.Attribute):
        return None
    owner = func.value
    if _is_super(owner):
        args = owner.args
        if not args:
            return "self"
        if len(args) == 2 and isinstance(args[1].value, cst.Name):
            return args[1].value.value
    return None


def _base_method(ctx, cls: cst.ClassDef, name: str) -> Optional[cst.FunctionDef]:
    for base in local_bases(ctx, cls):
        method = ctx.methods(base).get(name)
        if method is not None:
            return method
    return None


def _stored_parameters(method: cst.FunctionDef) -> dict[str, str]:
    """Parameters the method stores on its instance as they are: name -> attribute."""
    params = {p.name.value for p in (*method.params.posonly_params, *method.params.params,
                                     *method.params.kwonly_params)} - {"self"}
    out: dict[str, str] = {}
    for node in iter_nodes(method.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value in params:
            for t in node.targets:
                if isinstance(t.target, cst.Attribute) and is_self(t.target.value):
                    out.setdefault(node.value.value, t.target.attr.value)
    return out


def _drops_attribute(method: cst.FunctionDef, attr: str, param: str) -> bool:
    """Does `method` rebind `self.<attr>` to something other than the parameter it was
    stored from, or delete it?"""
    for node in iter_nodes(method.body):
        if isinstance(node, cst.Assign) and not (isinstance(node.value, cst.Name) and node.value.value == param) \
                and any(isinstance(t.target, cst.Attribute) and is_self(t.target.value)
                        and t.target.attr.value == attr for t in node.targets):
            return True
        if isinstance(node, cst.Del) and any(isinstance(t, cst.Attribute) and is_self(t.value)
                                             and t.attr.value == attr for t in iter_nodes(node.target)):
            return True
    return False


def _refers_to(owner: str, value: cst.CSTNode, methods: set[str]) -> bool:
    """Does `value` hold the object named `owner`: its bound method (`owner.m`), the
    object itself inside a `partial`/`MethodType`, or a lambda over it? A weak
    reference (`weakref.ref(owner)`) does not."""
    if isinstance(value, cst.Attribute):
        return isinstance(value.value, cst.Name) and value.value.value == owner and value.attr.value in methods
    if isinstance(value, cst.Lambda):
        return any(isinstance(n, cst.Name) and n.value == owner for n in iter_nodes(value.body))
    if isinstance(value, cst.Call) and isinstance(value.func, (cst.Name, cst.Attribute)) and \
            (value.func.value if isinstance(value.func, cst.Name) else value.func.attr.value) \
            in ("partial", "partialmethod", "MethodType"):
        return any((isinstance(a.value, cst.Name) and a.value.value == owner) or
                   _refers_to(owner, a.value, methods) for a in value.args)
    return False


class _Locals(cst.CSTVisitor):
    """Per method: nested functions that close over `self`, locals holding a callback
    that references `self`, locals naming objects reached from `self` (loop variables
    over `self.parameters()`, `m = self.sub`)."""

    def __init__(self) -> None:
        self.closures: dict[str, cst.FunctionDef] = {}
        self.bindings: list[tuple[set[str], cst.CSTNode]] = []

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if mentions_self(node.body):
            self.closures[node.name.value] = node

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self.bindings.append((target_names(t.target), node.value))

    def visit_For(self, node: cst.For) -> None:
        self.bindings.append((target_names(node.target), node.iter))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.bindings.append((target_names(node.target), node.iter))


class _Sites(cst.CSTVisitor):
    """Where a method stores a callback that references `self` back on `self` (or on
    an object reached from it), or registers one as a hook there."""

    def __init__(self, rule: "SelfCycleCallback", methods: set[str], locals_: _Locals,
                 cls: Optional[cst.ClassDef] = None) -> None:
        self.rule = rule
        self.methods = methods
        self.cls = cls
        self.closures = locals_.closures
        self.bound_locals: set[str] = set()
        self.owned_locals: set[str] = set()
        self.cache_locals: set[str] = set()
        for _ in range(3):
            for names, value in locals_.bindings:
                if self.refers(value):
                    self.bound_locals |= names
                if self.cache_of_self(value):
                    self.cache_locals |= names
                if _owned(value, self.owned_locals):
                    self.owned_locals |= names - {"self"}
        self.found: list[tuple[cst.CSTNode, cst.CSTNode, str, str]] = []  # (node, value, how, where)

    def visit_ClassDef(self, node) -> bool:
        return False

    # -- does a value reference `self` (so storing it on `self` makes a cycle)? ------------
    def refers(self, value: cst.CSTNode) -> bool:
        ctx = self.rule.ctx
        if isinstance(value, cst.Attribute):
            return is_self(value.value) and value.attr.value in self.methods
        if isinstance(value, cst.Name):
            return value.value in self.closures or value.value in self.bound_locals
        if isinstance(value, cst.Lambda):
            return mentions_self(value.body)
        if isinstance(value, cst.Call):
            q = ctx.qualname(value.func)
            if q in _WEAK:
                return False
            if q in _PARTIAL or q in _METHOD_TYPE:
                return any(is_self(a.value) or self.refers(a.value) for a in value.args)
            return self.cache_of_self(value)
        if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            return any(self.refers(e.value) for e in value.elements)
        if isinstance(value, cst.Dict):
            return any(isinstance(e, cst.DictElement) and self.refers(e.value) for e in value.elements)
        return False

    def cache_of_self(self, value: cst.CSTNode) -> bool:
        """`lru_cache(...)(self.m)`, `functools.cache(self.m)`, or a local bound to one:
        a cache around a callback over `self` (it keeps the callback, and every result)."""
        if isinstance(value, cst.Name):
            return value.value in self.cache_locals
        if not isinstance(value, cst.Call) or not value.args:
            return False
        func = value.func.func if isinstance(value.func, cst.Call) else value.func
        return self.rule.ctx.qualname(func) in _CACHES and self.refers(value.args[0].value)

    def constructed_with_self(self, value: cst.CSTNode) -> bool:
        """`Timer(self.tick, 5)`: a class (a capitalised name, as PEP 8 spells classes)
        built around a callback over `self`, which it keeps."""
        if not isinstance(value, cst.Call):
            return False
        q = self.rule.ctx.qualname(value.func) or ""
        last = q.rpartition(".")[2]
        if not last[:1].isupper() or last.isupper() or q in _RUN_ONCE:
            return False
        return any(self.refers(a.value) for a in value.args)

    def _passed_to_storing_method(self, node: cst.Call) -> bool:
        """`super().__init__(self.propose, ...)` (or `super(C, obj).__init__(obj.propose)`)
        where the base's method (a class of the file) stores that parameter on its
        instance as it is (`self.propose = propose`)."""
        receiver = _own_method_receiver(node.func)
        if receiver is None:
            return False
        callee = _base_method(self.rule.ctx, self.cls, node.func.attr.value)
        if callee is None:
            return False
        stored = _stored_parameters(callee)
        params = [p.name.value for p in (*callee.params.posonly_params, *callee.params.params)][1:]
        for position, arg in enumerate(node.args):
            if arg.star:
                break
            name = arg.keyword.value if arg.keyword is not None else \
                params[position] if position < len(params) else None
            attr = stored.get(name) if name else None
            if attr is None:
                continue
            if self.refers(arg.value) if receiver == "self" else \
                    _refers_to(receiver, arg.value, self.methods):
                self.found.append((node, arg.value, "passed", f"{receiver}.{attr}"))
                return True
        return False

    # -- stores ------------------------------------------------------------------------------
    def _stored(self, target: cst.CSTNode, value: cst.CSTNode, node: cst.CSTNode) -> None:
        if not isinstance(target, (cst.Attribute, cst.Subscript)) or not _owned(target, self.owned_locals):
            return
        if self.cache_of_self(value):
            self.found.append((node, value, "cached", self.rule.ctx.code(target)))
        elif self.refers(value):
            self.found.append((node, value, "stored", self.rule.ctx.code(target)))
        elif self.constructed_with_self(value):
            self.found.append((node, value, "constructed", self.rule.ctx.code(target)))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._stored(t.target, node.value, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._stored(node.target, node.value, node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if self.cls is not None and self._passed_to_storing_method(node):
            return
        if isinstance(func, cst.Name) and func.value == "setattr" and len(node.args) == 3:
            owner, attr, value = (a.value for a in node.args)
            if _owned(owner, self.owned_locals) and self.refers(value):
                name = attr.evaluated_value if isinstance(attr, cst.SimpleString) else "..."
                self.found.append((node, value, "stored", f"{self.rule.ctx.code(owner)}.{name}"))
            return
        if not isinstance(func, cst.Attribute):
            return
        name = func.attr.value
        owner = func.value
        owned = _owned(owner, self.owned_locals)
        if name in CONTAINER_ADD:
            if owned and not is_self(owner):
                for arg in node.args:
                    if self.refers(arg.value):
                        self.found.append((node, arg.value, "added", self.rule.ctx.code(owner)))
                        return
            return
        if name == "connect" and owned and self.rule.uses_qt():
            # a Qt signal keeps a plain bound method weakly, any other callable (a
            # partial, a lambda, a closure) strongly, in its C++ connection
            for arg in node.args:
                value = arg.value
                if not (isinstance(value, cst.Attribute) and is_self(value.value)) and self.refers(value):
                    self.found.append((node, value, "slot", self.rule.ctx.code(owner)))
                    return
            return
        is_hook = name in HANDLE_HOOKS or (name.lstrip("_").startswith("register") and "hook" in name)
        if is_hook:
            hook = hook_argument(node)
            # an autograd node of a tensor made here is reported when the class keeps
            # what it is handed per call (`_keeps_call_values`)
            if (owned or _on_graph(owner)) and hook is not None and self.refers(hook):
                self.found.append((node, hook, "hook", name))
            return
        words = name_words(name)
        if words & CALLBACK_WORDS and words & REGISTER_VERBS and owned:
            for arg in node.args:
                if self.refers(arg.value):
                    self.found.append((node, arg.value, "callback", name))
                    return
        # a setter (`setopt`, `set_handler`) keeps what it is given
        if owned and not is_self(owner) and name.lstrip("_").lower().startswith("set") \
                and name not in ("setdefault", "setattr"):
            for arg in node.args:
                if self.refers(arg.value):
                    self.found.append((node, arg.value, "setter", name))
                    return


class SelfCycleCallback(Rule):
    prefilter = SelfCycleCallbackPrefilter
    name = "self-cycle-callback"
    summary = "An object keeps a callback that references it back, making a reference cycle"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports, in heavy classes (an `nn.Module`, a class holding tensors or models, a configured
heavy type), a callback that references the instance stored back on the instance or on an
object it reaches - a bound method (`self.fn = self.method`), a `functools.partial` of
`self` or of a bound method (`self.forward = partial(wrap, self.forward)`), a lambda or
nested function using `self` - whether assigned (`self.x = ...`, `self.sub.cb = ...`),
added to a container of `self` (`self._callbacks.append(self.save)`), registered as a hook
on `self` or on an object or parameter reached from it
(`self.sub.register_forward_hook(lambda *a: self.x)`,
`self._register_load_state_dict_pre_hook(partial(hook, self))`,
`p.register_hook(self.on_grad)` for `p` in `self.parameters()`), set with
`setattr(...)`, or handed to a `register_callback`-style method of such an object. Also a
bound method handed to a base class's method that stores it on the instance as it is
(`super().__init__(self.propose, ...)` where the base's `__init__` does `self.propose =
propose`; `super(C, obj).__init__(obj.propose)` alike). A subclass of a `torch.distributions`
distribution counts as heavy: it holds its parameters as tensors.

In any function, a model handed in as a parameter annotated as one (`module: nn.Module`,
a configured heavy type) that gets its own bound method stored on itself
(`module.forward = partial(fn, module.forward)`, `model.forward = MethodType(fn, model)`, a
lambda over `model`) is reported too, unless the function sets it back or deletes it.

Four shapes are reported in any class, heavy or not, because what they keep does not
depend on the class holding tensors:

- a per-instance cache around the instance's own method stored on it
  (`self.get_coord = lru_cache()(self.get_coord)`, `functools.cache(self.m)`): the cache
  holds the bound method, hence the instance, and every result it computed;
- a callback over `self` registered on the autograd node of a tensor made per call
  (`out.grad_fn.register_hook(closure)`) in a class that keeps values it is handed per
  call (`self.saved = output` in a hook method): the C++ node holds the instance, the
  instance holds tensors whose graph holds the node, and the collector sees none of it;
- a callback handed to a holder kept on `self` - built around it
  (`self._timer = PeriodicCallback(self._tick, 500)`) or given it through a setter
  (`self._multi.setopt(KEY, self._on_socket)`) - in a class whose release method uses that
  holder (stops, closes it) but keeps it: after release the instance stays in the cycle,
  for ever when the holder is a C object. A thread (`threading.Thread(target=self.run)`)
  drops its target once it has run and is not reported, nor is a holder of the file that
  drops the callback itself (it rebinds or deletes the attribute it stored it in, say
  `self.on_done = lambda: None` when its job ends); dropping the holder on release
  (`self._timer = None`) breaks the cycle;
- in a file that imports a Qt binding (qtpy, PyQt5/6, PySide2/6, pyqtgraph), a partial,
  lambda or closure over `self` connected to a signal of the instance or of a widget it
  owns (`self.box.valueChanged.connect(partial(self._changed, name="x"))`), unless the
  class disconnects that signal: Qt keeps a plain bound method weakly but any other slot
  strongly, in the C++ connection, so the collector never sees the cycle (an error).

Otherwise only classes whose instances hold something heavy themselves are reported: a tensor,
parameter or buffer, a layer with weights, an instance of a project class that holds one,
a model handed in (a parameter annotated as a model, or named `model`/`module`), or a
configured heavy type. A module with no state of its own (an activation, a sampler) in a
cycle keeps nothing worth freeing early.

Not reported: plain classes; `weakref.WeakMethod` / `weakref.ref` callbacks (a partial
of `type(module).forward` and `weakref.ref(module)`); staticmethods, classmethods and
properties, and methods behind a decorator of the file that binds through a weak reference
(`@weakmethod` returning `partial(fn, weakref.ref(self))`); a base-class method that only
calls what it is handed; stores undone by a release method
(`self.fn = None`, `del self.fn`, the hook handle removed); temporary patches the method
takes out again (`del self.fn` in a `finally:`, a patched function that restores the
original, the original set back on every way out: in `finally`, or in both `except` and
`else`); hooks for one call, whose handle the registering function removes on every way
out of it (in `finally`, after a `@contextmanager`'s `yield`, before each `return`,
`with handle:`, the handles of a list removed in a loop) or that remove their own handle
when they run (a one-shot hook); hooks whose handles, kept on `self`, another method the
class itself calls removes (registered at a step's start, removed at its end) - unless
the registering method removes the old ones only to register new ones; registries whose entries are popped or removed
somewhere in the class; hooks on per-step tensors.

Severity: an error when the cycle passes where the collector cannot see it - a
`register_post_accumulate_grad_hook` on a tensor or parameter the instance owns, a hook on
an autograd graph node (a `grad_fn`, a gradient accumulator), a Qt connection (the pattern
behind gpytorch's CUDA leak). A plain Python cycle - a `load_state_dict` / `state_dict` hook
holding the module, `register_hook` on a parameter (the tensor's hook dict is traversed by
the collector), a bound method stored on the instance or on a model handed in - is freed by
the cyclic collector: a warning when that comes too late (a finalizer or `weakref.finalize(self,
...)` waits on the instance's death; instances are values made per call, such as torch
distributions, which a disabled collector would never free; or the model was handed in by a
caller, who frees it by dropping it - fairscale's `checkpoint_wrapper` - and a collection
is triggered by the count of Python objects made, not by the GPU memory the model pins),
otherwise info (real but negligible, shown with `--min-severity info`): an object made once
keeps only itself, and so does an optimizer or engine handed in (built once per run) or a
`torch.fx.GraphModule` (cyclic through its graph already).

## Why it leaks
The object becomes part of a reference cycle, so reference counting can never free it:
its GPU memory is released only when the cyclic garbage collector happens to run (which
may be long after the model was dropped, while the next model is already loading) - and
never, when the cycle passes through C++ objects the collector cannot traverse.

## Example
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self._register_load_state_dict_pre_hook(partial(_upgrade, self))  # RL701
        self.act = self.gelu  # RL701

    def gelu(self, x):
        return torch.nn.functional.gelu(x)
```

## Suggestion
Store `weakref.WeakMethod(self.method)` (or `weakref.ref(self)`) and dereference it at call
time, keep the callback off the object (a staticmethod or module function receiving what
it needs), or call the method directly. For state-dict hooks, register the plain
function with `register_load_state_dict_pre_hook(fn)` (or
`_register_load_state_dict_pre_hook(fn, with_module=True)`): PyTorch passes the module
itself and keeps only a weak reference to it.
"""

    valid = [
        # the model held weakly by the partial; a patch undone before returning
        """
import functools
import weakref

import torch.nn as nn

def checkpoint_wrapper(module: nn.Module) -> nn.Module:
    module.forward = functools.partial(run, type(module).forward, weakref.ref(module))
    return module

def traced(model: nn.Module, batch):
    original = model.forward
    model.forward = functools.partial(run, model.forward)
    try:
        return model(batch)
    finally:
        model.forward = original

def run(forward, *args):
    return forward(*args)
""",
        # a plain class: a collectable cycle of no weight
        """
class Handler:
    def __init__(self):
        self.fn = self.handle

    def handle(self):
        pass
""",
        # a timer dropped on close; a cache that does not hold `self`; a thread
        """
import functools
import threading
from tornado import ioloop

class Client:
    def start(self):
        self._timer = ioloop.PeriodicCallback(self._tick, 1000)
        self._parse = functools.lru_cache()(str.split)
        self._thread = threading.Thread(target=self._tick)

    def close(self):
        self._timer.stop()
        self._timer = None
        self._thread.join()

    def _tick(self):
        pass
""",
        # weak references and staticmethods do not make a cycle
        """
import weakref
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self._cb = weakref.WeakMethod(self.step)
        self.act = self.gelu
        self.register_load_state_dict_pre_hook(Block._upgrade)

    def step(self):
        pass

    @staticmethod
    def gelu(x):
        return x

    @staticmethod
    def _upgrade(module, state_dict, *args):
        pass
""",
        # undone on release
        """
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = self.step

    def step(self):
        pass

    def close(self):
        self.fn = None
""",
        # a hook on a per-step output, and data attributes
        """
import torch.nn as nn

class Block(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size
        self.width = self.size

    def forward(self, x):
        y = x * 2
        y.register_hook(self.on_grad)
        return y

    def on_grad(self, g):
        pass
""",
    ]
    invalid = [
        Example(
            """
from functools import partial

import torch
import torch.nn as nn

def _upgrade(module, state_dict, prefix, *args):
    pass

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self._register_load_state_dict_pre_hook(partial(_upgrade, self))
        self.act = self.gelu
        self.proj.register_forward_hook(lambda m, a, out: self.record(out))
        for p in self.parameters():
            p.register_post_accumulate_grad_hook(self.on_grad)

    def gelu(self, x):
        return torch.nn.functional.gelu(x)

    def record(self, out):
        pass

    def on_grad(self, p):
        pass
""",
            lines=[14, 15, 16, 18],
        ),
        Example(
            """
import torch.nn as nn

class Trainer:
    def __init__(self, model: nn.Module):
        self.model = model
        self.callbacks = []
        self.callbacks.append(self.save)

    def save(self):
        pass
""",
            lines=[8],
            settings={"heavy_types": ["example.Trainer"]},
        ),
        # a per-instance cache around the instance's own method, in any class
        Example(
            """
from functools import lru_cache

class Grid:
    def __init__(self, shape):
        self.shape = shape
        self.coords = lru_cache()(self.coords)

    def coords(self, mode="center"):
        return [[0.0] * self.shape[1] for _ in range(self.shape[0])]
""",
            lines=[7],
        ),
        # a timer built around a bound method, stopped on close but kept
        Example(
            """
from tornado import ioloop

class Client:
    def start(self):
        self._timer = ioloop.PeriodicCallback(self._tick, 1000)
        self._timer.start()

    def close(self):
        self._timer.stop()

    def _tick(self):
        pass
""",
            lines=[6],
        ),
        # a closure over `self` on a per-call tensor's grad_fn, in a class keeping activations
        Example(
            """
class Relevance:
    def pre_forward(self, module, inputs):
        def on_backward(grad_input, grad_output):
            return self.rule(grad_input, self.saved)

        out = inputs[0].clone()
        out.grad_fn.register_hook(on_backward)
        return (out,)

    def forward(self, module, inputs, output):
        self.saved = output

    def rule(self, grad, saved):
        return grad
""",
            lines=[8],
        ),
        # a closure over `self` on an object the instance reaches, the value on its own line
        Example(
            """
import torch.nn as nn

class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        method = self.proj.quant_method

        def pack(layer):
            self.packed = layer.weight.t()

        method.process_weights = (
            pack
        )
""",
            lines=[13],
        ),
        # a model's own bound method stored on it by a helper (fairscale's checkpoint
        # wrapper), and a bound method a base class keeps (pyro's rejection samplers)
        Example(
            """
import functools

import torch
import torch.nn as nn
from torch.distributions import Distribution

def checkpoint_wrapper(module: nn.Module) -> nn.Module:
    module.forward = functools.partial(torch.utils.checkpoint.checkpoint, module.forward)
    return module

class Rejector(Distribution):
    def __init__(self, propose):
        self.propose = propose

class Gamma(Rejector):
    def __init__(self, concentration):
        self.concentration = concentration
        super().__init__(self.draw)

    def draw(self, shape):
        return torch.randn(shape) * self.concentration
""",
            lines=[9, 19],
        ),
        # a partial over `self` connected to a Qt signal of an owned widget (mne-qt-browser)
        Example(
            """
from functools import partial

from qtpy.QtWidgets import QDialog, QSpinBox

class Settings(QDialog):
    def __init__(self):
        super().__init__()
        self.box = QSpinBox()
        self.box.valueChanged.connect(partial(self._changed, name="downsampling"))

    def _changed(self, value, name):
        pass
""",
            lines=[10],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._holds: dict[int, bool] = {}
        self._qt: Optional[bool] = None

    # ----------------------------------------------------------------------------------------
    def _is_heavy(self, cls: cst.ClassDef) -> bool:
        return self.ctx.heavy.is_heavy_class(cls) or self.ctx.heavy.is_heavy_qualname(cls.name.value) \
            or self.ctx.index.is_heavy_class(f"{self.ctx.module_name}.{cls.name.value}") \
            or self._tensor_distribution(cls)

    def _tensor_distribution(self, cls: cst.ClassDef) -> bool:
        """A `torch.distributions` distribution: by contract it holds its parameters as
        tensors (a batch of them, as large as the model a guide approximates)."""
        for klass in [cls, *local_bases(self.ctx, cls)]:
            for base in klass.bases:
                q = self.ctx.absolute(self.ctx.qualname(base.value) or "")
                if q.startswith("torch.distributions."):
                    return True
        return False

    def _method_names(self, cls: cst.ClassDef) -> set[str]:
        """Names that are bound methods of an instance (not properties, staticmethods or
        classmethods), including those of project base classes in other files."""
        methods = class_methods(self.ctx, cls)
        names = {n for n, fn in methods.items()
                 if not is_property(self.ctx, fn) and not (decorator_names(self.ctx, fn) & STATIC)
                 and not self._weakly_bound(fn)}
        names |= MODULE_METHODS
        bases = [self.ctx.absolute(self.ctx.qualname(b.value)) for b in cls.bases]
        for summary in self.ctx.index.ancestors(bases):
            names |= {n for n, f in summary.methods.items() if inherited_bound_method(f.decorators)}
        return names - {n for n, fn in methods.items() if is_property(self.ctx, fn)}

    def uses_qt(self) -> bool:
        """Does the file import a Qt binding (its signals' `connect` keeps slots in C++)?"""
        if self._qt is None:
            self._qt = any(
                isinstance(n, (cst.Import, cst.ImportFrom)) and any(
                    self.ctx.code(part).split(".")[0].strip() in _QT_MODULES
                    for part in ([n.module] if isinstance(n, cst.ImportFrom) and n.module is not None
                                 else [a.name for a in n.names] if isinstance(n, cst.Import) else []))
                for n in iter_nodes(self.ctx.module))
        return self._qt

    def _weakly_bound(self, method: cst.FunctionDef) -> bool:
        """Decorated with a function of this file that binds through a weak reference
        (pyro's `@weakmethod`: `partial(fn, weakref.ref(self))` behind a property): the
        attribute hands out a callable that does not hold the instance."""
        for name in decorator_names(self.ctx, method):
            decorator = self.ctx.functions.get(name) or self.ctx.functions.get(name.rpartition(".")[2])
            if decorator is not None and any(
                    isinstance(n, cst.Call) and self.ctx.qualname(n.func) in _WEAK for n in iter_nodes(decorator)):
                return True
        return False

    def _holds_heavy(self, cls: cst.ClassDef) -> bool:
        """Does the instance hold something heavy itself - a tensor, a parameter or buffer,
        a model or heavy submodule, a configured heavy type? A module with no state of
        its own (an activation, a sampler) in a cycle keeps nothing worth reporting."""
        key = id(cls)
        if key not in self._holds:
            self._holds[key] = self._compute_holds(cls)
        return self._holds[key]

    def _compute_holds(self, cls: cst.ClassDef) -> bool:
        heavy = self.ctx.heavy
        if cls.name.value in heavy._configured_here or \
                f"{self.ctx.module_name}.{cls.name.value}" in self.ctx.settings.heavy_types:
            return True
        if self._tensor_distribution(cls):
            return True
        self._holds[id(cls)] = False  # recursion guard (a class holding its own kind)
        for klass in [cls, *local_bases(self.ctx, cls)]:
            for stmt in body_statements(klass):  # class-level `weight: torch.Tensor`
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        if isinstance(small, cst.AnnAssign) and heavy.is_heavy_annotation(small.annotation):
                            return True
            for method in self.ctx.methods(klass).values():
                for name, values in heavy.local_assignments(method).items():
                    if not name.startswith("self."):
                        continue
                    for value, annotation in values:
                        if heavy.is_heavy_annotation(annotation) or (
                                value is not None and self._value_holds(value, method)):
                            return True
                for node in iter_nodes(method.body):
                    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                            is_self(node.func.value) and node.func.attr.value in _STATE_REGISTRATION:
                        return True
        return any(_external_holds(self.ctx.index, q) for q in external_bases(self.ctx, cls))

    def _value_holds(self, value: cst.BaseExpression, method: cst.FunctionDef) -> bool:
        """Is `value` a tensor, a parameter, a layer with weights, a model handed in (an
        annotated parameter), or an instance of a project class that itself holds one?"""
        heavy = self.ctx.heavy
        if isinstance(value, cst.Name):
            param = find_param(method, value.value)
            return param is not None and (heavy.is_heavy_annotation(param.annotation)
                                          or _model_name(value.value))
        if not isinstance(value, cst.Call):
            return False
        q = self.ctx.qualname(value.func)
        if not q:
            return False
        if q in TENSOR_FACTORIES or q in _TENSOR_TYPES:
            return True
        if q.startswith("torch.nn.") and q.count(".") == 2:
            return not weightless_layer(q)  # not an activation, dropout, pooling...
        local = self.ctx.classes.get(q)
        if local is not None:
            return self._holds_heavy(local)
        absolute = self.ctx.absolute(q)
        if self.ctx.index.resolve(absolute) in self.ctx.index.classes:
            return _external_holds(self.ctx.index, absolute)
        return self.ctx.index.returns_heavy(absolute)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        names = self._method_names(node)
        handles: Optional[ClassHandles] = None
        heavy: Optional[bool] = None
        for method in self.ctx.methods(node).values():
            params = method.params.posonly_params or method.params.params
            if not params or params[0].name.value != "self" or decorator_names(self.ctx, method) & STATIC:
                continue
            locals_ = _Locals()
            visit(method.body, locals_)
            sites = _Sites(self, names, locals_, node)
            visit(method.body, sites)
            for site, value, how, where in sites.found:
                if handles is None:
                    handles = ClassHandles(self.ctx, node)
                if heavy is None:
                    heavy = self._is_heavy(node) and self._holds_heavy(node)
                if not self._worth_reporting(node, handles, sites, site, how, heavy):
                    continue
                if self._transient(node, method, sites, site, how, where) or \
                        self._undone(handles, site, how, where):
                    continue
                if how == "constructed" and self._holder_drops_callback(value, sites):
                    continue
                self._report(node, method, site, value, how, where)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """`module.forward = partial(fn, module.forward)` in any function, where `module`
        is a parameter annotated as a model (`nn.Module`, a configured heavy type): the
        object handed in now holds its own bound method, a cycle around its weights."""
        params = (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
        heavy = {p.name.value for p in params
                 if p.name.value not in ("self", "cls") and self.ctx.heavy.is_heavy_annotation(p.annotation)}
        if not heavy:
            return
        methods = set(MODULE_METHODS)
        assigns = [n for n in iter_nodes(node.body) if isinstance(n, cst.Assign)]
        for site in assigns:
            for t in site.targets:
                target = t.target
                if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                        and target.value.value in heavy
                        and _refers_to(target.value.value, site.value, methods)):
                    continue
                where = self.ctx.code(target)
                owner = target.value.value
                if self._patched_back(node, assigns, site, where, owner, methods):
                    continue
                code = short(self.ctx.code(site.value))
                facts = Facts(heavy=True, meant_to_go=self._a_model(params, owner) or None, collected=True)
                self.report(site, f"`{where} = {code}` stores a callback that references `{owner}` on `{owner}` "
                            "itself: a reference cycle, so the model (and its tensors) is freed only when the "
                            f"cyclic collector runs; bind it weakly (`type({owner}).forward` with "
                            f"`weakref.ref({owner})`) or wrap the model instead of patching it",
                            # the caller's model: dropping it frees nothing until a collection
                            severity=level(facts))

    def _a_model(self, params, name: str) -> bool:
        """Is parameter `name` annotated as a model - `nn.Module`, a pretrained model, a
        configured heavy type, or a project class derived from one? A model is what a process
        loads, drops and loads again; an optimizer or an engine handed in is built once per
        run. Not a `torch.fx.GraphModule`: cyclic already (`gm.graph.owning_module is gm`),
        one more cycle changes nothing about when it is freed."""
        index = self.ctx.index
        for p in params:
            if p.name.value != name or p.annotation is None:
                continue
            for node in iter_nodes(annotation_expression(p.annotation) or cst.Name("None")):
                qualified = self.ctx.absolute(self.ctx.qualname(node)) \
                    if isinstance(node, (cst.Name, cst.Attribute)) else None
                if not qualified or qualified in _GRAPH_MODULES:
                    continue
                names = {index.resolve(qualified) or qualified}
                names.update(b for c in index.ancestors(names) for b in c.bases)
                if any(n in _MODEL_TYPES or n in index.heavy_types
                       or (n.startswith("torch.nn.") and n.count(".") == 2 and n[9:10].isupper()
                           and n not in _TENSOR_TYPES) for n in names if n):
                    return True
        return False

    def _patched_back(self, fn: cst.FunctionDef, assigns, site, where: str, owner: str, methods: set[str]) -> bool:
        """Is `where` set back to a saved original (a name or attribute that does not
        hold `owner`) or deleted elsewhere in the function: a temporary patch? Another
        wrapper assigned in another branch is no restore."""
        for other in assigns:
            if other is not site and isinstance(other.value, (cst.Name, cst.Attribute)) \
                    and not _refers_to(owner, other.value, methods) and any(
                    self.ctx.code(t.target) == where for t in other.targets):
                return True
        return any(isinstance(n, cst.Del) and self.ctx.code(n.target).find(where) >= 0 for n in iter_nodes(fn.body))

    def _worth_reporting(self, cls: cst.ClassDef, handles: ClassHandles, sites: "_Sites", site,
                         how: str, heavy: bool) -> bool:
        """Does this cycle keep something worth freeing, whatever the class?

        - a cache around the instance's own method keeps every result it computed;
        - a callback over `self` on an autograd node of a tensor made per call, in a class
          that keeps what it is handed per call: the node (C++) pins the instance, the
          instance pins tensors whose graph pins the node - never collected;
        - a callback handed to a timer, handle or helper kept on `self` (built around it,
          or given it through a setter), in a class whose release method stops or closes
          that holder but keeps it: after release, the instance stays in the cycle (for
          ever when the holder is a C object the collector cannot traverse).
        Anything else only in heavy classes (a model, a class holding tensors)."""
        if how in ("cached", "slot"):
            return True
        if how == "hook" and not _owned(site.func.value, sites.owned_locals):
            return _keeps_call_values(self.ctx, cls)  # an autograd node of a per-call tensor
        if how in ("constructed", "setter"):
            holder = site.func.value if how == "setter" else site.targets[0].target \
                if isinstance(site, cst.Assign) else None
            return self._released_but_kept(handles, holder)
        return heavy

    def _released_but_kept(self, handles: ClassHandles, holder) -> bool:
        """Is `holder` a `self.<attr>` that a release method uses (stops, closes) - the
        author's sign that it is a resource tied to the instance's life?"""
        if not (isinstance(holder, cst.Attribute) and is_self(holder.value)):
            return False
        attr = holder.attr.value
        reach = handles.reachable(handles.release_methods(whole=False))
        return any(
            isinstance(n, cst.Attribute) and is_self(n.value) and n.attr.value == attr
            for m in reach for n in iter_nodes(handles.methods[m].body))

    def _transient(self, cls: cst.ClassDef, method: cst.FunctionDef, sites: "_Sites", site,
                   how: str, where: str) -> bool:
        """Is the callback taken out again by the code itself: the same attribute deleted
        or set back in the same method (a temporary patch, undone in `finally` or by the
        patched function), or the container it went into pruned somewhere in the class
        (a registry whose entries are popped when done)? Or is it undone on every way out
        of the function that makes it (a hook's handle removed, the attribute set back)?"""
        if how == "hook":
            return hook_removed_on_exit(self.ctx, method, site, hook_argument(site))
        if how == "slot":  # the class disconnects that signal (on close, say)
            return any(isinstance(n, cst.Call) and self._disconnects(n, where) for n in iter_nodes(cls))
        if how in ("stored", "cached", "constructed"):
            if undone_on_every_exit(self.ctx, method, site,
                                    lambda statement: self._restores(statement, where, sites)):
                return True  # set back on every way out (`finally`, both `except` and `else`)
            # set back inside a nested function (the patched function unpatches itself)
            # or in a `finally:` block
            guarded: set[int] = set()
            for node in iter_nodes(method.body):
                if isinstance(node, (cst.FunctionDef, cst.Finally)) and id(node) not in guarded:
                    guarded |= {id(n) for n in iter_nodes(node)}
            for node in iter_nodes(method.body):
                if isinstance(node, cst.Assign) and node is not site and id(node) in guarded \
                        and not sites.refers(node.value) \
                        and any(self.ctx.code(t.target) == where for t in node.targets):
                    return True
                if isinstance(node, cst.Del) and any(
                        self.ctx.code(t) == where for t in iter_nodes(node.target)
                        if isinstance(t, (cst.Attribute, cst.Subscript))):
                    return True
            target = site.targets[0].target if isinstance(site, cst.Assign) else None
            if not isinstance(target, cst.Subscript):
                return False
            container = self.ctx.code(target.value)
        elif how == "added":
            container = where
        else:
            return False
        text = self.ctx.code(cls)
        return any(f"{container}.{verb}(" in text for verb in ("pop", "popitem", "remove", "discard", "clear")) \
            or f"del {container}[" in text

    def _holder_drops_callback(self, call: cst.Call, sites: "_Sites") -> bool:
        """Is `call` the constructor of a class of the file that stores each callback over
        `self` it is handed on its instance as it is (`self.notify = on_finished`) and
        rebinds or deletes that attribute in another method (`self.notify = lambda: None`
        once its job has run)? The holder breaks the cycle itself, as a thread drops its
        target."""
        holder = self.ctx.classes.get(self.ctx.qualname(call.func) or "")
        init = self.ctx.methods(holder).get("__init__") if holder is not None else None
        if init is None:
            return False
        stored = _stored_parameters(init)
        positional = [p.name.value for p in (*init.params.posonly_params, *init.params.params)][1:]
        attrs = []
        for position, arg in enumerate(call.args):
            if not sites.refers(arg.value):
                continue
            if arg.star:
                return False
            param = arg.keyword.value if arg.keyword is not None else \
                positional[position] if position < len(positional) else None
            if param not in stored:
                return False  # kept some other way
            attrs.append((param, stored[param]))
        others = [m for name, m in self.ctx.methods(holder).items() if name != "__init__"]
        return bool(attrs) and all(any(_drops_attribute(m, attr, param) for m in others)
                                   for param, attr in attrs)

    def _disconnects(self, call: cst.Call, signal: str) -> bool:
        """`signal.disconnect()`, or a helper named for it given the signal
        (`_disconnect(self.box.valueChanged)`)."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "disconnect":
            return self.ctx.code(func.value) == signal
        return "disconnect" in self.ctx.code(func) and any(self.ctx.code(a.value) == signal for a in call.args)

    def _restores(self, statement: cst.CSTNode, where: str, sites: "_Sites") -> bool:
        """Does `statement` set `where` back to something that is no callback over
        `self` (the original), or delete it?"""
        if not isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return False
        for small in statement.body:
            if isinstance(small, cst.Assign) and not sites.refers(small.value) and any(
                    self.ctx.code(t.target) == where for t in small.targets):
                return True
            if isinstance(small, cst.Del) and any(
                    self.ctx.code(t) == where for t in iter_nodes(small.target)
                    if isinstance(t, (cst.Attribute, cst.Subscript))):
                return True
        return False

    def _undone(self, handles: ClassHandles, site, how: str, where: str) -> bool:
        """Does a release method (or what it calls) break the cycle again?"""
        if how == "hook" and self._removed_by_sibling(handles, site):
            return True
        releases = handles.release_methods(finalizer=False)
        if not releases:
            return False
        reach = handles.reachable(releases + handles.context_managers())
        if how in ("setter", "callback") and isinstance(site.func, cst.Attribute):
            where = self.ctx.code(site.func.value)  # dropping the holder breaks the cycle
        if how in ("stored", "added", "cached", "constructed", "setter", "callback", "passed") and \
                where.startswith("self."):
            attr = re.split(r"[.\[]", where[5:], maxsplit=1)[0]
            return any(attr in handles.facts[m].drops for m in reach)
        if how == "hook":
            for facts in handles.facts.values():
                for store in facts.stores:
                    if store.call is site and handles.removed_in(store.attr, reach):
                        return True
        return False

    @staticmethod
    def _removed_by_sibling(handles: ClassHandles, site) -> bool:
        """Are the handles of this registration kept on `self` and removed by another
        method of the class that the class itself calls (`backward()` calls
        `_post_backward()`, which removes what `_pre_forward()` registered), where neither
        method runs the other? Hooks registered at a step's start and removed at its end
        keep the instance in a cycle for one step only. Not when the registering method
        removes the previous hooks itself before registering new ones: a set is then
        always installed. A call from `__del__` does not count: the cycle keeps the
        finalizer from running."""
        called = {name for method, facts in handles.facts.items() if method != "__del__"
                  for name in facts.self_calls}
        for registering, facts in handles.facts.items():
            for store in facts.stores:
                if store.call is not site:
                    continue
                before = handles.reachable([registering])
                for remover in handles.removed_in(store.attr, handles.facts):
                    if remover in called and remover not in before and \
                            registering not in handles.reachable([remover]):
                        return True
        return False

    def _graph_node(self, cls: cst.ClassDef, expr: cst.CSTNode) -> bool:
        """Is `expr` an autograd graph node (`t.grad_fn`, a gradient accumulator), or a
        local or attribute the class assigns one to, rather than a tensor?"""
        if _on_graph(expr):
            return True
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        text = self.ctx.code(expr)
        return any(isinstance(n, cst.Assign) and _on_graph(n.value) and
                   any(self.ctx.code(t.target) == text for t in n.targets) for n in iter_nodes(cls))

    def _report(self, cls: cst.ClassDef, method: cst.FunctionDef, site, value, how: str,
                where: str) -> None:
        name = cls.name.value
        code = short(self.ctx.code(value))
        through_cpp = False
        if how == "hook":
            # a tensor's own `register_hook` dict is visible to the collector (a plain
            # cycle); its post-accumulate-grad hooks and a graph node's hooks are not
            graph_node = is_accumulate_grad(site.func.value) or self._graph_node(cls, site.func.value)
            through_cpp = where in STATE_DICT_HOOKS or graph_node or (
                where in AUTOGRAD_HOOKS and where not in _TENSOR_TRAVERSED_HOOKS)
            target = short(self.ctx.code(site.func.value))
            message = f"`{code}`, registered with `{target}.{where}`, references the `{name}` instance"
        elif how == "slot":
            through_cpp = True
            message = (f"`{code}`, connected to `{short(where)}`, references the `{name}` instance: a Qt "
                       "connection holds any callable but a plain bound method strongly, in C++, where the "
                       f"cycle collector cannot see it, so the `{name}` instance (and what it holds) may "
                       "never be freed; connect the bound method itself, or a `weakref.WeakMethod` "
                       "wrapper, or disconnect it when the widget closes")
        elif how == "added":
            message = f"`{code}` is added to `{where}` and references the `{name}` instance"
        elif how == "passed":
            message = (f"`{code}`, handed to `{short(self.ctx.code(site.func))}`, is stored as `{where}`: "
                       f"a callback that references the `{name}` instance on that instance")
        elif how in ("callback", "setter"):
            message = (f"`{code}`, handed to `{short(self.ctx.code(site.func))}`, references the `{name}` "
                       "instance")
        elif how == "cached":
            message = (f"`{short(self.ctx.code(site), 80)}` keeps a cache around a callback that references "
                       f"the `{name}` instance on that instance")
        elif how == "constructed":
            message = (f"`{short(self.ctx.code(site), 80)}` keeps a callback that references the `{name}` "
                       "instance in an object the instance holds")
        else:
            if isinstance(site, cst.Call):  # setattr(owner, name, value)
                itself = is_self(site.args[0].value)
                text = short(self.ctx.code(site), 80)
            else:
                itself = re.fullmatch(r"self\.\w+", where) is not None
                text = f"{where} = {code}"
            on = "on the instance itself" if itself else "on an object the instance reaches"
            message = f"`{text}` stores a callback that references the `{name}` instance {on}"
        if through_cpp and where in STATE_DICT_HOOKS:
            message += (": the module's hook dict now holds the module, a reference cycle that keeps it "
                        "(and its tensors) alive until the cyclic collector runs; register the plain "
                        "function with `register_load_state_dict_pre_hook(fn)` (or `with_module=True`), "
                        "which passes the module through a weak reference")
        elif how == "slot":
            pass
        elif through_cpp:
            message += (": autograd keeps the hook in C++, which the cycle collector cannot traverse, "
                        f"so the `{name}` instance (and its tensors) may never be freed; use "
                        "`weakref.WeakMethod`/`weakref.ref(self)` in the hook")
        elif how == "cached":
            message += (": a reference cycle, so the instance and the cached results are freed only when "
                        "the cyclic collector runs; keep the result in a plain attribute, or a cache that "
                        "does not hold `self`")
        elif how in ("constructed", "setter"):
            holder = short(self.ctx.code(site.func.value if how == "setter" else site.targets[0].target))
            message += (f": the release method uses `{holder}` but keeps it, so the instance stays in a "
                        "reference cycle after release (freed only by the cyclic collector, never when "
                        f"`{holder}` is a C object it cannot traverse); set `{holder}` to None on release, "
                        "or hand it a `weakref.WeakMethod`")
        else:
            message += (": a reference cycle, so the instance (and its tensors) is freed only when the "
                        "cyclic collector runs; store `weakref.WeakMethod(...)`/`weakref.ref(self)` and "
                        "dereference it at call time, or keep the callback off the object")
        statement = None
        for node in iter_nodes(method.body):
            if isinstance(node, cst.SimpleStatementLine) and any(
                    any(n is site for n in iter_nodes(s)) for s in node.body):
                statement = node
                break
        if through_cpp and where not in STATE_DICT_HOOKS:
            facts = Facts(heavy=True, meant_to_go=True)  # never freed: every release defeated
        else:  # a module's state-dict hook dict is a Python dict: a plain cycle
            facts = Facts(heavy=True, collected=collector_frees(self.ctx, cls))
        self.report(site, message,
                    severity=level(facts),
                    related=[RelatedNode(f"`{name}` is heavy", cls.name)],
                    statement=statement)
