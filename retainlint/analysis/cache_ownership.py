"""What a cache owns, for `builds_own` and `per_object_key` in
`retainlint.analysis.module_caches`: whether a value a memo stores is one its function built
from inputs reaching nothing heavy (`_Ownership`), whether a type is or builds a layer
(`holds_layers`), and the parts a key is made of (`_KeyParts`)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.container_types import _MAX_DEPTH
from retainlint.analysis.cstutil import OwnScopeVisitor, annotation_expression
from retainlint.analysis.function_names import function_bindings
from retainlint.analysis.heavy import find_param
from retainlint.project.names import HEAVY_TYPES, TENSOR_FACTORIES, TENSOR_TYPES as _TENSOR_TYPES
from retainlint.analysis.walk import visit


# -- what a cache owns ---------------------------------------------------------------
# A per-device or per-shape memo (`_ones[device] = torch.ones(1, device=device)`, one
# workspace object per stream) keeps only what it allocated itself: a few constants or a
# fixed workspace meant to live as long as the process. What leaks is a value the memo did
# not make - a layer, a caller's tensor, an object built around either - or buffers keyed
# by object identity, one more for every model the process builds. (Shared by RL302, for
# dict values, and RL303, for singletons.)

# may hand back their argument's own memory (`torch.as_tensor(t) is t`)
_SHARING_FACTORIES = frozenset({"torch.as_tensor", "torch.from_numpy", "torch.asarray"})
# what a tensor says about itself: plain values, whatever the tensor holds
_PLAIN_ATTRIBUTES = frozenset(
    {"device", "dtype", "shape", "ndim", "is_cuda", "layout", "nbytes", "itemsize",
     "requires_grad", "index", "type", "cuda_stream"}
)
_PLAIN_METHODS = frozenset(
    {"data_ptr", "numel", "nelement", "size", "dim", "element_size", "stride",
     "storage_offset", "item", "tolist", "get_device", "is_contiguous"}
)
# identities: a key made of them is one entry per object, not per device or shape
_IDENTITY_CALLS = frozenset({"id", "hash", "builtins.id", "builtins.hash"})
_IDENTITY_METHODS = frozenset({"data_ptr", "untyped_storage", "storage"})
_OWN_DEPTH = 24  # expression nesting followed (locals are followed once each)
_PLAIN_LITERALS = (
    cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float,
    cst.Imaginary, cst.Ellipsis,
)


def _module_type(index, qualified: Optional[str]) -> bool:
    """A layer type by itself: `nn.Module` and its library subclasses, a pretrained
    model, or a type the user configured heavy (never judged a mere workspace)."""
    if not qualified or qualified in _TENSOR_TYPES:
        return False
    if qualified in HEAVY_TYPES or qualified in index.heavy_types:
        return True
    return (qualified.startswith("torch.nn.") and qualified.count(".") == 2
            and qualified.rsplit(".", 1)[1][:1].isupper())


def holds_layers(index, qualified: Optional[str], _seen: frozenset = frozenset()) -> bool:
    """Is `qualified` a layer type, or a project class that derives from one or builds one
    into an attribute (`self.proj = nn.Linear(...)`, through other project classes and
    functions annotated to return one)? A class that only allocates tensors is a
    workspace, not part of a model."""
    resolved = index.resolve(qualified) or qualified
    if not resolved or resolved in _seen or len(_seen) > _MAX_DEPTH:
        return False
    if _module_type(index, resolved):
        return True
    summary = index.classes.get(resolved)
    if summary is None:
        return False
    seen = _seen | {resolved}
    if any(holds_layers(index, base, seen) for base in summary.bases):
        return True
    for makers in summary.attributes.values():
        for callee in makers:
            if callee in TENSOR_FACTORIES:
                continue
            if holds_layers(index, callee, seen):
                return True
            function = index.functions.get(index.resolve(callee) or callee)
            if function is not None and any(holds_layers(index, r, seen) for r in function.returns):
                return True
    return False


class _Ownership:
    """What one function builds (see `builds_own`). `container`: the global the value is
    stored in; reading it back (`t = cache.get(k)`) adds nothing the cache lacks."""

    def __init__(self, ctx, function: Optional[cst.FunctionDef], cls, container: Optional[str]) -> None:
        self.ctx = ctx
        self.function = function
        self.cls = cls
        self.container = container
        self._pending: set[str] = set()  # locals being judged (`H = torch.cat([H, H])`)
        self._unpacked: Optional[dict[str, list]] = None  # see `_sources`

    # -- a value the function makes ----------------------------------------------------
    def made(self, expr, depth: int = 0) -> bool:
        if depth > _OWN_DEPTH:
            return False
        if self._neutral(expr):
            return True  # `d[k] = None`: keeps nothing
        if isinstance(expr, cst.Name):
            return self._made_name(expr, depth)
        if isinstance(expr, cst.Call):
            return self._made_call(expr, depth)
        if isinstance(expr, cst.Subscript):  # a view or a copy of what it indexes
            return self.made(expr.value, depth + 1)
        if isinstance(expr, cst.BinaryOperation):  # tensor arithmetic allocates its result
            return self.harmless(expr.left, depth + 1) and self.harmless(expr.right, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self.harmless(expr.expression, depth + 1)
        if isinstance(expr, cst.IfExp):
            return all(self._neutral(e) or self.made(e, depth + 1) for e in (expr.body, expr.orelse))
        if isinstance(expr, (cst.Tuple, cst.List)):
            return all(
                not isinstance(e, cst.StarredElement)
                and (self._neutral(e.value) or self.made(e.value, depth + 1))
                for e in expr.elements
            )
        return False

    def _neutral(self, expr) -> bool:
        """Holds nothing (`None`, a number, a string)."""
        return isinstance(expr, _PLAIN_LITERALS) or (
            isinstance(expr, cst.Name) and expr.value in ("None", "True", "False"))

    def _reads_container(self, expr) -> bool:
        return reads_container(expr, self.container)

    def _made_name(self, name: cst.Name, depth: int) -> bool:
        fn = self.function
        if fn is None or name.value in ("self", "cls") or find_param(fn, name.value) is not None:
            return False  # handed in: the caller's
        if name.value in self._pending:
            return True  # judged by its other assignments
        values = [v for v, _ in self.ctx.heavy.local_assignments(fn).get(name.value, ())]
        values += self._sources(fn).get(name.value, ())
        values = [v for v in values if v is not None and not self._neutral(v)
                  and not self._reads_container(v)]
        if not values:
            return False
        self._pending.add(name.value)
        try:
            return all(self.made(v, depth + 1) for v in values)
        finally:
            self._pending.discard(name.value)

    def _receiver(self, func) -> Optional[cst.BaseExpression]:
        """The object a method is called on (`t` of `t.to(device)`), or None for a
        function or class named through an import or this file (`torch.cat`, `Model`)."""
        if not isinstance(func, cst.Attribute):
            return None
        root = func.value
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and (
                root.value in self.ctx.imports.names or root.value in self.ctx.classes
                or root.value in self.ctx.functions):
            return None
        return func.value

    def _made_call(self, call: cst.Call, depth: int) -> bool:
        receiver = self._receiver(call.func)
        if receiver is not None:
            # `t.to(device)`, `t[idx].reshape(shape)`: a method of a value made here
            # returns that value, a view of it or a new one computed from it
            return self.made(receiver, depth + 1)
        args = all(self.harmless(a.value, depth + 1) for a in call.args)
        qualified = self.ctx.qualname(call.func)
        if qualified in _SHARING_FACTORIES:
            return args
        if qualified in TENSOR_FACTORIES:
            return True  # new storage, whatever it is filled from
        if qualified is None or self._makes_layer(qualified):
            return False  # a layer (or a model part) is no buffer of the cache's own
        # a tensor or a workspace object built from plain inputs (`_Workspace(device)`,
        # `_make_table(kind, device)`): whatever it keeps is its own, or the process's
        return args

    def _makes_layer(self, qualified: str) -> bool:
        """Does calling `qualified` build a layer: a layer class, or a function annotated
        to return one (`def load_model(path) -> nn.Module`)?"""
        index = self.ctx.index
        target = index.resolve(self.ctx.absolute(qualified)) or qualified
        if holds_layers(index, target):
            return True
        function = index.functions.get(target)
        return function is not None and any(holds_layers(index, r) for r in function.returns)

    # -- an input that reaches nothing heavy -----------------------------------------------
    def harmless(self, expr, depth: int = 0) -> bool:
        if depth > _OWN_DEPTH:
            return False
        if self._neutral(expr):
            return True
        if isinstance(expr, cst.Name):
            return self._harmless_name(expr, depth)
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in _PLAIN_ATTRIBUTES:
                return True
            return self.harmless(expr.value, depth + 1) and not self.ctx.heavy.is_heavy_value(
                expr, self.function, self.cls)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _PLAIN_METHODS:
                return True
            if self.made(expr, depth + 1):
                return True
            receiver = self._receiver(func)
            return (
                not self.ctx.heavy.is_heavy_value(expr, self.function, self.cls)
                and (receiver is None or self.harmless(receiver, depth + 1))
                and all(self.harmless(a.value, depth + 1) for a in expr.args)
            )
        if isinstance(expr, cst.Subscript):
            return self.harmless(expr.value, depth + 1)
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return all(self.harmless(e.value, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            return all(isinstance(e, cst.DictElement) and self.harmless(e.key, depth + 1)
                       and self.harmless(e.value, depth + 1) for e in expr.elements)
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self.harmless(expr.elt, depth + 1) and self._harmless_loops(expr.for_in, depth)
        if isinstance(expr, cst.BinaryOperation):
            return self.harmless(expr.left, depth + 1) and self.harmless(expr.right, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self.harmless(expr.expression, depth + 1)
        if isinstance(expr, cst.BooleanOperation):
            return self.harmless(expr.left, depth + 1) and self.harmless(expr.right, depth + 1)
        if isinstance(expr, cst.Comparison):
            return True  # a bool
        if isinstance(expr, cst.IfExp):
            return self.harmless(expr.body, depth + 1) and self.harmless(expr.orelse, depth + 1)
        return False

    def _harmless_loops(self, for_in, depth: int) -> bool:
        while for_in is not None:
            if not self.harmless(for_in.iter, depth + 1):
                return False
            for_in = for_in.inner_for_in
        return True

    def _harmless_name(self, name: cst.Name, depth: int) -> bool:
        fn = self.function
        if name.value in ("self", "cls"):
            return not (self.cls is not None and self.ctx.heavy.is_heavy_class(self.cls))
        if fn is None:
            return True
        param = find_param(fn, name.value)
        if param is not None:
            return not _mentions_heavy(self.ctx, param.annotation)
        if name.value in self._pending:
            return True
        assigned = list(self.ctx.heavy.local_assignments(fn).get(name.value, ()))
        assigned += [(v, None) for v in self._sources(fn).get(name.value, ())]
        if not assigned:
            # a global or an import lives as long as the process anyway; another binding
            # (`except E as e`, an import in the function) is not followed
            return name.value not in function_bindings(fn).bound
        self._pending.add(name.value)
        try:
            return all(
                not _mentions_heavy(self.ctx, ann)
                and (v is None or self._reads_container(v) or self.harmless(v, depth + 1))
                for v, ann in assigned
            )
        finally:
            self._pending.discard(name.value)

    def _sources(self, fn: cst.FunctionDef) -> dict[str, list]:
        """Names bound from part of a value: `a, b = pair()`, `for x in xs`,
        `with open(p) as f` -> what they come from (`pair()`, `xs`, `open(p)`)."""
        if self._unpacked is None:
            found: dict[str, list] = {}

            def bind(target, source) -> None:
                if isinstance(target, cst.Name):
                    found.setdefault(target.value, []).append(source)
                elif isinstance(target, (cst.Tuple, cst.List)):
                    for element in target.elements:
                        bind(element.value, source)
                elif isinstance(target, cst.StarredElement):
                    bind(target.value, source)

            class _Bindings(OwnScopeVisitor):
                def visit_Assign(self, node: cst.Assign) -> None:
                    for t in node.targets:
                        if isinstance(t.target, (cst.Tuple, cst.List)):
                            bind(t.target, node.value)

                def visit_For(self, node: cst.For) -> None:
                    bind(node.target, node.iter)

                def visit_WithItem(self, node: cst.WithItem) -> None:
                    if node.asname is not None:
                        bind(node.asname.name, node.item)

            visit(fn.body, _Bindings())
            self._unpacked = found
        return self._unpacked


def reads_container(expr: cst.BaseExpression, container: Optional[str]) -> bool:
    """`cache.get(k)`, `cache[k]`, `cache.setdefault(k, v)`, `cache` itself, for the global
    named `container`: what the cache holds already."""
    if container is None:
        return False
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        expr = expr.func.value
    elif isinstance(expr, cst.Subscript):
        expr = expr.value
    return isinstance(expr, cst.Name) and expr.value == container


def _mentions_heavy(ctx, ann) -> bool:
    """Does an annotation name a heavy type anywhere (`list[torch.Tensor]` too)?"""
    written = annotation_expression(ann)
    if written is None:
        return ann is not None  # a string that does not parse: assume it might
    ann = written
    found = []

    class _Names(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            found.append(node)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            found.append(node)

    visit(ann, _Names())
    return any(ctx.heavy.is_heavy_qualname(ctx.qualname(n)) for n in found)


class _KeyParts(cst.CSTVisitor):
    """The calls and names a key is made of, leaving out what only describes an object
    (`q.device`, `t.numel()`: the same for many objects)."""

    def __init__(self) -> None:
        self.found: list[cst.CSTNode] = []

    def visit_Call(self, node: cst.Call) -> bool:
        self.found.append(node)
        func = node.func
        return not (isinstance(func, cst.Attribute) and func.attr.value in _PLAIN_METHODS
                    and func.attr.value not in _IDENTITY_METHODS)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return node.attr.value not in _PLAIN_ATTRIBUTES

    def visit_Name(self, node: cst.Name) -> None:
        self.found.append(node)
