"""RL502 hook-handles-never-removed.

The rule's class (detection, reports and fix); its documentation and examples are in
`examples.py`, the reading of handles kept in a function's locals in `local_handles.py`,
handles removed through the instance or owned by the hooked model in `ownership.py`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_statements
from retainlint.analysis.fix_preconditions import append_at_end
from retainlint.analysis.cstutil import (
    is_instance_method,
    is_self,
    prepend_to_function,
)
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.hook_names import AUTOGRAD_HOOKS, GLOBAL_HOOKS, hooks_of
from retainlint.analysis.hooks import (
    ClassHandles, hook_argument, is_accumulate_grad, mentions_self, receiver, short,
)
from retainlint.analysis.handle_facts import HandleStore
from retainlint.analysis.hook_exprs import hook_name, iter_nodes, names_in, self_attrs, target_names
from retainlint.rules.prefilters.rl502 import HookHandlesNeverRemovedPrefilter
from retainlint.analysis.release import fix_release_method, is_release_method
from retainlint.analysis.statement_order import ordered
from retainlint.analysis.rule import RelatedNode, Rule
from retainlint.rules.rl502_hook_handles_never_removed.examples import DOCS, INVALID, VALID
from retainlint.rules.rl502_hook_handles_never_removed.local_handles import _removed_names, _rooted_in
from retainlint.rules.rl502_hook_handles_never_removed.ownership import (
    _parameters_feeding,
    _removes_instance_handles,
    owned_by_hooked_module,
)


class HookHandlesNeverRemoved(Rule):
    prefilter = HookHandlesNeverRemovedPrefilter
    name = "hook-handles-never-removed"
    summary = "A class keeps hook handles but no release method removes the hooks"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE

    docs = DOCS
    valid = VALID
    invalid = INVALID

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
                    fix=self._fix(cls, handles, attr, items, removers), statement=statement,
                    consequence=self._kept_handles(cls, first, hook_code, pins, roots))

    def _kept_handles(self, cls: cst.ClassDef, first: HandleStore, hook_code: str, pins: bool,
                      roots: list[str]) -> Consequence:
        """What a hook whose handle is never removed keeps, by what, for how long."""
        name = cls.name.value
        kept = (f"the `{name}` instance{' (heavy)' if self._is_heavy(cls) else ''} and what it holds, "
                f"through the hook `{short(hook_code, 40)}`" if pins
                else f"the hook `{short(hook_code, 50)}` and what it references")
        after = f", `{roots[0]}()` or not" if roots else ""
        if first.hook in GLOBAL_HOOKS:
            return Consequence(kept, f"torch's global registry of `{first.hook}` hooks", "the process" + after)
        recv = receiver(first.call)
        hooked = short(self.ctx.code(recv)) if recv is not None else None
        if hooked is None:
            return Consequence(kept, "the hooked object's hooks", "as long as the hooked object lives" + after)
        return Consequence(kept, hooks_of(hooked, first.hook), f"as long as `{hooked}` lives" + after)

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
        own = list(ordered(node.body))
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
                   for name in _removed_names(ordered(block.body))}
        guarded |= {n.value for w in own if isinstance(w, cst.With) for item in w.items
                    for n in iter_nodes(item.item) if isinstance(n, cst.Name)}
        for name in sorted((removed & set(handles)) - guarded):
            for call in handles[name]:
                recv = receiver(call)
                hooked = short(self.ctx.code(recv)) if recv is not None else "the hooked object"
                hook = hook_argument(call)
                self.report(
                    call,
                    f"`{name}` (holding the handle of `{hook_name(call)}` on "
                    f"`{short(self.ctx.code(receiver(call)))}`, an object the caller keeps) is removed "
                    f"only when the code after it returns normally: an exception there skips "
                    f"the removal and leaves the hook, with all its closure saved, on that object - "
                    f"one more per failed call. Remove it in a `finally:` block",
                    severity=Severity.WARNING,
                    consequence=Consequence(
                        f"the hook `{short(self.ctx.code(hook), 50) if hook is not None else '?'}` "
                        "and what its closure holds",
                        hooks_of(hooked, hook_name(call) or ""), f"as long as the caller keeps `{hooked}`",
                        f"one hook per call of `{node.name.value}()` that fails before the removal"),
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
            consequence=Consequence(f"`{short(self.ctx.code(hook), 50)}` and what it references",
                                    f"the hooks of the gradient accumulator `{short(self.ctx.code(recv), 40)}`",
                                    "as long as its parameter"),
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


