"""RL502 hook-handles-never-removed."""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_statements
from retainlint.analysis.fix_preconditions import append_at_end
from retainlint.analysis.cstutil import (
    is_instance_method,
    is_self,
    prepend_to_function,
)
from retainlint.core.finding import Applicability, Severity
from retainlint.project.hook_names import AUTOGRAD_HOOKS, GLOBAL_HOOKS
from retainlint.analysis.hooks import (
    ClassHandles,
    HandleStore,
    hook_argument,
    hook_name,
    is_accumulate_grad,
    iter_nodes,
    mentions_self,
    names_in,
    receiver,
    self_attrs,
    short,
    target_names,
)
from retainlint.project.index import qualified_in
from retainlint.rules.prefilters.rl502 import HookHandlesNeverRemovedPrefilter
from retainlint.analysis.release import fix_release_method, is_release_method
from retainlint.analysis.rule import Example, RelatedNode, Rule


class HookHandlesNeverRemoved(Rule):
    prefilter = HookHandlesNeverRemovedPrefilter
    name = "hook-handles-never-removed"
    summary = "A class keeps hook handles but no release method removes the hooks"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE

    docs = """
## What it does
Reports a class that keeps the removal handles of hooks it registers on other objects -
`self._h = model.register_forward_hook(...)`, `self._handles.append(p.register_hook(...))`,
`self._handles[name] = [pre, post]`, a local list of handles stored on `self`, or the result
of its own method that returns a handle - when none of its release methods (`shutdown`,
`close`, ... `__exit__`, `__del__`, a `@contextmanager` method), nor any method they call,
removes them (`.remove()` on the handle, on a loop variable over the container, or a
helper named like `remove_hooks(self._handles)`). A release method releases the whole
object: not a per-item `free(self, slot)`, nor an abstract stub that only raises. A class
with no release method at all is reported only when no method removes them.

Also reports (a warning) a handle kept in a local of a function, or in a local list, and
removed there (`h = layer.register_forward_hook(fn)` ... `h.remove()`; `hs.append(...)` ...
`for h in hs: h.remove()`) when the hooked object is one the caller handed in (a
parameter, an attribute, item or `.modules()` of one, a loop variable over those), the
hook keeps something (a closure over locals, a bound method), and no removal of that
handle is in a `finally:` or an `except` block, nor is the handle used as a context
manager: an exception between the two (the forward pass raising) skips `h.remove()` and
leaves the hook, with everything its closure saved, on the caller's object - one more per
failed call.

Also reports a discarded handle of a hook on a gradient accumulator - the `AccumulateGrad`
node reached as `p.expand_as(p).grad_fn.next_functions[0][0]` (or through
`get_gradient_edge`) - which lives as long as the parameter.

Not reported: hooks a class registers on itself (that is a cycle: RL701), hooks on
per-step tensors computed in the method (forward outputs, losses), handles removed
through a method reachable from a release method, by a same-file subclass, by a
project base class, or by the installed hook itself when it is a module-level function
that reaches the instance through the class (`t = Tracer.get_instance()` ...
`for h in t.hooks: h.remove()`). Nor a helper with no release method that hooks only the
modules handed to its `__init__`, when every instance belongs to a module that hands it
its own submodules (`self.taps = Taps(names, self.named_modules())`): owner, helper and
hooked submodules share one lifetime.

Severity: an error for process-wide registries, and when the class has a release method
that leaves the hook in place while the hook pins the registering object (a bound method,
a closure or `partial` over `self`) and that object is heavy or the hook sits on an
autograd object (kept in C++); a warning otherwise - in particular for a class with no
release method at all, which may well live exactly as long as the object it hooks.

## Why it leaks
The hooked object (a model, a parameter) usually outlives the object that registered the
hook, and the hook - usually a bound method or closure - pins that object and everything
it references (an optimizer, cached activations). Keeping the handle shows the intent to
remove the hook; forgetting to do it on release means the memory stays.

## Example
```python
class ActivationRecorder:
    def __init__(self, model):
        self.records = []
        self._handles = []
        for layer in model.layers:
            self._handles.append(layer.register_forward_hook(self.record))  # RL502

    def record(self, module, args, output):
        self.records.append(output)

    def close(self):
        self.records.clear()
```

## Fix (unsafe, where a release method exists)
Appends the removal to the class's release method: `self._h.remove()` for one handle,
a loop calling `handle.remove()` for a list (`.values()` for a dict), guarded by
`getattr(self, ..., None)` when the attribute may be missing or `None`; when a method of
the class already removes them (`remove_hooks()`), a call to it instead. Unsafe: the
hooks no longer run on the hooked objects after the release (and a called method does
whatever else it does), as the help line says. No fix when the release method's normal
path never reaches its end.
"""

    valid = [
        # removed in the release method
        """
class Recorder:
    def __init__(self, model):
        self._handles = []
        for m in model.modules():
            self._handles.append(m.register_forward_hook(self.record))

    def record(self, *args):
        pass

    def close(self):
        for h in self._handles:
            h.remove()
""",
        # removed through a helper the release method calls
        """
class Recorder:
    def __init__(self, model):
        self._hook = model.register_forward_hook(self.record)

    def record(self, *args):
        pass

    def _detach(self):
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def __del__(self):
        self._detach()
""",
        # no release method: removal in any method counts
        """
class Probe:
    def attach(self, model):
        self.handles = [model.register_forward_hook(self.hook)]

    def hook(self, *args):
        pass

    def detach(self):
        for handle in self.handles:
            handle.remove()
""",
        # hooks on a per-step tensor die with the tensor
        """
class Trainer:
    def step(self, model, batch):
        loss = model(batch).sum()
        self._loss_hook = loss.register_hook(self.on_grad)

    def on_grad(self, g):
        pass

    def close(self):
        pass
""",
        # a hook on the module itself is not another object's hook
        """
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self._h = self.register_forward_hook(Block._check)

    @staticmethod
    def _check(*args):
        pass

    def close(self):
        pass
""",
    ]
    invalid = [
        Example(
            """
class ActivationRecorder:
    def __init__(self, model):
        self.records = []
        self._handles = []
        for layer in model.layers:
            self._handles.append(layer.register_forward_hook(self.record))

    def record(self, module, args, output):
        self.records.append(output)

    def close(self):
        self.records.clear()
""",
            lines=[7],
            fixed="""
class ActivationRecorder:
    def __init__(self, model):
        self.records = []
        self._handles = []
        for layer in model.layers:
            self._handles.append(layer.register_forward_hook(self.record))

    def record(self, module, args, output):
        self.records.append(output)

    def close(self):
        self.records.clear()
        for handle in self._handles:
            handle.remove()
""",
        ),
        # one handle, registered conditionally; a removal method nobody calls on release
        Example(
            """
class Tracer:
    def __init__(self, model, enabled):
        if enabled:
            self._hook = model.register_forward_pre_hook(self.trace)

    def trace(self, *args):
        pass

    def shutdown(self):
        return
""",
            lines=[5],
            fixed="""
class Tracer:
    def __init__(self, model, enabled):
        if enabled:
            self._hook = model.register_forward_pre_hook(self.trace)

    def trace(self, *args):
        pass

    def shutdown(self):
        if getattr(self, "_hook", None) is not None:
            self._hook.remove()
        return
""",
        ),
        Example(
            """
class Watcher:
    def __init__(self, model):
        self._hooks = {}
        for name, p in model.named_parameters():
            self._hooks[name] = p.register_post_accumulate_grad_hook(self.on_grad)

    def on_grad(self, p):
        pass

    def remove_hooks(self):
        for h in self._hooks.values():
            h.remove()

    def close(self):
        pass
""",
            lines=[6],
            fixed="""
class Watcher:
    def __init__(self, model):
        self._hooks = {}
        for name, p in model.named_parameters():
            self._hooks[name] = p.register_post_accumulate_grad_hook(self.on_grad)

    def on_grad(self, p):
        pass

    def remove_hooks(self):
        for h in self._hooks.values():
            h.remove()

    def close(self):
        self.remove_hooks()
""",
        ),
        # no release method and no removal anywhere: reported, no fix
        Example(
            """
class Probe:
    def __init__(self, model):
        self.handle = model.register_forward_hook(lambda m, a, out: print(out.shape))
""",
            lines=[4],
        ),
        # removed only when the forward pass returns normally
        Example(
            """
def layer_outputs(model, layer, x):
    saved = []
    handle = layer.register_forward_hook(lambda m, a, out: saved.append(out))
    model(x)
    handle.remove()
    return saved
""",
            lines=[4],
        ),
        # a discarded handle on a gradient accumulator
        Example(
            """
def install(params, hook):
    for p in params:
        acc = p.expand_as(p).grad_fn.next_functions[0][0]
        acc.register_hook(hook)
""",
            lines=[5],
        ),
    ]

    # -- classes ------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        handles = ClassHandles(self.ctx, node)
        stores = handles.stores()
        if not stores:
            return
        roots = [n for n in handles.release_methods() if is_release_method(self.ctx, handles.methods[n])]
        reach = (handles.reachable(roots + handles.context_managers()) if roots
                 else set(handles.methods))
        for attr, items in stores.items():
            items = [s for s in items if self._long_lived(s)]
            if not items:
                continue
            if handles.removed_in(attr, reach) or handles.self_removing(attr):
                continue
            if handles.removed_by_subclass(attr) or handles.removed_by_external_base(attr):
                continue
            if self._removed_by_hook_function(node, attr, items):
                continue
            if not roots and self._owned_by_hooked_model(node, items):
                continue
            self._report(node, handles, attr, items, roots)

    # -- removal by the hook itself, a module-level function ------------------------------
    def _removed_by_hook_function(self, cls: cst.ClassDef, attr: str, items: list[HandleStore]) -> bool:
        """Is the installed hook a module-level function of the file that removes the
        handles itself, reaching the instance through the class (`t = Tracer.get_instance()`
        ... `for h in t.<attr>: h.remove()`)?"""
        for store in items:
            hook = hook_argument(store.call)
            fn = self.ctx.functions.get(hook.value) if isinstance(hook, cst.Name) else None
            if fn is not None and _removes_instance_handles(fn, cls.name.value, attr):
                return True
        return False

    # -- a helper owned by the model it hooks ---------------------------------------------
    def _owned_by_hooked_model(self, cls: cst.ClassDef, items: list[HandleStore]) -> bool:
        """Does the class (with no release method) hook only modules handed to its
        `__init__`, and does every instance belong to a module that hands it its own
        submodules (`self.taps = Taps(..., self.named_modules())`)? Owner, helper and hooked
        submodules then share one lifetime: nothing outlives anything."""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return False
        params: set[str] = set()
        for store in items:
            if store.method.name.value != "__init__":
                return False
            recv = receiver(store.call)
            fed = _parameters_feeding(store.method, recv) if recv is not None else None
            if not fed:
                return False  # hooks something the constructor was not handed
            params |= fed
        init = items[0].method.params
        positional = [p.name.value for p in (*init.posonly_params, *init.params)][1:]
        key = (f"{self.ctx.module_name}.{cls.name.value}",
               tuple(sorted((name, positional.index(name) if name in positional else -1) for name in params)))
        return self.ctx.index.ask(owned_by_hooked_module, key)

    def _long_lived(self, store: HandleStore) -> bool:
        """Is the hooked object one that outlives this call (not `self`, not a tensor
        computed in the method)?"""
        recv = receiver(store.call)
        if recv is None:
            return True
        if is_self(recv):
            return False
        if is_accumulate_grad(recv):
            return True
        root = recv
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        if isinstance(root, cst.Name) and root.value != "self" and store.hook in AUTOGRAD_HOOKS | {"register_prehook"}:
            assigned = self.ctx.heavy.local_assignments(store.method).get(root.value, ())
            for value, _ in assigned:
                if value is None or is_accumulate_grad(value):
                    continue
                if not isinstance(value, (cst.Name, cst.Attribute)):
                    return False  # computed here: a per-step tensor
        return True

    def _pins_self(self, store: HandleStore) -> bool:
        hook = hook_argument(store.call)
        if hook is None:
            return False
        if mentions_self(hook):
            return True
        if isinstance(hook, cst.Name):
            for node in iter_nodes(store.method.body):
                if isinstance(node, cst.FunctionDef) and node.name.value == hook.value:
                    return mentions_self(node.body)
        return False

    def _is_heavy(self, cls: cst.ClassDef) -> bool:
        return self.ctx.heavy.is_heavy_class(cls) or self.ctx.index.is_heavy_class(
            f"{self.ctx.module_name}.{cls.name.value}")

    def _report(self, cls: cst.ClassDef, handles: ClassHandles, attr: str,
                items: list[HandleStore], roots: list[str]) -> None:
        first = items[0]
        recv = receiver(first.call)
        where = f" on `{short(self.ctx.code(recv))}`" if recv is not None and first.hook not in GLOBAL_HOOKS else ""
        plural = first.kind != "single" or len(items) > 1
        what = (f"handles of `{first.hook}` hooks{where}" if plural
                else f"handle of a `{first.hook}` hook{where}")
        them = "them" if plural else "it"
        name = cls.name.value
        removers = [m for m in handles.removed_in(attr, handles.own) if m not in roots]
        related = []
        if roots:
            listed = ", ".join(f"`{r}()`" for r in roots[:3])
            message = f"`self.{attr}` keeps the {what}, but no release method of `{name}` ({listed}) removes {them}"
            if removers:
                message += f" (`{removers[0]}()` does, and no release method calls it)"
                related.append(RelatedNode(f"`{removers[0]}()` removes the hooks", handles.own[removers[0]].name))
            release = handles.methods.get(roots[0])
            if release is not None:
                related.append(RelatedNode(f"`{roots[0]}()` does not remove {them}", release.name))
        else:
            message = f"`self.{attr}` keeps the {what}, and no method of `{name}` ever removes {them}"
        pins = self._pins_self(first)
        hook_code = short(self.ctx.code(hook_argument(first.call))) if hook_argument(first.call) is not None else "the hook"
        if first.hook in GLOBAL_HOOKS:
            message += f": the global hook registry keeps `{hook_code}` (and all it references) alive"
        elif pins:
            message += (f": the hooked object outlives `{name}`, and the hook `{hook_code}` keeps the "
                        f"`{name}` instance (and all it references) alive")
        else:
            message += f": the hook `{hook_code}` stays installed after `{name}` is done with it"
        c_plus = first.hook in AUTOGRAD_HOOKS or (recv is not None and is_accumulate_grad(recv))
        if first.hook in GLOBAL_HOOKS or (roots and pins and (c_plus or self._is_heavy(cls))):
            severity = Severity.ERROR
        else:
            severity = Severity.WARNING
        statement = self._statement_of(first)
        self.report(first.node, message, severity=severity, related=related,
                    fix=self._fix(cls, handles, attr, items, removers), statement=statement)

    def _statement_of(self, store: HandleStore) -> Optional[cst.CSTNode]:
        for node in iter_nodes(store.method.body):
            if isinstance(node, cst.SimpleStatementLine) and any(
                    any(n is store.node for n in iter_nodes(small)) for small in node.body):
                return node
        return None

    # -- the fix --------------------------------------------------------------------------
    def _fix(self, cls: cst.ClassDef, handles: ClassHandles, attr: str,
             items: list[HandleStore], removers: list[str]):
        # the class's own release method that releases the whole object (not a per-item
        # `free(self, block_id)`, not a hook callback named `stop`); `__del__` only when no
        # hook keeps the instance - while one does, `__del__` never runs
        pinned = any(self._pins_self(store) for store in items)
        release = fix_release_method(self.ctx, cls, finalizer=not pinned,
                                     skip=frozenset(handles.callbacks))
        if release is None:
            return None
        # a release method that drops the attribute (`self._h = None`) gets the removal
        # first; otherwise it goes last
        attrs, _ = self_attrs(release.body)
        add = prepend_to_function if attr in attrs else append_at_end
        where = release.name.value
        for name in removers:
            method = handles.own[name]
            params = method.params
            required = [p for p in (*params.posonly_params, *params.params)[1:] if p.default is None]
            if is_instance_method(self.ctx, method) and not required and not params.kwonly_params \
                    and method is not release:
                statement = cst.parse_statement(f"self.{name}()\n")
                edited = add(release, [statement])
                if edited is None:
                    return None  # the release's normal path never reaches its end
                # unsafe: whatever else `name()` does now happens too, and the hooks stop
                return self.fix(f"Call `self.{name}()` in `{where}()`: `self.{name}()` now runs in "
                                f"`{where}()`, and the hooks no longer run after it", {release: edited},
                                applicability=Applicability.UNSAFE)
        kinds = {s.kind for s in items}
        kind = next(k for k in ("nested", "mapping", "collection", "single") if k in kinds or k == "single")
        guarded = not self._initialized(cls, handles, attr, kind)
        get = f'getattr(self, "{attr}", None)'
        if kind == "single":
            code = (f"if {get} is not None:\n    self.{attr}.remove()\n" if guarded
                    else f"self.{attr}.remove()\n")
        elif kind == "collection":
            source = f"{get} or ()" if guarded else f"self.{attr}"
            code = f"for handle in {source}:\n    handle.remove()\n"
        elif kind == "mapping":
            source = f"({get} or {{}}).values()" if guarded else f"self.{attr}.values()"
            code = f"for handle in {source}:\n    handle.remove()\n"
        else:
            source = f"({get} or {{}}).values()" if guarded else f"self.{attr}.values()"
            code = f"for handles in {source}:\n    for handle in handles:\n        handle.remove()\n"
        statement = cst.parse_statement(code)
        edited = add(release, [statement])
        if edited is None:
            return None  # the release's normal path never reaches its end
        plural = "" if kind == "single" else "s"
        # unsafe: what the hook did on the hooked object stops after the release
        return self.fix(f"Remove the hook{plural} in `{where}()`: the hook{plural} in `self.{attr}` "
                        f"no longer run{'s' if kind == 'single' else ''} after `{where}()`", {release: edited},
                        applicability=Applicability.UNSAFE)

    def _initialized(self, cls: cst.ClassDef, handles: ClassHandles, attr: str, kind: str) -> bool:
        """Is `self.<attr>` assigned directly in `__init__`'s body (not under a branch),
        to a handle (one handle) or to anything (a container), and never to `None`?"""
        init = self.ctx.methods(cls).get("__init__")
        if init is None:
            return False
        for name, facts in handles.facts.items():
            for value, _ in facts.assigns.get(attr, ()):
                if isinstance(value, cst.Name) and value.value == "None":
                    return False
        direct = set()
        for line in body_statements(init):
            if isinstance(line, cst.SimpleStatementLine):
                direct.update(id(s) for s in line.body)
        facts = handles.facts.get("__init__")
        if facts is None:
            return False
        for _, node in facts.assigns.get(attr, ()):
            if id(node) not in direct:
                continue
            if kind != "single" or any(s.node is node for s in facts.stores):
                return True
        return False

    # -- handles removed only on the normal path ----------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """`h = layer.register_forward_hook(fn)` on an object the caller handed in, and
        `h.remove()` later, but in no `finally:` / `except` block of the function."""
        params = {p.name.value for p in (*node.params.posonly_params, *node.params.params,
                                         *node.params.kwonly_params)} - {"self", "cls"}
        own = list(_own_nodes(node.body))
        params |= {name for n in own if isinstance(n, cst.For) and _rooted_in(n.iter, params)
                   for name in target_names(n.target)}  # `for layer in layers:`
        handles: dict[str, list[cst.Call]] = {}  # a local handle, or a local list of them
        for n in own:
            if isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name):
                holder, call = n.targets[0].target.value, n.value
            elif (
                isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "append"
                and isinstance(n.func.value, cst.Name) and len(n.args) == 1
            ):
                holder, call = n.func.value.value, n.args[0].value
            else:
                continue
            if (
                isinstance(call, cst.Call) and hook_name(call) is not None
                and _rooted_in(receiver(call), params) and self._pinning_hook(call, node)
            ):
                handles.setdefault(holder, []).append(call)
        if not handles:
            return
        removed = _removed_names(own)
        guarded = {name for t in own if isinstance(t, (cst.Try, cst.TryStar))
                   for block in (t.finalbody, *t.handlers) if block is not None
                   for name in _removed_names(_own_nodes(block.body))}
        guarded |= {n.value for w in own if isinstance(w, cst.With) for item in w.items
                    for n in iter_nodes(item.item) if isinstance(n, cst.Name)}
        for name in sorted((removed & set(handles)) - guarded):
            for call in handles[name]:
                self.report(
                    call,
                    f"`{name}` (holding the handle of `{hook_name(call)}` on "
                    f"`{short(self.ctx.code(receiver(call)))}`, an object the caller keeps) is removed "
                    f"only when the code after it returns normally: an exception there skips "
                    f"the removal and leaves the hook, with all its closure saved, on that object - "
                    f"one more per failed call. Remove it in a `finally:` block",
                    severity=Severity.WARNING,
                )

    def _pinning_hook(self, call: cst.Call, fn: cst.FunctionDef) -> bool:
        hook = hook_argument(call)
        return hook is not None and self._hook_pins(hook, fn)

    # -- discarded handles on gradient accumulators --------------------------------------
    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            return
        if call.func.attr.value not in ("register_hook", "register_prehook"):
            return
        recv = call.func.value
        fn = self.ctx.scope.function
        accumulator = recv if is_accumulate_grad(recv) else None
        if accumulator is None and isinstance(recv, cst.Name) and fn is not None:
            accumulator = next((value for value, _ in self.ctx.heavy.local_assignments(fn).get(recv.value, ())
                                if value is not None and is_accumulate_grad(value)), None)
        if accumulator is None or (fn is not None and self._per_step_leaf(accumulator, fn)):
            return
        hook = hook_argument(call)
        if hook is None or not self._hook_pins(hook, fn):
            return
        self.report(
            call,
            f"handle of a hook on a gradient accumulator (`{short(self.ctx.code(recv))}`) is discarded: "
            f"the node lives as long as its parameter, so `{short(self.ctx.code(hook))}` (and all it "
            "references) stays alive and can never be removed",
            severity=Severity.ERROR,
        )

    def _per_step_leaf(self, accumulator: cst.CSTNode, fn: cst.FunctionDef) -> bool:
        """Is the tensor whose accumulator this is created in the function itself
        (`t = torch.rand(..., requires_grad=True); a = t + t; a.grad_fn.next_functions...`)?"""
        root = accumulator
        while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
            root = root.func if isinstance(root, cst.Call) else root.value
        if not isinstance(root, cst.Name) or root.value == "self":
            return False
        assigned = self.ctx.heavy.local_assignments(fn).get(root.value, ())
        return any(value is not None and not isinstance(value, (cst.Name, cst.Attribute, cst.Subscript))
                   for value, _ in assigned)

    def _hook_pins(self, hook: cst.BaseExpression, fn: Optional[cst.FunctionDef]) -> bool:
        """Does the hook keep anything alive: a bound method, or a lambda / nested function /
        partial that captures `self` or a local of the enclosing function? A module-level
        function pins nothing."""
        enclosing: set[str] = set()
        if fn is not None:
            params = fn.params
            enclosing = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
            enclosing |= set(self.ctx.heavy.local_assignments(fn))
        if isinstance(hook, cst.Attribute):
            root = hook
            while isinstance(root, cst.Attribute):
                root = root.value
            return isinstance(root, cst.Name) and (root.value == "self" or root.value in enclosing)
        if isinstance(hook, cst.Lambda):
            return bool(names_in(hook.body) & (enclosing | {"self"}))
        if isinstance(hook, cst.Name):
            if fn is not None:
                for node in iter_nodes(fn.body):
                    if isinstance(node, cst.FunctionDef) and node.name.value == hook.value:
                        return bool(names_in(node.body) & (enclosing | {"self"}))
            return hook.value in enclosing  # a local holding a callable
        if isinstance(hook, cst.Call):
            return any(self._hook_pins(a.value, fn) or (isinstance(a.value, cst.Name) and a.value.value in enclosing)
                       for a in hook.args)
        return False


# -- helpers: handles in a function's own code -------------------------------------------


def _own_nodes(node: cst.CSTNode):
    """The nodes under `node`, not those of nested functions, lambdas or classes (they
    run at another time)."""
    for child in node.children:
        yield child
        if not isinstance(child, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            yield from _own_nodes(child)


def _removed_names(nodes) -> set[str]:
    """Locals `x` with an `x.remove()` among `nodes`, and lists `xs` of them
    (`for h in xs: h.remove()`)."""
    nodes = list(nodes)
    removed = {n.func.value.value for n in nodes
               if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "remove"
               and not n.args and isinstance(n.func.value, cst.Name)}
    return removed | {n.iter.value for n in nodes if isinstance(n, cst.For) and isinstance(n.iter, cst.Name)
                      and target_names(n.target) & removed}


def _rooted_in(expr: Optional[cst.BaseExpression], params: set[str]) -> bool:
    """`layer`, `model.encoder`, `model.blocks[3]`, `model.modules()` for a parameter
    `layer` / `model`."""
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(expr, cst.Call):
            if not isinstance(expr.func, cst.Attribute):
                return False
            expr = expr.func
        expr = expr.value
    return isinstance(expr, cst.Name) and expr.value in params


# -- helpers: removal through the instance, ownership by the hooked module ---------------


def _removes_instance_handles(fn: cst.FunctionDef, class_name: str, attr: str) -> bool:
    """Does `fn` call `.remove()` on the handles in `<x>.<attr>` (directly, or on the loop
    variable over them), where `x` is a local obtained through the class (`Cls(...)`,
    `Cls.get_instance()`, `Cls._instance`)?"""
    instances = {name for name, values in _bindings(fn).items()
                 if any(class_name in names_in(v) for v in values)}
    if not instances:
        return False

    def of_instance(expr: cst.CSTNode) -> bool:
        return any(isinstance(n, cst.Attribute) and n.attr.value == attr and isinstance(n.value, cst.Name)
                   and n.value.value in instances for n in iter_nodes(expr))

    loop_vars = {name for node in iter_nodes(fn.body) if isinstance(node, cst.For) and of_instance(node.iter)
                 for name in target_names(node.target)}
    for node in iter_nodes(fn.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value == "remove" and not node.args:
            handle = node.func.value
            if (isinstance(handle, cst.Name) and handle.value in loop_vars) or of_instance(handle):
                return True
    return False


def _bindings(fn: cst.FunctionDef) -> dict[str, list[cst.CSTNode]]:
    """Local name -> the expressions it is bound to in `fn` (assignments, loop and
    comprehension targets: the iterable), nested functions included."""
    found: dict[str, list[cst.CSTNode]] = {}
    for node in iter_nodes(fn.body):
        pairs = []
        if isinstance(node, cst.Assign):
            pairs = [(t.target, node.value) for t in node.targets]
        elif isinstance(node, (cst.AnnAssign, cst.NamedExpr)) and node.value is not None:
            pairs = [(node.target, node.value)]
        elif isinstance(node, (cst.For, cst.CompFor)):
            pairs = [(node.target, node.iter)]
        for target, value in pairs:
            for name in target_names(target):
                found.setdefault(name, []).append(value)
    return found


def _parameters_feeding(method: cst.FunctionDef, expr: cst.BaseExpression) -> Optional[set[str]]:
    """The parameters of `method` an object is taken from (through locals; the keys it is
    looked up with aside), or None when it also reads something else (`self`, a global)."""
    params = method.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    names.discard("self")
    bindings = _bindings(method)
    seen: set[str] = set()

    def feeding(node: cst.CSTNode, depth: int) -> Optional[set[str]]:
        if depth > 6:
            return None
        while isinstance(node, cst.Subscript):  # `modules[name]`: the object, not the key
            node = node.value
        used = names_in(node)
        if "self" in used:
            return None
        found: set[str] = set()
        for name in used:
            if name in names:
                found.add(name)
            elif name in bindings and name not in seen:
                seen.add(name)
                for value in bindings[name]:
                    sub = feeding(value, depth + 1)
                    if sub is None:
                        return None
                    found |= sub
            elif name not in bindings and name not in _BUILTIN_CALLS:
                return None  # a global: not handed in
        return found

    return feeding(expr, 0)


# builtins that only repackage what they are handed (`dict(named_modules)`)
_BUILTIN_CALLS = frozenset({"dict", "list", "tuple", "iter", "enumerate", "zip", "sorted", "reversed",
                            "getattr", "isinstance", "str", "int", "len", "range"})


def owned_by_hooked_module(index, key: tuple[str, tuple[tuple[str, int], ...]]) -> bool:
    """Is every project instantiation of class `qualified` (key[0]) stored on `self` by a
    method of a heavy class (a module) that hands it, for each parameter in key[1] (name,
    position after `self`; -1: keyword only), something of its own (`self.named_modules()`,
    `self.blocks`, `self`)? A `ProjectIndex.ask` question, read with `ast`."""
    qualified, params = key
    name = qualified.rpartition(".")[2]
    makers = [f for f in index.functions.values()
              if any(c.rpartition(".")[2] == name and (index.resolve(c) or c) == qualified for c in f.calls)]
    if not makers:
        return False
    for maker in makers:
        owner = maker.qualname.rpartition(".")[0]
        if not maker.is_method or not index.is_heavy_class(owner):
            return False
        summary = index.files.get(maker.path)
        source = index.source(maker.path)
        fn = next((n for n in ast.walk(source[0]) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and n.lineno == maker.line), None) if source is not None else None
        if fn is None or not _hands_own_modules(index, summary, fn, qualified, params):
            return False
    return True


def _hands_own_modules(index, summary, fn: ast.AST, qualified: str, params) -> bool:
    """In `fn`, is every call of `qualified` stored on `self` and handed the owner's own
    modules for `params`?"""
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)
             and (index.resolve(qualified_in(summary, n.func)) or qualified_in(summary, n.func)) == qualified]
    stored = {id(n.value) for n in ast.walk(fn) if isinstance(n, ast.Assign)
              and all(_on_self(t) for t in n.targets)}
    for call in calls:
        if id(call) not in stored:
            return False
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        for name, position in params:
            arg = keywords.get(name)
            if arg is None and 0 <= position < len(call.args):
                arg = call.args[position]
            if arg is None or not _rooted_at_self(arg):
                return False
    return True


def _on_self(target: ast.AST) -> bool:
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"


def _rooted_at_self(expr: ast.AST) -> bool:
    """`self`, `self.blocks`, `self.named_modules()`, `self.layers[0]`."""
    while isinstance(expr, (ast.Attribute, ast.Call, ast.Subscript)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return isinstance(expr, ast.Name) and expr.id == "self"
