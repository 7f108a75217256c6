"""RL501 discarded-hook-handle."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import (
    decorator_names,
    in_body_of,
    is_instance_method,
    is_self,
    unique_self_attribute,
)
from retainlint.analysis.fix_preconditions import append_at_end
from retainlint.analysis.heavy import find_param
from retainlint.analysis.once import guarding_flag
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.hook_names import GLOBAL_HOOKS, PER_OBJECT_HOOKS, hooks_of
from retainlint.project.names import TENSOR_FACTORIES
from retainlint.project.retention_shapes import ADD_CALLS, diagnostic_name
from retainlint.analysis.handle_holders import nested_function
from retainlint.analysis.hooks import (
    external_attributes, external_bases, hook_argument, hook_holds_self, local_bases,
    local_subclasses, reaches_passed_in, removes_hooks_by_identity, short,
)
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.rules.prefilters.rl501 import DiscardedHookHandlePrefilter
from retainlint.analysis.release import fix_release_method
from retainlint.analysis.severity import Facts, level
from retainlint.analysis.rule import Example, Rule


class DiscardedHookHandle(Rule):
    prefilter = DiscardedHookHandlePrefilter
    name = "discarded-hook-handle"
    summary = "The removal handle of a registered hook is thrown away, so the hook can never be removed"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE

    docs = """
## What it does
Reports a call that registers a hook and throws away the handle it returns
(the call is a statement on its own), for:

- **global registries** (always): `torch._dynamo.convert_frame.register_bytecode_hook` and
  `torch.nn.modules.module.register_module_forward_hook` / `_forward_pre_hook` /
  `_full_backward_hook` / `_full_backward_pre_hook` / `_buffer_registration_hook` /
  `_module_registration_hook` / `_parameter_registration_hook`, however they are imported:
  an error when registered in a loop or in `__init__` (the registry grows with every pass
  or instance), a warning
  otherwise (once per model, say: what it keeps is as long-lived as the process may keep it);
- **hooks on an object the instance was handed** (always; warnings, or info when the
  instance holds no tensors and the hook stores nothing on it - a profiler's names kept
  for as long as the model lives cost nothing - or when a debugging or profiling aid
  registers it: a class, method or module named so, `DebugUnderflowOverflow`,
  `profile_model_time()`, `debug_utils`, costs only those who turn it on): a per-object hook
  (the list below) registered by a method on an argument, on an attribute `__init__` set
  from one (`self._encoder = encoder`), or on a submodule or parameter of those
  (`self._encoder.get_submodule(name)`, `for p in model.parameters()`), when the hook keeps
  the instance or something kept on it (a bound method, `self._recorder`, a lambda or
  nested function using `self`, what a method of `self` makes). Not when the class takes
  its hooks out of the module's hook dict itself (`del layer._forward_hooks[key]`) - in
  `__del__` only when the hook is a helper object, since `__del__` never runs while the
  hook holds the instance;
- **per-object hooks** (opt-in with `per-object-hooks = true`, reported as warnings):
  `register_forward_hook`, `register_forward_pre_hook`, `register_full_backward_hook`,
  `register_full_backward_pre_hook`, `register_backward_hook`,
  `register_state_dict_pre_hook`, `register_load_state_dict_post_hook`,
  `Tensor.register_hook`, `register_post_accumulate_grad_hook`, optimizer
  `register_step_pre_hook` / `register_step_post_hook`. A `register_hook` on a tensor
  computed in the same function (a per-step output) is not reported: the hook dies
  with the tensor.

## Why it leaks
A global registry is a GC root. The hook is usually a bound method or a closure, so it
pins its object - typically a compiled model wrapper, and through it the whole model -
and with the handle discarded nothing can ever remove it. A per-object hook lives inside
the object it hooks: on the instance's own submodules it only forms a collectable cycle
(hence opt-in), but on a model the caller handed in and keeps, it pins the instance for
as long as the model lives, and each new instance (a feature extractor made per call)
adds another hook that runs - and stores activations - on every forward.

## Incident
A compile wrapper's `__init__` registered `self.bytecode_hook` with dynamo's
`register_bytecode_hook` and dropped the handle: every engine created in the process kept
its model. The fix stored `self._bytecode_hook_handle`, added `cleanup()` calling
`.remove()`, and called it from the engine's finalizer.

## Example
```python
class CompiledWrapper:
    def __init__(self, model):
        self.model = model
        torch._dynamo.convert_frame.register_bytecode_hook(self.bytecode_hook)  # RL501

    def close(self):
        self.model = None


class FeatureExtractor:  # made per call, on the user's long-lived encoder
    def __init__(self, encoder, layers):
        self._encoder = encoder
        self.outputs = []
        for name in layers:
            encoder.get_submodule(name).register_forward_hook(self.save)  # RL501 (warning)
```

## Fix (unsafe, inside methods of a class with a release method)
The handle is kept as `self._<hook>_handle` (a name not used yet in the class, its bases
or its subclasses) and, in the method that releases the whole object (`shutdown`,
`close`, ... callable with `self` alone, or `__exit__`), `self._<hook>_handle.remove()`
is appended to it. Unsafe: the hook no longer runs after the release, as the help line
says. A class with no such method gets no fix (a handle kept but never removed frees
nothing, and RL502 would report it); nor does a release method whose end is not reached.
The removal is appended (guarded by `getattr(self, ..., None)` when the registration is
conditional or outside `__init__`; never to `__del__` when the hook holds the instance,
as `__del__` cannot run then) - never to a per-item method such as
`free(self, block_id)`, nor to a class or static method. Outside methods, in a loop (one
attribute would keep only the last handle), for a hook on an object handed in outside
`__init__` (such a method often runs once per module), and on classes that cannot take a new
attribute (`__slots__`, slotted or frozen dataclasses), there is no fix.
"""

    valid = [
        # the handle is kept
        """
import torch
class W:
    def __init__(self):
        self._h = torch._dynamo.convert_frame.register_bytecode_hook(self.hook)
""",
        # per-object hooks on the instance's own modules, or keeping nothing of it, are opt-in
        """
import torch

def print_shape(module, args, output):
    print(output.shape)

class Probe(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.proj.register_forward_hook(self.record)
        model.register_forward_hook(print_shape)
""",
        # a module function of the same name that is not torch's
        """
def register_bytecode_hook(fn):
    pass
register_bytecode_hook(print)
""",
    ]
    invalid = [
        Example(
            """
import torch

class CompiledWrapper:
    def __init__(self, model):
        self.model = model
        torch._dynamo.convert_frame.register_bytecode_hook(self.bytecode_hook)  # keep

    def close(self):
        self.model = None
""",
            lines=[7],
            fixed="""
import torch

class CompiledWrapper:
    def __init__(self, model):
        self.model = model
        self._bytecode_hook_handle = torch._dynamo.convert_frame.register_bytecode_hook(self.bytecode_hook)  # keep

    def close(self):
        self.model = None
        self._bytecode_hook_handle.remove()
""",
        ),
        Example(
            """
from torch.nn.modules.module import register_module_forward_hook as add_global_hook

class Tracer:
    def __init__(self, enabled):
        if enabled:
            add_global_hook(self.on_forward)

    def shutdown(self):
        \"\"\"Stop tracing.\"\"\"
        return
""",
            lines=[7],
            fixed="""
from torch.nn.modules.module import register_module_forward_hook as add_global_hook

class Tracer:
    def __init__(self, enabled):
        if enabled:
            self._module_forward_hook_handle = add_global_hook(self.on_forward)

    def shutdown(self):
        \"\"\"Stop tracing.\"\"\"
        if getattr(self, "_module_forward_hook_handle", None) is not None:
            self._module_forward_hook_handle.remove()
        return
""",
        ),
        # module level: reported, no fix
        Example(
            """
import torch.nn.modules.module as mm
mm.register_module_forward_pre_hook(lambda m, a: None)
""",
            lines=[3],
        ),
        # a hook keeping the instance, on layers of a model it was handed: on by default,
        # no fix in a loop (one attribute would keep only the last handle)
        Example(
            """
class FeatureExtractor:
    def __init__(self, encoder, layers):
        self._encoder = encoder
        self.outputs = []
        for name in layers:
            layer = self._encoder.get_submodule(name)
            layer.register_forward_hook(self.save)

    def save(self, module, args, output):
        self.outputs.append(output)
""",
            lines=[8],
        ),
        # per-object hooks when opted in; a per-step tensor is fine
        Example(
            """
class Probe:
    def __init__(self, model):
        model.register_forward_hook(self.record)

    def step(self, x):
        y = x * 2
        y.register_hook(print)
""",
            lines=[4],
            # no release method would remove a kept handle: no fix
            settings={"per_object_hooks": True},
        ),
    ]

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if not isinstance(call, cst.Call):
            return
        installed = self.ctx.code(call.args[0].value) if call.args else "?"
        hook = self._global_hook(call)
        if hook is not None:
            message = (f"handle returned by `{hook}` is discarded: the global hook registry keeps the "
                       f"hook `{installed}` (and all it references) alive, and nothing can remove it")
            # what the registry keeps grows only if this runs again and again (in a loop, or
            # once per instance made): a hook installed once per model costs nothing more
            fn = self.ctx.scope.function
            cls = self.ctx.scope.method_class
            in_loop = self._registered_in_loop(call)
            per_instance = fn is not None and fn.name.value == "__init__" and cls is not None
            per_call = in_loop or per_instance
            per = "one hook per pass of the loop" if in_loop else ""
            if per_instance and cls is not None:
                per = f"{per}, per `{cls.name.value}` made" if per else f"one hook per `{cls.name.value}` made"
            self.report(call, message, fix=self._fix(node, hook),
                        severity=level(Facts(grows=True, meant_to_go=True) if per_call else Facts()),
                        consequence=Consequence(self._kept_by_hook(call, installed),
                                                f"torch's global registry of `{hook}` hooks", "the process",
                                                per))
            return
        hook = self._hook_on_passed_in(call)
        if hook is not None:
            cls = self.ctx.scope.method_class
            owner = short(self.ctx.code(call.func.value))
            marker = self._marked_once(call)
            message = (f"handle returned by `{hook}` is discarded: `{owner}` is (or belongs to) an object "
                       f"the `{cls.name.value if cls else '?'}` instance was handed, which outlives it; the hook "
                       f"`{short(installed)}` keeps the instance (or what it holds) alive as long as that "
                       + ("object lives, every new instance adds another hook, and nothing can remove them"
                          if marker is None else
                          f"object lives: the marker `{marker}` lets only the first instance register one, "
                          "and nothing can remove it"))
            # a warning: how long the object lives after the instance is the caller's choice.
            # A fix only in `__init__`: another method taking the object is often called once
            # per object (`model.apply(self._hook_one)`), and one attribute keeps the last handle.
            fn = self.ctx.scope.function
            if cls is None or fn is None:
                return  # `_hook_on_passed_in` found a method of a class: never the case
            fix = self._fix(node, hook) if fn.name.value == "__init__" else None
            facts = self._kept_facts(cls, fn, call)
            name = cls.name.value
            # a debugging or profiling aid (`DebugUnderflowOverflow`, `profile_model_time()`,
            # a `debug_utils` module) costs only those who turn it on
            aid = diagnostic_name(name, fn.name.value, self.ctx.module_name)
            if aid:
                message += f" (`{aid}` is a debugging or profiling aid: only those who use it pay)"
            per = "one hook per pass of the loop, per" if self._registered_in_loop(call) else "one hook per"
            added = "" if marker is not None else f"{per} `{name}` made" if fn.name.value == "__init__" \
                else f"{per} `{fn.name.value}()` call"
            self.report(call, message, severity=Severity.INFO if aid else level(facts), fix=fix, consequence=Consequence(
                f"the `{name}` instance{' (heavy)' if facts.heavy else ''} and what it holds, "
                f"through the hook `{short(installed, 40)}`",
                hooks_of(owner, hook), f"as long as `{owner}` lives",
                "; ".join(part for part in (added, "each run of the hook adds to the instance's containers"
                                            if facts.grows else "") if part)))
            return
        hook = self._per_object_hook(call)
        if hook is not None:
            hooked = short(self.ctx.code(call.func.value)) if isinstance(call.func, cst.Attribute) else "?"
            self.report(
                call,
                f"handle returned by `{hook}` is discarded: the hooked object keeps the hook "
                f"`{installed}` (and all it references) alive, and nothing can remove it",
                severity=Severity.WARNING,
                fix=self._fix(node, hook),
                consequence=Consequence(self._kept_by_hook(call, installed), hooks_of(hooked, hook),
                                        f"as long as `{hooked}` lives"),
            )

    def _kept_by_hook(self, call: cst.Call, installed: str) -> str:
        """What the installed hook keeps: the instance, when a method registers a hook that
        holds it (a bound method, a closure over `self`), else what the hook references."""
        cls, fn, hook = self.ctx.scope.method_class, self.ctx.scope.function, hook_argument(call)
        if cls is not None and fn is not None and hook is not None and is_instance_method(self.ctx, fn) \
                and hook_holds_self(fn, hook):
            return f"the `{cls.name.value}` instance and what it holds, through the hook `{short(installed, 40)}`"
        return f"the hook `{short(installed, 50)}` and what it references"

    def _marked_once(self, call: cst.Call) -> Optional[str]:
        """`if not getattr(p, "_hooked", False): p.register_hook(h); p._hooked = True`: a
        marker that the guarded branch sets on the hooked object lets one registration through
        per object, however often the code runs. The marker as the code spells it, or None."""
        if not isinstance(call.func, cst.Attribute):
            return None
        flag = guarding_flag(self.ctx, call, inside=self.ctx.scope.function)
        return flag if flag is not None and flag.startswith(self.ctx.code(call.func.value) + ".") else None

    def _registered_in_loop(self, call: cst.Call) -> bool:
        """Is `call` inside a `for`/`while` loop of its function (one hook per iteration)?"""
        fn = self.ctx.scope.function
        if fn is None:
            return False
        return any(isinstance(n, (cst.For, cst.While)) and any(m is call for m in iter_nodes(n))
                   for n in iter_nodes(fn.body))

    def _global_hook(self, call: cst.Call):
        qualified = self.ctx.qualname(call.func)
        if not qualified or not qualified.startswith("torch."):
            return None
        last = qualified.rsplit(".", 1)[-1]
        return last if last in GLOBAL_HOOKS else None

    def _hook_on_passed_in(self, call: cst.Call):
        """A per-object hook that keeps the instance, registered by one of its methods on an
        object it was handed (an argument, or an attribute `__init__` set from one): the
        owner of that object outlives the instance, so the hook pins it (on by default).
        Not when the class takes its hooks out of the hook dict itself."""
        if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in PER_OBJECT_HOOKS:
            return None
        cls = self.ctx.scope.method_class
        fn = self.ctx.scope.function
        hook = hook_argument(call)
        if cls is None or fn is None or hook is None or not is_instance_method(self.ctx, fn):
            return None
        if not hook_holds_self(fn, hook) or not reaches_passed_in(self.ctx, cls, fn, call.func.value):
            return None
        if call.func.attr.value in _TENSOR_HOOKS and isinstance(call.func.value, cst.Name) \
                and find_param(fn, call.func.value.value) is not None:
            return None  # a tensor handed in as such is a per-step value: the hook dies with it
        removers = removes_hooks_by_identity(self.ctx, cls)
        # `__del__` cannot run while the hook holds the instance itself (a bound method,
        # a closure): only a hook object kept on `self` leaves it free to run
        own_methods = self.ctx.methods(cls)
        helper = isinstance(hook, cst.Attribute) and is_self(hook.value) and hook.attr.value not in own_methods
        if removers - {"__del__"} or (removers and helper):
            return None
        return call.func.attr.value

    def _kept_facts(self, cls: cst.ClassDef, fn: cst.FunctionDef, call: cst.Call) -> Facts:
        """What the hook keeps is the instance: negligible when the instance holds nothing
        heavy and the hook adds nothing to it (a profiler's names), a cost when it holds
        tensors or the hook fills one of its containers on every call (statistics). How long
        the hooked object lives is the caller's choice: never more than a warning."""
        bodies = _hook_bodies(self.ctx, cls, fn, hook_argument(call))
        run = [] if bodies is None else _with_own_callees(self.ctx, cls, bodies)
        grows = None if bodies is None else any(_fills_own_container(b) for b in run)
        # what the hook stores on the instance (`self.last = output`) is an activation or
        # a gradient, kept as long as the instance: heavy
        heavy = self.ctx.heavy.is_heavy_class(cls) or _makes_tensors(self.ctx, cls) or any(
            _stores_on_self(b) for b in run)
        return Facts(heavy=heavy, grows=grows)

    def _per_object_hook(self, call: cst.Call):
        if not self.ctx.settings.per_object_hooks or not isinstance(call.func, cst.Attribute):
            return None
        hook = call.func.attr.value
        if hook not in PER_OBJECT_HOOKS:
            return None
        receiver = call.func.value
        fn = self.ctx.scope.function
        if hook == "register_hook" and isinstance(receiver, cst.Name) and fn is not None:
            # a tensor computed in this function is a per-step value
            assigned = self.ctx.heavy.local_assignments(fn).get(receiver.value, ())
            if assigned:
                return None
        return hook

    def _fix(self, expr: cst.Expr, hook: str):
        cls = self.ctx.scope.method_class
        fn = self.ctx.scope.function
        if cls is None or fn is None or not is_instance_method(self.ctx, fn):
            return None
        if self._no_new_attributes(cls) or self._in_loop(fn, expr):
            return None
        stem = hook.removeprefix("register_")
        # Bases and subclasses share the instance: reusing a name one of them keeps a
        # handle under would overwrite that handle, and its hook could never be removed.
        sharing = [*local_bases(self.ctx, cls), *local_subclasses(self.ctx, cls)]
        taken = {a for base in external_bases(self.ctx, cls)
                 for a in external_attributes(self.ctx.index, base)}
        attr = unique_self_attribute(self.ctx, cls, f"_{stem}_handle", sharing, taken)
        assign = cst.Assign(
            targets=[cst.AssignTarget(cst.parse_expression(f"self.{attr}"))], value=expr.value
        )
        replacements = {expr: assign}
        # `__del__` never runs while the hook holds the instance
        holds_self = expr.value.args and hook_holds_self(fn, expr.value.args[0].value)
        release = fix_release_method(self.ctx, cls, finalizer=not holds_self)
        if release is None or release is fn:
            return None  # a handle kept but never removed frees nothing (RL502 reports it)
        unconditional = fn.name.value == "__init__" and in_body_of(self.ctx.scope.statement, fn)
        code = (
            f"self.{attr}.remove()"
            if unconditional
            else f'if getattr(self, "{attr}", None) is not None:\n    self.{attr}.remove()\n'
        )
        edited = append_at_end(release, [cst.parse_statement(code)])
        if edited is None:
            return None  # the release's normal path never reaches its end
        replacements[release] = edited
        installed = short(self.ctx.code(expr.value.args[0].value)) if expr.value.args else "the hook"
        # unsafe: the hook stops running once the owner is released
        return self.fix(f"Keep the handle as `self.{attr}` and remove it in `{release.name.value}()`: "
                        f"`{installed}` no longer runs after `{release.name.value}()`", replacements,
                        applicability=Applicability.UNSAFE)

    @staticmethod
    def _in_loop(fn: cst.FunctionDef, expr: cst.Expr) -> bool:
        """Is the registration in a loop? One attribute would keep only the last handle."""
        return any(isinstance(n, (cst.For, cst.While)) and any(m is expr for m in iter_nodes(n.body))
                   for n in iter_nodes(fn.body))

    def _no_new_attributes(self, cls: cst.ClassDef) -> bool:
        """Would `self.<new attribute> = ...` raise? `__slots__` in the class (an
        AttributeError), a dataclass or attrs class with slots, a frozen one (also
        through a same-file base)."""
        for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    targets = (
                        [t.target for t in small.targets] if isinstance(small, cst.Assign)
                        else [small.target] if isinstance(small, cst.AnnAssign) else [])
                    if any(isinstance(t, cst.Name) and t.value == "__slots__" for t in targets):
                        return True
        return any(self._slotted_or_frozen(c, own=c is cls)
                   for c in (cls, *local_bases(self.ctx, cls)))

    def _slotted_or_frozen(self, cls: cst.ClassDef, own: bool) -> bool:
        names = decorator_names(self.ctx, cls)
        # attrs' new API makes slotted classes unless told otherwise
        if own and names & _ATTRS_SLOTTED:
            return True
        for d in cls.decorators:
            if isinstance(d.decorator, cst.Call):
                for arg in d.decorator.args:
                    keyword = arg.keyword.value if arg.keyword is not None else None
                    true = isinstance(arg.value, cst.Name) and arg.value.value == "True"
                    if true and (keyword == "frozen" or (own and keyword == "slots")):
                        return True
        return False


# Hooks on a tensor (kept in the tensor, or its gradient accumulator).
_TENSOR_HOOKS = frozenset({"register_hook", "register_post_accumulate_grad_hook"})

_ATTRS_SLOTTED = frozenset({
    "attrs.define", "attrs.frozen", "attrs.mutable", "attr.define", "attr.frozen", "attr.mutable",
})


# Calls that add to a container in place: the retention model's, and a dict's `update`.
_ADDS = ADD_CALLS | {"update"}


def _hook_bodies(ctx, cls: cst.ClassDef, fn: cst.FunctionDef, hook) -> "list[cst.CSTNode] | None":
    """The code the installed hook runs: a method of the class (`self.record`), a function
    nested in `fn`, a lambda, the functions a method of the class makes and returns
    (`self._make(...)`), what a `partial` wraps. None when it is code we cannot see."""
    methods = ctx.methods(cls)
    if isinstance(hook, cst.Attribute) and is_self(hook.value):
        method = methods.get(hook.attr.value)
        return None if method is None else [method.body]
    if isinstance(hook, cst.Name):
        nested = nested_function(fn.body, hook.value)
        return None if nested is None else [nested.body]
    if isinstance(hook, cst.Lambda):
        return [hook.body]
    if isinstance(hook, cst.Call):
        func = hook.func
        if isinstance(func, cst.Attribute) and is_self(func.value):
            maker = methods.get(func.attr.value)
            return None if maker is None else [maker.body]  # the closures it returns are in it
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name == "partial" and hook.args:
            return _hook_bodies(ctx, cls, fn, hook.args[0].value)
    return None


def _with_own_callees(ctx, cls: cst.ClassDef, bodies: "list[cst.CSTNode]") -> "list[cst.CSTNode]":
    """`bodies` and those of the class's methods they call on `self`, and so on: what the
    hook runs (`self.expand_frame(...)` from the hook)."""
    methods = ctx.methods(cls)
    called = {n.func.attr.value for b in bodies for n in iter_nodes(b) if isinstance(n, cst.Call)
              and isinstance(n.func, cst.Attribute) and is_self(n.func.value)}
    for name in list(called):
        called |= ctx.release.called_on_self(cls, name)
    return [*bodies, *(methods[name].body for name in sorted(called) if name in methods)]


def _makes_tensors(ctx, cls: cst.ClassDef) -> bool:
    """Does a method of the class make tensors (`torch.empty_like(p, device="cpu")`)? What
    it makes it keeps, in an attribute or a container: a buffer per parameter is heavy
    even where the index sees no tensor attribute."""
    return any(isinstance(n, cst.Call) and ctx.qualname(n.func) in TENSOR_FACTORIES
               for n in iter_nodes(cls.body))


def _fills_own_container(body: cst.CSTNode) -> bool:
    """Does `body` add to a container reached from `self` (`self.stats.append(x)`,
    `self.seen[k] = v`)?"""
    for node in iter_nodes(body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in _ADDS and _rooted_at_self(node.func.value):
            return True
        if isinstance(node, (cst.Assign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(isinstance(t, cst.Subscript) and _rooted_at_self(t.value) for t in targets):
                return True
    return False


def _stores_on_self(body: cst.CSTNode) -> bool:
    """Does `body` set an attribute of the instance to a value (not a flag or a number)?"""
    for node in iter_nodes(body):
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and node.value is not None:
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            literal = isinstance(node.value, (cst.Integer, cst.Float, cst.SimpleString)) or (
                isinstance(node.value, cst.Name) and node.value.value in ("True", "False", "None"))
            if not literal and any(isinstance(t, cst.Attribute) and _rooted_at_self(t) for t in targets):
                return True
    return False


def _rooted_at_self(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return is_self(expr)
