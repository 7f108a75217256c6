"""What the instance in a cycle holds, and so whether the cycle is worth reporting: a class
holding something heavy itself (`_Holdings`, read with libcst in this file and with `ast`
in another), and the shapes reported whatever the class holds (`_worth_reporting`)."""

from __future__ import annotations

import ast
import os
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_statements, is_self
from retainlint.analysis.heavy import find_param
from retainlint.analysis.hooks import ClassHandles, external_bases, local_bases
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.weight import weightless_layer
from retainlint.project.index import qualified_in
from retainlint.project.names import TENSOR_FACTORIES, TENSOR_TYPES as _TENSOR_TYPES
from retainlint.rules.rl701_self_cycle_callback.references import _owned, _root_name
from retainlint.rules.rl701_self_cycle_callback.sites import _Sites

_STATE_REGISTRATION = frozenset({"register_buffer", "register_parameter"})


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
    tree = index.tree(summary.path)
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


class _Holdings:
    """Does a class of the file hold something heavy itself: the rule's judgement of the
    instance in a cycle, memoised per class for one file."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._holds: dict[int, bool] = {}

    def is_heavy(self, cls: cst.ClassDef) -> bool:
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

    def holds_heavy(self, cls: cst.ClassDef) -> bool:
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
            return self.holds_heavy(local)
        absolute = self.ctx.absolute(q)
        if self.ctx.index.resolve(absolute) in self.ctx.index.classes:
            return _external_holds(self.ctx.index, absolute)
        return self.ctx.index.returns_heavy(absolute)


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


def _worth_reporting(ctx, cls: cst.ClassDef, handles: ClassHandles, sites: "_Sites", site,
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
        return _keeps_call_values(ctx, cls)  # an autograd node of a per-call tensor
    if how in ("constructed", "setter"):
        holder = site.func.value if how == "setter" else site.targets[0].target \
            if isinstance(site, cst.Assign) else None
        return _released_but_kept(handles, holder)
    return heavy


def _released_but_kept(handles: ClassHandles, holder) -> bool:
    """Is `holder` a `self.<attr>` that a release method uses (stops, closes) - the
    author's sign that it is a resource tied to the instance's life?"""
    if not (isinstance(holder, cst.Attribute) and is_self(holder.value)):
        return False
    attr = holder.attr.value
    reach = handles.reachable(handles.release_methods(whole=False))
    return any(
        isinstance(n, cst.Attribute) and is_self(n.value) and n.attr.value == attr
        for m in reach for n in iter_nodes(handles.methods[m].body))
