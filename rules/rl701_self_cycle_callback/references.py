"""What a value references and what it reaches from `self`: the root of an attribute
chain, objects the instance owns (`self.sub`, a loop variable over `self.parameters()`),
autograd graph nodes, callbacks holding a named object, and the parameters a method stores
on its instance as they are."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.analysis.hooks import is_accumulate_grad
from retainlint.analysis.hook_exprs import iter_nodes


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
