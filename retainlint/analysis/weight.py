"""Does a value pin real memory? A module or tensor is heavy by type (`heavy.HeavyOracle`);
this judges its weight: a layer with parameters or buffers, a tensor of more than a few
thousand elements, an object holding either - not an activation, a 1-element scalar or an
empty `nn.Module`. Read from the project's sources (`ast`), for rules that must not report
weightless objects (RL303, RL602; RL701 asks `weightless_layer`)."""

from __future__ import annotations
import ast
import textwrap
import weakref
from typing import Optional
import libcst as cst
from retainlint.project.names import TENSOR_FACTORIES
from retainlint.project.index import qualified_in
from retainlint.analysis.walk import children
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.cstutil import self_attribute
from retainlint.project.nodes import self_attr


_MAX_DEPTH = 8

# -- source of other files ------------------------------------------------------------
# The project index knows where a class or method is; its source is read with `ast`
# (and one method re-parsed with libcst) only when a rule needs it (`ProjectIndex.source`).
# Kept per index: a new run sees the files as they are then. What the rule learns this way depends on
# the files the index lookups named, which a recording index notes.
class _Sources:
    def __init__(self, index) -> None:
        self.index = index
        self.functions: dict[tuple[str, int], Optional[cst.FunctionDef]] = {}

    def function(self, path: str, line: int) -> Optional[cst.FunctionDef]:
        """The libcst tree of the function defined at `path`:`line`."""
        key = (path, line)
        if key not in self.functions:
            self.functions[key] = self._function(path, line)
        return self.functions[key]

    def _function(self, path: str, line: int) -> Optional[cst.FunctionDef]:
        found = self.index.source(path)
        if found is None:
            return None
        tree, lines = found[0], found[1].decode("utf-8", "replace").splitlines(True)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == line:
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                text = textwrap.dedent("".join(lines[start - 1:node.end_lineno]))
                try:
                    module = cst.parse_module(text)
                except Exception:  # noqa: BLE001 - an odd body: treated as unknown
                    return None
                found = [s for s in module.body if isinstance(s, cst.FunctionDef)]
                return found[0] if found else None
        return None


def sources(index) -> _Sources:
    return index.memo("weight sources", lambda: _Sources(index))


# -- is a heavy object worth reporting? -------------------------------------------------
# The index calls a class heavy as soon as one attribute is assigned a tensor; what
# matters here is whether an object pins real memory. Not worth reporting: tensors of a
# few literal elements (`torch.zeros(3)`, `torch.tensor([0, n])`, a pointer table built
# from a Python list), modules with no weights (an op such as `QuantFP8(...)`), and
# project classes that hold nothing else. Decided with `ast`, only for what a rule is
# about to report. (Shared by RL602 and RL303.)
_SMALL_ELEMENTS = 4096
_SIZED_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange"})
_DATA_FACTORIES = frozenset({"tensor", "as_tensor"})
_PLAIN_MODULES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
_WEIGHT_MAKERS = frozenset(
    {"register_buffer", "register_parameter", "register_module", "add_module", "create_weights"}
)


# -- torch.nn layers ---------------------------------------------------------------------
# Few kinds of `torch.nn` layer own tensors: those with parameters or buffers (linear,
# convolution, embedding, normalisation, recurrent, attention and transformer layers,
# `PReLU`), the containers of other modules, parameters and buffers themselves. Every
# other `torch.nn` layer - activations, pooling, dropout, padding, losses, reshapes, a
# plain `nn.Module()`, and the ops a backend adds to `torch.nn` (`nn.SwishGLU`) - holds no
# tensor of its own. Told by name parts, so that `LazyConv2d` or `GRUCell` need no entry;
# a loss (`CosineEmbeddingLoss`) or a resampling (`UpsamplingBilinear2d`) only shares a
# word with a weighted kind. Containers count as weighted: they hold what they are given.
_WEIGHTED_LAYER_PARTS = (
    "Linear", "Bilinear", "Conv", "Embedding", "BatchNorm", "InstanceNorm", "LayerNorm",
    "GroupNorm", "RMSNorm", "RNN", "LSTM", "GRU", "Attention", "Transformer", "PReLU",
    "Parameter", "Buffer", "Sequential", "ModuleList", "ModuleDict", "Container", "Parallel",
)


def weightless_layer(qualified: Optional[str]) -> bool:
    """Is `qualified` a `torch.nn` layer with no parameters, buffers or submodules of its
    own (`torch.nn.ReLU`, `torch.nn.Dropout`, `torch.nn.MaxPool2d`, `torch.nn.Module`)?
    Anything else (`torch.nn.Linear`, a project class, a name not under `torch.nn`): False."""
    if not qualified or not qualified.startswith("torch.nn.") or qualified.count(".") != 2:
        return False
    name = qualified.rsplit(".", 1)[1]
    if not name[:1].isupper():
        return False
    if name.endswith("Loss"):  # weights only where a layer is fused in (`LinearCrossEntropyLoss`)
        return "Linear" not in name and not name.startswith("AdaptiveLogSoftmax")
    if name.startswith("Upsampling"):
        return True
    return not any(part in name for part in _WEIGHTED_LAYER_PARTS)


def _int(node: ast.AST) -> Optional[int]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _small_tensor(call: ast.Call, factory: str, local_values) -> bool:
    """A tensor factory call whose size is a few literal elements."""
    name = factory.rsplit(".", 1)[-1]
    if name in _DATA_FACTORIES:
        if not call.args:
            return False
        data = call.args[0]
        if isinstance(data, ast.Name):
            values = local_values(data.id)
            return bool(values) and all(
                isinstance(v, (ast.List, ast.Tuple, ast.ListComp, ast.Constant)) for v in values)
        return isinstance(data, (ast.Constant, ast.List, ast.Tuple, ast.ListComp, ast.UnaryOp))
    if name not in _SIZED_FACTORIES:
        return False
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    if name == "arange":
        bounds = [_int(a) for a in call.args[:3]]
        if not bounds or any(b is None for b in bounds):
            return False
        start, stop = (0, bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
        step = bounds[2] if len(bounds) > 2 else 1
        return step != 0 and abs((stop - start) // step) <= _SMALL_ELEMENTS
    if "size" in keywords:
        sizes = [keywords["size"]]
    elif name == "full":
        sizes = call.args[:1]
    elif name == "randint":
        sizes = call.args[2:3] if len(call.args) > 2 else call.args[1:2]
        sizes = [s for s in sizes if isinstance(s, (ast.Tuple, ast.List))]
    else:
        sizes = list(call.args)
    if len(sizes) == 1 and isinstance(sizes[0], (ast.Tuple, ast.List)):
        sizes = list(sizes[0].elts)
    if not sizes:
        return False
    total = 1
    for size in sizes:
        n = _int(size)
        if n is None:
            return False
        total *= max(n, 0)
    return total <= _SMALL_ELEMENTS


def _innermost(call: ast.Call) -> ast.Call:
    """`torch.empty(n).cuda().half()` -> `torch.empty(n)`."""
    while isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
        call = call.func.value
    return call


class _Weigher:
    """Per project index: which heavy values and classes pin real memory."""

    def __init__(self, index) -> None:
        self.index = index
        self._classes: dict[str, bool] = {}

    # -- classes -----------------------------------------------------------------
    def class_substantial(self, qualified: Optional[str], depth: int = 0) -> bool:
        index = self.index
        resolved = index.resolve(qualified) or qualified
        if not resolved:
            return True
        if resolved in index.heavy_types:
            return True
        summary = index.classes.get(resolved)
        if summary is None:
            return True  # a library type the index calls heavy (`nn.Linear`)
        if resolved in self._classes:
            return self._classes[resolved]
        if depth > _MAX_DEPTH:
            return True
        self._classes[resolved] = False  # guards base-class cycles
        result = False
        for base in summary.bases:
            rb = index.resolve(base) or base
            if rb in _PLAIN_MODULES or base in _PLAIN_MODULES or weightless_layer(rb):
                continue  # a module with no weights of its own: judged by what it holds
            if index.classes.get(rb) is not None:
                if index.is_heavy_class(rb) and self.class_substantial(rb, depth + 1):
                    result = True
                    break
            elif index.is_heavy_class(rb):
                result = True  # derives from a heavy library type with weights
                break
        if not result:
            result = self._body_substantial(summary, depth)
        self._classes[resolved] = result
        return result

    def _body_substantial(self, summary, depth: int) -> bool:
        parsed = self.index.tree(summary.path)
        file = self.index.files.get(summary.path)
        if parsed is None or file is None:
            return True
        node = _classes_by_line(parsed).get(summary.line)
        if node is None:
            return True
        methods = [fn for fn in node.body if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for fn in methods:
            local_values = _ast_locals(fn)
            for n in ast.walk(fn):
                if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    if not any(_on_self(t) for t in targets):
                        continue
                    filled = self._empty_container_filled(n.value, targets, methods, file, summary, depth)
                    if filled if filled is not None else self.ast_substantial(
                            n.value, file, summary, local_values, depth):
                        return True
                elif isinstance(n, ast.Call):
                    name = n.func.attr if isinstance(n.func, ast.Attribute) else (
                        n.func.id if isinstance(n.func, ast.Name) else "")
                    if name in _WEIGHT_MAKERS:
                        return True
                    if name == "setattr" and len(n.args) == 3 and self.ast_substantial(
                            n.args[2], file, summary, local_values, depth):
                        return True
        return False

    def _empty_container_filled(self, value, targets, methods, file, summary, depth) -> Optional[bool]:
        """`self.layers = nn.ModuleList()` holds what the class puts into it later
        (`self.layers.append(m)`, `self.layers[k] = m`): weights only if one of those has
        some. None when `value` is not an empty module container or nothing is put in it
        here (filled elsewhere: judged as a container, i.e. weighted)."""
        if not (isinstance(value, ast.Call) and not value.args and not value.keywords):
            return None
        q = qualified_in(file, value.func)
        if not q or not q.startswith("torch.nn.") or q.rsplit(".", 1)[-1] not in _MODULE_CONTAINERS:
            return None
        names = {t.attr for t in targets if isinstance(t, ast.Attribute)}
        fills = []
        for fn in methods:
            local_values = _ast_locals(fn)
            for n in ast.walk(fn):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                        and n.func.attr in _CONTAINER_FILLS and self_attr(n.func.value) in names:
                    fills += [(v, local_values) for v in n.args[-1:]]
                elif isinstance(n, ast.Assign) and any(
                        isinstance(t, ast.Subscript) and self_attr(t.value) in names for t in n.targets):
                    fills.append((n.value, local_values))
        if not fills:
            return None
        return any(self.ast_substantial(v, file, summary, lv, depth) for v, lv in fills)

    # -- values ------------------------------------------------------------------
    def ast_substantial(self, value: ast.AST, file, owner, local_values, depth: int) -> bool:
        if depth > _MAX_DEPTH:
            return False
        again = lambda v: self.ast_substantial(v, file, owner, local_values, depth + 1)  # noqa: E731
        if isinstance(value, ast.Call):
            call = _innermost(value)
            func = call.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                    and func.value.id == "self" and owner is not None:
                method = owner.methods.get(func.attr)
                return method is not None and self.returns_substantial(method.returns, depth)
            q = qualified_in(file, func)
            return self.call_substantial(q, lambda factory: _small_tensor(call, factory, local_values), depth)
        if isinstance(value, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return again(value.elt)
        if isinstance(value, ast.DictComp):
            return again(value.value)
        if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            return any(again(e) for e in value.elts)
        if isinstance(value, ast.Dict):
            return any(again(v) for v in value.values if v is not None)
        if isinstance(value, ast.IfExp):
            return again(value.body) or again(value.orelse)
        if isinstance(value, ast.BoolOp):
            return any(again(v) for v in value.values)
        if isinstance(value, ast.Name):
            return any(again(v) for v in local_values(value.id))
        return False

    def call_substantial(self, q: Optional[str], small, depth: int) -> bool:
        """Does calling `q` (qualified) build an object that pins real memory? `small`:
        whether a tensor factory call has a few literal elements."""
        if not q:
            return False
        index = self.index
        resolved = index.resolve(q) or q
        if q in TENSOR_FACTORIES or resolved in TENSOR_FACTORIES:
            return not small(resolved if resolved in TENSOR_FACTORIES else q)
        if index.classes.get(resolved) is not None:
            return index.is_heavy_class(resolved) and self.class_substantial(resolved, depth + 1)
        if weightless_layer(resolved):
            return False  # nn.ReLU, nn.Dropout
        if index.is_heavy_class(resolved):
            return True  # nn.Linear, nn.Parameter, a configured heavy type
        function = index.functions.get(resolved)
        if function is not None:
            return self.returns_substantial(function.returns, depth)
        return False

    def returns_substantial(self, returns, depth: int) -> bool:
        return any(self.index.is_heavy_class(r) and self.class_substantial(r, depth + 1) for r in returns)


_MODULE_CONTAINERS = frozenset({"ModuleList", "ModuleDict", "Sequential", "ParameterList", "ParameterDict"})
_CONTAINER_FILLS = frozenset({"append", "extend", "insert", "update", "add_module"})


def _on_self(target: ast.AST) -> bool:
    while isinstance(target, ast.Subscript):
        target = target.value
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
        and target.value.id == "self"


def _classes_by_line(tree: ast.Module) -> dict[int, ast.ClassDef]:
    """The module-level classes of `tree` by first line (the first of a line), kept on the
    tree: a search of the body per class took minutes on a file of thousands."""
    found: Optional[dict[int, ast.ClassDef]] = getattr(tree, "_retainlint_classes", None)
    if found is None:
        found = {}
        for n in tree.body:
            if isinstance(n, ast.ClassDef):
                found.setdefault(n.lineno, n)
        setattr(tree, "_retainlint_classes", found)
    return found


def _ast_locals(fn: ast.AST):
    """name -> values assigned to it in `fn` (parameters have none: handed in)."""
    table: Optional[dict[str, list]] = None

    def lookup(name: str) -> list:
        nonlocal table
        if table is None:
            table = {}
            for n in ast.walk(fn):
                if isinstance(n, ast.Assign):
                    for t in n.targets:
                        if isinstance(t, ast.Name):
                            table.setdefault(t.id, []).append(n.value)
                elif isinstance(n, ast.AnnAssign) and n.value is not None and isinstance(n.target, ast.Name):
                    table.setdefault(n.target.id, []).append(n.value)
        return table.get(name, [])

    return lookup


# Per file being checked (its findings must depend, in a recording index, on every
# file these answers were read from: answers are not shared between files).
_WEIGHERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def weigher(ctx) -> _Weigher:
    found = _WEIGHERS.get(ctx)
    if found is None:
        found = _WEIGHERS[ctx] = _Weigher(ctx.index)
    return found


def substantial_value(ctx, value: cst.BaseExpression, fn: Optional[cst.FunctionDef]) -> bool:
    """Does a heavy `value` (a call, as the file spells it) pin real memory, rather than a
    few literal elements or an object with no weights? Unknown: True."""
    if not isinstance(value, cst.Call):
        return True
    try:
        expr = ast.parse(ctx.code(value).strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    if not isinstance(expr, ast.Call):
        return True
    call = _innermost(expr)
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
            and call.func.value.id in ("self", "cls"):
        return True  # a method of the class: the oracle judged its annotation
    q = ctx.absolute(_dotted_qualname(ctx, call.func))
    if q is None:
        return True

    def local_values(name: str) -> list:
        if fn is None:
            return []
        found = []
        for v, _ in ctx.heavy.local_assignments(fn).get(name, ()):
            if v is None:
                continue
            try:
                found.append(ast.parse(ctx.code(v).strip(), mode="eval").body)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                found.append(ast.Name(id="?"))
        return found

    w = weigher(ctx)
    index = ctx.index
    resolved = index.resolve(q) or q
    if weightless_layer(resolved):
        return False  # nn.ReLU(), nn.Dropout(0.1)
    if q not in TENSOR_FACTORIES and resolved not in TENSOR_FACTORIES \
            and index.classes.get(resolved) is None and index.functions.get(resolved) is None:
        return True  # a library type or function the oracle knows is heavy
    return w.call_substantial(q, lambda factory: _small_tensor(call, factory, local_values), 0)


def _dotted_qualname(ctx, func: ast.AST) -> Optional[str]:
    """Qualify an `ast` callee with this file's imports (as `ctx.qualname` would)."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    head = ctx.qualname(cst.Name(func.id)) or func.id
    return ".".join([head, *reversed(parts)])


# Calls that build a new array or tensor, in numpy and torch (`np.indices(shape)`,
# `torch.stack(parts)`): what they return weighs what its shape says, not a few bytes.
_ARRAY_MAKERS = frozenset(q.rpartition(".")[2] for q in TENSOR_FACTORIES) | frozenset((
    "linspace logspace eye identity indices meshgrid mgrid stack vstack hstack concatenate "
    "cat array asarray tile outer"
).split())
_REDUCTIONS = frozenset("sum mean max min prod all any item tolist argmax argmin std var norm".split())


def returns_arrays(ctx, fn: cst.FunctionDef) -> bool:
    """Does `fn` return an array or tensor it builds with numpy or torch: `np.indices(s)`,
    arithmetic on one (`np.ones(s) * f`), a method keeping its shape (`.astype(...)`), a
    tuple of them, or a local assigned one? Not a reduction of one (`.sum()`, `float(...)`)."""
    assigned = ctx.heavy.local_assignments(fn)

    def builds(expr: Optional[cst.CSTNode], depth: int = 0) -> bool:
        if depth > 4:
            return False
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value not in _REDUCTIONS \
                    and builds(expr.func.value, depth + 1):
                return True
            q = ctx.absolute(ctx.qualname(expr.func)) or ""
            root, _, name = q.partition(".")
            return root in ("numpy", "torch") and name.rpartition(".")[2] in _ARRAY_MAKERS
        if isinstance(expr, cst.BinaryOperation):
            return builds(expr.left, depth + 1) or builds(expr.right, depth + 1)
        if isinstance(expr, (cst.Tuple, cst.List)):
            return any(builds(e.value, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.Name):
            return any(builds(v, depth + 1) for v, _ in assigned.get(expr.value, ()))
        return False

    todo = children(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue  # their returns are not `fn`'s
        if isinstance(node, cst.Return) and builds(node.value):
            return True
        todo.extend(children(node))
    return False


def holds_callers_collection(ctx, cls: cst.ClassDef) -> bool:
    """Is an instance of `cls` a collection of what its caller hands it: `__init__` keeps a
    parameter as it is (`self.data = data`) and `__len__` returns `len(self.data)`? It then
    weighs what the caller's data weighs (a dataset's samples), however light the class."""
    methods = ctx.methods(cls)
    init, length = methods.get("__init__"), methods.get("__len__")
    if init is None or length is None:
        return False
    params = {p.name.value for p in (*init.params.params, *init.params.kwonly_params)} - {"self"}
    kept = {self_attribute(t.target) for n in iter_nodes(init.body) if isinstance(n, cst.Assign)
            and isinstance(n.value, cst.Name) and n.value.value in params for t in n.targets} - {None}
    return any(isinstance(r, cst.Return) and isinstance(call := r.value, cst.Call)
               and isinstance(call.func, cst.Name) and call.func.value == "len" and len(call.args) == 1
               and self_attribute(call.args[0].value) in kept
               for r in iter_nodes(length.body))
