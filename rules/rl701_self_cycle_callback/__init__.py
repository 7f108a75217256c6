"""RL701 self-cycle-callback: the rule itself - which classes and functions it reads, and
the finding's message and severity. Its parts: `sites` (where a method stores a callback
over `self`), `references` (what a value references or reaches from `self`), `holding`
(what the instance holds, whether the cycle is worth reporting), `undoing` (the code
breaking the cycle again), `examples` (its documentation and examples)."""

from __future__ import annotations

import re
import sys
from typing import Any, Optional

import libcst as cst

from retainlint.analysis.cstutil import annotation_expression, decorator_names, is_self
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.names import TENSOR_TYPES as _TENSOR_TYPES
from retainlint.project.hook_names import AUTOGRAD_HOOKS, STATE_DICT_HOOKS
from retainlint.analysis.hooks import (
    ClassHandles, class_methods, is_accumulate_grad, is_property, short,
)
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.rules.prefilters.rl701 import (
    SelfCycleCallbackPrefilter,
    MODULE_METHODS,
    STATIC,
    inherited_bound_method,
)
from retainlint.analysis.rule import RelatedNode, Rule
from retainlint.analysis.severity import Facts, collector_frees, level, light_cycle_freed, made_per_call
from retainlint.analysis.weight import holds_callers_collection, returns_arrays
from retainlint.analysis.walk import visit
from retainlint.rules.rl701_self_cycle_callback.examples import DOCS, INVALID, VALID
from retainlint.rules.rl701_self_cycle_callback.holding import _Holdings, _worth_reporting
from retainlint.rules.rl701_self_cycle_callback.references import _on_graph, _refers_to
from retainlint.rules.rl701_self_cycle_callback.sites import _WEAK, _Locals, _Sites
from retainlint.rules.rl701_self_cycle_callback.undoing import _holder_drops_callback, _transient, _undone

_GRAPH_MODULES = frozenset({"torch.fx.GraphModule", "torch.fx.graph_module.GraphModule"})
_MODEL_TYPES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "transformers.PreTrainedModel",
                          "transformers.modeling_utils.PreTrainedModel"})

# How long a plain reference cycle keeps what it holds.
_UNTIL_COLLECTED = "as long as the cycle lives: until the cyclic collector runs"

# Qt bindings: a signal's `connect` keeps any slot but a plain bound method strongly, in C++.
_QT_MODULES = frozenset({"qtpy", "PyQt5", "PyQt6", "PySide2", "PySide6", "pyqtgraph"})

# Hooks kept in a tensor's own hook dict, which the cycle collector traverses (torch 2.13:
# a module whose parameter's `register_hook` closes over it is freed by `gc.collect()`).
_TENSOR_TRAVERSED_HOOKS = frozenset({"register_hook"})


class SelfCycleCallback(Rule):
    prefilter = SelfCycleCallbackPrefilter
    name = "self-cycle-callback"
    summary = "An object keeps a callback that references it back, making a reference cycle"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = DOCS
    valid = VALID
    invalid = INVALID

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._holdings = _Holdings(ctx)
        self._qt: Optional[bool] = None

    # ----------------------------------------------------------------------------------------
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
            # (the text first: most files name no Qt binding at all)
            self._qt = any(m in self.ctx.source for m in _QT_MODULES) and any(
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
                    heavy = self._holdings.is_heavy(node) and self._holdings.holds_heavy(node)
                if not _worth_reporting(self.ctx, node, handles, sites, site, how, heavy):
                    continue
                if _transient(self.ctx, node, method, sites, site, how, where) or \
                        _undone(self.ctx, handles, site, how, where):
                    continue
                if how == "constructed" and _holder_drops_callback(self.ctx, value, sites):
                    continue
                arrays = None
                if how == "cached":  # what the cache keeps: the arrays its method builds?
                    wrapped = self.ctx.methods(node).get(sites.cached_method(value) or "")
                    arrays = wrapped if wrapped is not None and returns_arrays(self.ctx, wrapped) else None
                self._report(node, method, site, value, how, where, arrays, bool(heavy))

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
                            severity=level(facts),
                            consequence=Consequence(f"the model `{owner}` and its tensors",
                                                    f"a reference cycle through `{where}`",
                                                    _UNTIL_COLLECTED))

    def _unseen_holder(self, cls: cst.ClassDef, site, how: str) -> bool:
        """Is the object keeping the callback made by a class of a library neither the
        project nor the standard library is (`pycurl.CurlMulti()`, a Qt object)? A C type
        hides its references from the cyclic collector, and nothing here shows which it is."""
        call = site.value if how == "constructed" else None
        if how == "setter":  # `self._multi.setopt(key, self._cb)`: what `self._multi` was made by
            holder = self.ctx.code(site.func.value)
            call = next((n.value for n in iter_nodes(cls.body) if isinstance(n, cst.Assign)
                         and any(self.ctx.code(t.target) == holder for t in n.targets)), None)
        if not isinstance(call, cst.Call):
            return False
        qualified = self.ctx.absolute(self.ctx.qualname(call.func))
        if not qualified or "." not in qualified:
            return False
        parts = (self.ctx.index.resolve(qualified) or qualified).split(".")
        return parts[0] not in sys.stdlib_module_names and not any(
            ".".join(parts[:i]) in self.ctx.index.modules for i in range(1, len(parts)))

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
                where: str, arrays: Optional[cst.FunctionDef] = None, heavy: bool = True) -> None:
        """`arrays`: for a cache around a method, that method when it builds the arrays or
        tensors the cache keeps. `heavy`: the instance holds something heavy (the shapes
        reported in any class are reported for light ones too; the note says which)."""
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
        holds = "and its tensors" if heavy else "and what it holds"
        if through_cpp and where in STATE_DICT_HOOKS:
            message += (": the module's hook dict now holds the module, a reference cycle that keeps it "
                        "(and its tensors) alive until the cyclic collector runs; register the plain "
                        "function with `register_load_state_dict_pre_hook(fn)` (or `with_module=True`), "
                        "which passes the module through a weak reference")
        elif how == "slot":
            pass
        elif through_cpp:
            message += (": autograd keeps the hook in C++, which the cycle collector cannot traverse, "
                        f"so the `{name}` instance ({holds}) may never be freed; use "
                        "`weakref.WeakMethod`/`weakref.ref(self)` in the hook")
        elif how == "cached":
            kept = "the arrays the cache keeps (one per argument it saw)" if arrays is not None \
                else "the cached results"
            message += (f": a reference cycle, so the instance and {kept} are freed only when the cyclic "
                        "collector runs" + (", which the bytes of arrays do not trigger" if arrays is not None
                                            else "") +
                        "; keep the result in a plain attribute, or a cache that does not hold `self`")
        elif how in ("constructed", "setter"):
            holder = short(self.ctx.code(site.func.value if how == "setter" else site.targets[0].target))
            message += (f": the release method uses `{holder}` but keeps it, so the instance stays in a "
                        "reference cycle after release (freed only by the cyclic collector, never when "
                        f"`{holder}` is a C object it cannot traverse); set `{holder}` to None on release, "
                        "or hand it a `weakref.WeakMethod`")
        else:
            message += (f": a reference cycle, so the instance ({holds}) is freed only when the "
                        "cyclic collector runs; store `weakref.WeakMethod(...)`/`weakref.ref(self)` and "
                        "dereference it at call time, or keep the callback off the object")
        collection = how == "cached" and arrays is None and holds_callers_collection(self.ctx, cls)
        statement = None
        for node in iter_nodes(method.body):
            if isinstance(node, cst.SimpleStatementLine) and any(
                    any(n is site for n in iter_nodes(s)) for s in node.body):
                statement = node
                break
        if through_cpp and where not in STATE_DICT_HOOKS:
            facts = Facts(heavy=True, meant_to_go=True)  # never freed: every release defeated
        elif how in ("constructed", "setter") and self._unseen_holder(cls, site, how):
            facts = Facts(heavy=True)  # whether the collector can free it at all is unknown
        elif how in ("constructed", "setter") and not heavy:
            # a helper of the project or the standard library, kept past release, over an
            # instance that holds nothing heavy: the cycle is plain Python objects, and each
            # instance made adds to the count of objects that triggers a collection, so
            # instances made per call are freed in time too - unless a finalizer waits on
            # the cycle or the project turns the collector off
            facts = Facts(heavy=False, collected=light_cycle_freed(self.ctx, cls))
        elif arrays is not None:
            # the arrays are made per call, one more per new argument, and wait in the cycle
            # for a collection that their bytes do not count towards
            facts = Facts(heavy=True, meant_to_go=True, collected=collector_frees(self.ctx, cls))
        elif how == "cached":
            # the cycle keeps the instance and all it holds: that costs something when the
            # instance is heavy (a model, the caller's data) and instances come and go
            facts = Facts(heavy=heavy or collection or None,
                          meant_to_go=made_per_call(self.ctx, cls) or None, collected=collector_frees(self.ctx, cls))
        else:  # a module's state-dict hook dict is a Python dict: a plain cycle
            facts = Facts(heavy=True, collected=collector_frees(self.ctx, cls))
        related = [RelatedNode(f"`{arrays.name.value}()` builds the arrays the cache keeps", arrays.name)] \
            if arrays is not None else [RelatedNode(f"`{name}` is heavy", cls.name)] if heavy else \
            [RelatedNode(f"`{name}` is a collection of the data its caller hands it (`__len__`)", cls.name)] \
            if collection else []
        self.report(site, message,
                    severity=level(facts),
                    related=related,
                    statement=statement,
                    consequence=self._consequence(cls, site, how, where, arrays, heavy, collection,
                                                  through_cpp))

    def _consequence(self, cls: cst.ClassDef, site: Any, how: str, where: str,
                     arrays: Optional[cst.FunctionDef], heavy: bool, collection: bool,
                     through_cpp: bool) -> Consequence:
        """The cycle `_report` describes: what it keeps (the instance, and a cache's results),
        the object it runs through, and whether the cyclic collector can free it."""
        name = cls.name.value
        instance = f"the `{name}` instance" + (" (heavy)" if heavy else "")
        kept = f"{instance} and what it holds"
        lifetime = _UNTIL_COLLECTED
        growth = ""
        if how == "hook":
            target = short(self.ctx.code(site.func.value), 40)
            holder = (f"a reference cycle through the state-dict hooks of `{target}` (`{where}`)"
                      if where in STATE_DICT_HOOKS else f"a reference cycle through the hooks of `{target}` (`{where}`)")
            if through_cpp and where not in STATE_DICT_HOOKS:
                lifetime = "the process, unless the hook is removed: autograd keeps it in C++, out of the collector's reach"
        elif how == "slot":
            holder = f"a reference cycle through the Qt connection of `{short(where, 40)}`"
            lifetime = "the process, unless disconnected: Qt keeps it in C++, out of the collector's reach"
        elif how in ("constructed", "setter"):
            keeper = short(self.ctx.code(site.func.value) if how == "setter" else where, 40)
            holder = f"a reference cycle through `{keeper}`"
            lifetime = "as long as the cycle lives after release, until the collector runs" + (
                f" (never, if `{keeper}` is a C object)" if self._unseen_holder(cls, site, how) else "")
        elif how == "cached":
            holder = f"a reference cycle through the cache `{short(where, 40)}`"
            if arrays is not None:
                kept = f"{instance} and the arrays `{arrays.name.value}()` builds"
                lifetime += ", which the arrays' bytes do not trigger"
                growth = "one cached array per distinct argument"
            else:
                kept = f"{instance} and the cached results" + (
                    ", with the data its caller handed it" if collection else "")
        elif how == "callback":
            holder = f"a reference cycle through the callbacks `{short(self.ctx.code(site.func), 40)}` keeps"
        else:  # stored, added, passed: the attribute or container the callback is kept in
            holder = f"a reference cycle through `{short(where, 50)}`"
        return Consequence(kept, holder, lifetime, growth)
