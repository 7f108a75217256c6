"""RL201 finalize-pins-argument."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import call_args, decorator_names, prepend_to_function, proven_module_ref
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl201 import FinalizePinsArgumentPrefilter
from retainlint.analysis.rule import Example, RelatedNode, Rule

_STATIC = frozenset({"staticmethod", "builtins.staticmethod"})


def finalize_parts(ctx, call: cst.Call):
    """(owner, func, extra args) of a `weakref.finalize(...)` call, however it is
    imported; None for any other call or one with starred owner/func."""
    if ctx.qualname(call.func) != "weakref.finalize":
        return None
    if any(a.star for a in call.args[:2]):
        return None
    positional, keywords = call_args(call)
    if len(positional) < 2:
        return None
    return positional[0], positional[1], [*positional[2:], *keywords.values()]


class FinalizePinsArgument(Rule):
    prefilter = FinalizePinsArgumentPrefilter
    name = "finalize-pins-argument"
    summary = "A heavy object passed as an argument to `weakref.finalize` lives as long as the owner"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    docs = """
## What it does
Reports an extra argument of `weakref.finalize(owner, func, *args, **kwargs)` (however
`weakref` or `finalize` is imported) that is a heavy object - a model, a tensor, a
configured heavy type, or a value known to be one (a local assigned from a function
annotated to return `nn.Module`, a parameter annotated as one, a heavy `self` attribute) -
other than the owner itself (that case is RL202).

## Why it leaks
`finalize` stores `func`, `args` and `kwargs` strongly in a global registry until `owner`
dies. The heavy argument therefore lives at least as long as the owner: while the caller
still holds the owner (an engine handle), the model can never be freed, even after an
explicit shutdown.

## Incident
vLLM's `LLMEngine.__init__` did
`weakref.finalize(self, LLMEngine._cleanup_instance_caches, model)`; the model stayed
pinned after shutdown (with a module-level dict, ~24 GiB stayed on device 0). The fix
passed `weakref.ref(model)` and made the cleanup dereference it and return early when the
model was already gone.

## Example
```python
class Engine:
    def __init__(self):
        model = self._load_model()  # -> nn.Module
        self._finalizer = weakref.finalize(self, Engine._cleanup, model)  # RL201

    @staticmethod
    def _cleanup(model):
        model.cpu()
```

## Fix (unsafe)
A name or attribute argument is wrapped as `weakref.ref(arg)` (`import weakref` is added if needed).
When `func` is a function or staticmethod of the same file (`name`, `Class.method`,
`self.method`), its receiving parameter `p` becomes `p_ref` (a keyword argument is renamed
at the call too) and its body starts with `p = p_ref()` / `if p is None: return`.
A value built in the call (`torch.empty(...)`) gets no fix: nothing else would
keep it alive. Unsafe because the cleanup no longer runs when the object died first, and other callers
of the function now must pass a reference.

Not reported: resources that are the point of a finalizer (process lists, sockets, file
handles, shared-memory names, plain values) - anything not known to be heavy.
"""

    valid = [
        # the fixed vLLM code: a weak reference
        """
import weakref
import torch.nn as nn

class LLMEngine:
    def __init__(self):
        model = self._get_model()
        if model is not None:
            self._finalizer = weakref.finalize(
                self, LLMEngine._cleanup, weakref.ref(model)
            )

    def _get_model(self) -> nn.Module | None:
        return None

    @staticmethod
    def _cleanup(model_ref) -> None:
        model = model_ref()
        if model is None:
            return
""",
        # processes, sockets and plain values are what finalizers are for
        """
import weakref

def shutdown(procs, sock, name):
    pass

class Manager:
    def __init__(self, procs, sock):
        self.processes = procs
        self._finalizer = weakref.finalize(self, shutdown, self.processes, sock, name="x")
""",
        # the owner itself is RL202's business
        """
import weakref
import torch.nn as nn

def close(m):
    pass

def track(model: nn.Module):
    weakref.finalize(model, close, model)
""",
        # not weakref's finalize
        """
import torch.nn as nn

def finalize(owner, fn, *args):
    pass

def f(model: nn.Module, owner):
    finalize(owner, print, model)
""",
    ]
    invalid = [
        # the vLLM 0.28 incident: a staticmethod through the class name
        Example(
            """
import weakref
import torch.nn as nn

class LLMEngine:
    def __init__(self):
        model = self._get_model()
        if model is not None:
            self._finalizer = weakref.finalize(
                self, LLMEngine._cleanup, model
            )

    def _get_model(self) -> nn.Module | None:
        return None

    @staticmethod
    def _cleanup(model) -> None:
        \"\"\"Drop the hooks pinning the model.\"\"\"
        for m in model.modules():
            m._forward_hooks.clear()
""",
            lines=[10],
            fixed="""
import weakref
import torch.nn as nn

class LLMEngine:
    def __init__(self):
        model = self._get_model()
        if model is not None:
            self._finalizer = weakref.finalize(
                self, LLMEngine._cleanup, weakref.ref(model)
            )

    def _get_model(self) -> nn.Module | None:
        return None

    @staticmethod
    def _cleanup(model_ref) -> None:
        \"\"\"Drop the hooks pinning the model.\"\"\"
        model = model_ref()
        if model is None:
            return
        for m in model.modules():
            m._forward_hooks.clear()
""",
        ),
        # aliased import, a module function, a keyword argument, a `self.method` staticmethod
        Example(
            """
import weakref as wr
from torch import nn

def release(handle, *, weights):
    weights.zero_()

class Runner:
    def __init__(self, handle, model: nn.Module):
        self.model = model
        wr.finalize(self, release, handle, weights=model)
        self._f = wr.finalize(self, self._drop, self.model)

    @staticmethod
    def _drop(m):
        m.cpu()
""",
            lines=[11, 12],
            fixed="""
import weakref as wr
from torch import nn

def release(handle, *, weights_ref):
    weights = weights_ref()
    if weights is None:
        return
    weights.zero_()

class Runner:
    def __init__(self, handle, model: nn.Module):
        self.model = model
        wr.finalize(self, release, handle, weights_ref=wr.ref(model))
        self._f = wr.finalize(self, self._drop, wr.ref(self.model))

    @staticmethod
    def _drop(m_ref):
        m = m_ref()
        if m is None:
            return
        m.cpu()
""",
        ),
        # a value built in the call: reported, no fix
        Example(
            """
import weakref
import torch

def track(owner):
    weakref.finalize(owner, print, torch.zeros(4))
""",
            lines=[6],
        ),
        # `from weakref import finalize`, an imported callback: wrap only, add the import
        Example(
            """
from weakref import finalize

import torch
from helpers import free_buffers

class Cache:
    def __init__(self):
        buf = torch.empty(1024)
        finalize(self, free_buffers, buf)
""",
            lines=[10],
            fixed="""
from weakref import finalize

import torch
from helpers import free_buffers
import weakref

class Cache:
    def __init__(self):
        buf = torch.empty(1024)
        finalize(self, free_buffers, weakref.ref(buf))
""",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        parts = finalize_parts(self.ctx, node)
        if parts is None:
            return
        owner, func, extras = parts
        fn, cls = self.ctx.scope.function, self.ctx.scope.method_class
        for index, arg in enumerate(extras):
            value = arg.value
            if value.deep_equals(owner.value):
                continue
            if not self.ctx.heavy.is_heavy_value(value, fn, cls):
                continue
            target = self._local_target(func.value)
            related = [RelatedNode("the finalizer callback", target)] if target is not None else []
            self.report(
                value,
                f"`{self.ctx.code(value)}` (a heavy object: a model or tensor) is passed to "
                f"`{self.ctx.code(node.func)}`: the finalizer registry keeps it alive as long "
                f"as `{self.ctx.code(owner.value)}` lives",
                fix=self._fix(node, arg, index, target),
                related=related,
                consequence=Consequence(
                    f"`{self.ctx.code(value)}` (heavy)",
                    f"the finalizer registry of `{self.ctx.code(node.func)}`",
                    f"as long as {self._owner(owner.value, cls)} lives",
                ),
            )

    def _owner(self, owner: cst.BaseExpression, cls: Optional[cst.ClassDef]) -> str:
        code = self.ctx.code(owner)
        return f"the `{cls.name.value}` instance (`self`)" if code == "self" and cls is not None else f"`{code}`"

    # -- the callback ------------------------------------------------------------------
    def _local_target(self, func: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        """The function or staticmethod of this file that `func` names, if any."""
        if isinstance(func, cst.Name):
            return self.ctx.functions.get(func.value)
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return None
        owner = func.value.value
        if owner in ("self", "cls"):
            cls = self.ctx.scope.method_class
        else:
            cls = self.ctx.classes.get(owner)
        if cls is None:
            return None
        method = self.ctx.methods(cls).get(func.attr.value)
        if method is None:
            return None
        names = decorator_names(self.ctx, method)
        if names & _STATIC:
            return method
        if owner not in ("self", "cls") and not method.decorators:
            return method  # a plain function reached through its class
        return None

    # -- the fix -----------------------------------------------------------------------
    def _fix(self, call: cst.Call, arg: cst.Arg, index: int,
             target: Optional[cst.FunctionDef]):
        if not isinstance(arg.value, (cst.Name, cst.Attribute)):
            return None  # a value built for the call: a weak reference would die at once
        found = proven_module_ref(self.ctx, "weakref")
        if found is None:
            return None  # `weakref` imported only conditionally, or the name means something else
        wr, imports = found
        ref = cst.Call(func=cst.parse_expression(f"{wr}.ref"), args=[cst.Arg(value=arg.value)])
        if target is None:
            return self.fix(
                f"Pass `{wr}.ref({self.ctx.code(arg.value)})` instead",
                {arg.value: ref}, imports,
            )
        if any(target is f for f in self.ctx.scope.functions):
            return None  # the call is inside the callback itself
        param = self._param_for(target, arg, index)
        if param is None:
            return None
        name = param.name.value
        if name.endswith("_ref") and self._already_derefs(target, name):
            return self.fix(
                f"Pass `{wr}.ref({self.ctx.code(arg.value)})` instead",
                {arg.value: ref}, imports,
            )
        new_name = f"{name}_ref"
        if param.default is not None or re.search(rf"\b{re.escape(new_name)}\b", self.ctx.code(target)):
            return None
        new_param = param.with_changes(name=cst.Name(new_name))
        if param.annotation is not None:
            inner = self.ctx.code(param.annotation.annotation)
            new_param = new_param.with_changes(
                annotation=param.annotation.with_changes(
                    annotation=cst.parse_expression(f"{wr}.ref[{inner}]")
                )
            )
        new_def = _replace_param(target, param, new_param)
        new_def = prepend_to_function(
            new_def,
            [
                cst.parse_statement(f"{name} = {new_name}()\n"),
                cst.parse_statement(f"if {name} is None:\n    return\n"),
            ],
        )
        if arg.keyword is not None:
            call_edit = {arg: arg.with_changes(keyword=cst.Name(new_name), value=ref)}
        else:
            call_edit = {arg.value: ref}
        return self.fix(
            f"Pass `{wr}.ref({self.ctx.code(arg.value)})` and dereference it in "
            f"`{target.name.value}`",
            {**call_edit, target: new_def},
            imports,
        )

    def _param_for(self, target: cst.FunctionDef, arg: cst.Arg, index: int) -> Optional[cst.Param]:
        params = target.params
        if arg.keyword is not None:
            for p in (*params.params, *params.kwonly_params):
                if p.name.value == arg.keyword.value:
                    return p
            return None
        positional = [*params.posonly_params, *params.params]
        return positional[index] if index < len(positional) else None

    def _already_derefs(self, target: cst.FunctionDef, name: str) -> bool:
        """Does the body already start with `x = name()` (an earlier fix)?"""
        text = self.ctx.code(target.body)
        return re.search(rf"^\s*\w+ = {re.escape(name)}\(\)", text, re.M) is not None


def _replace_param(fn: cst.FunctionDef, old: cst.Param, new: cst.Param) -> cst.FunctionDef:
    params = fn.params
    fields = {}
    for field in ("posonly_params", "params", "kwonly_params"):
        seq = getattr(params, field)
        if any(p is old for p in seq):
            fields[field] = [new if p is old else p for p in seq]
    return fn.with_changes(params=params.with_changes(**fields))
