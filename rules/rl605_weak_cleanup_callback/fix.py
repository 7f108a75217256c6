"""RL605's fix for a `WeakMethod` cleanup callback: for `weakref.finalize`, a staticmethod
receiving the attributes the method reads, registered in its place; for
`atexit.register`, a lambda calling the method the `WeakMethod` returns."""

from __future__ import annotations

import keyword
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.analysis.hook_exprs import iter_nodes, names_in
from retainlint.analysis.rule import Rule


def _atexit_fix(rule: Rule, call: cst.Call, weak: cst.Call):
    if len(call.args) != 1 or rule.ctx.qualname(weak.func) != "weakref.WeakMethod":
        return None
    code = f"lambda method={rule.ctx.code(weak)}: method() and method()()"
    return rule.fix("Call the method the `WeakMethod` returns",
                    {weak: cst.parse_expression(code)})


def _finalize_fix(rule: Rule, call: cst.Call, owner: cst.BaseExpression, weak: cst.Call):
    cls, fn = rule.ctx.scope.method_class, rule.ctx.scope.function
    if cls is None or fn is None or not is_self(owner) or len(call.args) != 2:
        return None
    if rule.ctx.qualname(weak.func) != "weakref.WeakMethod" or len(weak.args) != 1:
        return None
    bound = weak.args[0].value
    if not (isinstance(bound, cst.Attribute) and is_self(bound.value)):
        return None
    methods = rule.ctx.methods(cls)
    method = methods.get(bound.attr.value)
    if method is None or method.decorators or method.asynchronous is not None:
        return None
    if any(method is f for f in rule.ctx.scope.functions):
        return None
    params = method.params
    if len(params.params) != 1 or params.posonly_params or params.kwonly_params or \
            isinstance(params.star_arg, (cst.Param, cst.ParamStar)) or params.star_kwarg is not None:
        return None
    attrs = _plain_reads(rule, method, set(methods))
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
    if new_name in methods or new_name in rule.ctx.code(cls):
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
    return rule.fix(
        f"Register the staticmethod `{new_name}` receiving what `{bound.attr.value}()` uses",
        {call: call.with_changes(args=args),
         method: cst.FlattenSentinel([method, static])},
    )


def _plain_reads(rule: Rule, method: cst.FunctionDef, method_names: set[str]) -> Optional[list[str]]:
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
    text = rule.ctx.code(method.body)
    attrs.sort(key=lambda a: text.find(f"self.{a}"))
    return attrs


class _SelfToParams(cst.CSTTransformer):
    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def leave_Attribute(self, original, updated):
        if is_self(original.value) and original.attr.value in self.renames:
            return cst.Name(self.renames[original.attr.value])
        return updated
