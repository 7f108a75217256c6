"""What a value holds: does it reach another object (`reaches`: the object itself, a
container or wrapper of it, a bound method, a closure over it), does it hold something
heavy, in which scopes names live. Shared by the rules that ask whether a stored value
keeps its key, its owner or a frame alive."""

from __future__ import annotations
from typing import Optional
import libcst as cst
from retainlint.project.names import WRAPPING_CALLS
from retainlint.analysis.cstutil import body_functions, is_self
from retainlint.analysis.heavy import find_param
from retainlint.analysis.function_names import FunctionNames, function_bindings
from retainlint.analysis.walk import visit



_NON_HOLDING = frozenset(
    {
        "id", "len", "str", "repr", "hash", "type", "bool", "int", "float", "isinstance",
        "issubclass", "hasattr", "callable", "format", "sum", "any",
        "all", "getattr", "vars", "dir", "hex", "oct", "bin", "abs", "round", "ascii",
        "weakref.ref", "weakref.proxy", "weakref.WeakMethod", "weakref.finalize",
        "copy.copy", "copy.deepcopy", "pickle.dumps", "json.dumps",
        # text of an exception or traceback
        "traceback.format_exception", "traceback.format_exception_only", "traceback.format_tb",
        "traceback.print_exception", "traceback.extract_tb",
    }
)
_MAX_DEPTH = 4
_BUILDERS = (cst.Tuple, cst.List, cst.Set, cst.Dict, cst.Call, cst.Lambda)

def _callee_name(ctx, func: cst.BaseExpression) -> Optional[str]:
    if isinstance(func, cst.Subscript):  # `Wrapper[T](x)`
        func = func.value
    qualified = ctx.qualname(func)
    if qualified:
        return qualified
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _is_bound_method(ctx, owner_cls: Optional[cst.ClassDef], attr: str) -> bool:
    """Is `x.attr` a bound method? `forward`/`__call__`, or a method some class of the
    file defines (of `owner_cls` only, when the owner's class is known)."""
    if attr in ("forward", "__call__"):
        return True
    owners = [owner_cls] if owner_cls is not None else list(ctx.classes.values())
    return any(attr in methods and _binds(ctx, methods[attr])
               for methods in (ctx.methods(c) for c in owners))


# Decorators after which `x.attr` hands out no method bound to `x`: a property's value
# (`e.key` reading `self.args[0]`), a static or class method.
_UNBOUND = frozenset({"property", "cached_property", "staticmethod", "classmethod"})


def _binds(ctx, fn: cst.FunctionDef) -> bool:
    """Is `x.<fn>` a bound method (not a property - `@x.setter` included - nor a
    static or class method)?"""
    for d in fn.decorators:
        name = ctx_code(ctx, d.decorator).strip()
        if name.rsplit(".", 1)[-1] in _UNBOUND | {"setter", "getter", "deleter"}:
            return False
    return True


def _constructor_keeps(ctx, callee: str, index: Optional[int], arg: cst.Arg) -> bool:
    """Does the class `callee` keep the argument it receives at position `index` (or by
    `arg`'s keyword)? Unknown classes are assumed to; a class of this file whose
    `__init__` only reads attributes of that parameter (`self.n = func.__code__.co_argcount`)
    does not."""
    cls = ctx.classes.get(callee)
    if cls is None or arg.star:
        return True
    init = ctx.methods(cls).get("__init__")
    if init is None:
        return True  # inherited `__init__`, dataclass fields, named tuples: they keep it
    params = init.params
    positional = [*params.posonly_params, *params.params][1:]  # without `self`
    name = None
    if index is not None:
        if index < len(positional):
            name = positional[index].name.value
        elif isinstance(params.star_arg, cst.Param):
            return True
    elif arg.keyword is not None:
        name = arg.keyword.value
        known = {p.name.value for p in (*positional, *params.kwonly_params)}
        if name not in known:
            return True  # into **kwargs
    if name is None:
        return True
    use = _RawUse(ctx, name)
    visit(init.body, use)
    return use.found


def keeps_argument(ctx, call: cst.Call, name: str) -> bool:
    """Is `call` a constructor of a class of this file whose `__init__` keeps the
    argument given as the plain name `name` (`Executor(context, self)` storing
    `self.context = context`)? Unknown classes say no: this asks for proof."""
    callee = _callee_name(ctx, call.func)
    if callee is None or callee not in ctx.classes or "__init__" not in ctx.methods(ctx.classes[callee]):
        return False
    positional = 0
    for arg in call.args:
        index = None
        if arg.keyword is None and not arg.star:
            index, positional = positional, positional + 1
        if isinstance(arg.value, cst.Name) and arg.value.value == name and not arg.star:
            if _constructor_keeps(ctx, callee, index, arg):
                return True
    return False


class _RawUse(cst.CSTVisitor):
    """Is `name` used other than through its attributes (`name.x`), as the argument of
    a call whose result never holds it (`len(name)`, `weakref.ref(name)`), or in a test
    (`if name is not None:`, `if name:`)?"""

    def __init__(self, ctx, name: str) -> None:
        self.ctx = ctx
        self.name = name
        self.found = False

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        # `name is None`, `name == other`: a bool, nothing kept
        for part in (node.left, *(c.comparator for c in node.comparisons)):
            if not self._is_name(part):
                visit(part, self)
        return False

    def visit_If(self, node: cst.If) -> bool:
        if not self._is_name(node.test):
            visit(node.test, self)
        visit(node.body, self)
        if node.orelse is not None:
            visit(node.orelse, self)
        return False

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        for part in (node.test, node.body, node.orelse):
            if part is not node.test or not self._is_name(part):
                visit(part, self)
        return False

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> bool:
        return not (isinstance(node.operator, cst.Not) and self._is_name(node.expression))

    def _is_name(self, node) -> bool:
        return isinstance(node, cst.Name) and node.value == self.name

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if self._is_name(node.value):
            if node.attr.value in ("forward", "__call__", "__self__"):
                self.found = True
            return False
        visit(node.value, self)  # `self.name = ...`: the attribute's name is no use
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        func = node.func
        plain = func.value if isinstance(func, cst.Name) else self.ctx.qualname(func)
        if plain in _NON_HOLDING or self.ctx.qualname(func) in _NON_HOLDING:
            for a in node.args:
                if not self._is_name(a.value):
                    visit(a.value, self)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.found = True


class _NameUse(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.found = False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.found = True

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        visit(node.value, self)  # `x.name` is not a use of `name`
        return False


def mentions(node: cst.CSTNode, name: str) -> bool:
    use = _NameUse(name)
    visit(node, use)
    return use.found


def reaches(ctx, value: Optional[cst.BaseExpression], key: cst.BaseExpression,
            function: Optional[cst.FunctionDef], cls: Optional[cst.ClassDef] = None,
            depth: int = 0, seen: frozenset = frozenset()) -> Optional[cst.BaseExpression]:
    """Does `value` (evaluated in `function`, a method of `cls` if any) hold `key`: is it
    the key, a container or class instance built around it, a bound method of it, a
    closure over it? Returns the sub-expression that holds the key, or None."""
    if value is None or depth > _MAX_DEPTH:
        return None
    key_code = ctx.code(key).strip()
    if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)) and ctx.code(value).strip() == key_code:
        return value
    nxt = depth + 1
    if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
        for e in value.elements:
            if reaches(ctx, e.value, key, function, cls, nxt, seen) is not None:
                return value
        return None
    if isinstance(value, cst.Dict):
        for e in value.elements:
            parts = (e.key, e.value) if isinstance(e, cst.DictElement) else (e.value,)
            if any(reaches(ctx, p, key, function, cls, nxt, seen) is not None for p in parts):
                return value
        return None
    if isinstance(value, cst.IfExp):
        return (reaches(ctx, value.body, key, function, cls, nxt, seen)
                or reaches(ctx, value.orelse, key, function, cls, nxt, seen))
    if isinstance(value, cst.BooleanOperation):
        return (reaches(ctx, value.left, key, function, cls, nxt, seen)
                or reaches(ctx, value.right, key, function, cls, nxt, seen))
    if isinstance(value, cst.NamedExpr):
        return reaches(ctx, value.value, key, function, cls, nxt, seen)
    if isinstance(value, cst.Call):
        callee = _callee_name(ctx, value.func)
        if not callee or callee in _NON_HOLDING or callee.startswith("builtins."):
            return None
        last = callee.rsplit(".", 1)[-1]
        # a class: capitalised by convention, or any class of this file (`_RemoteError`)
        if callee in WRAPPING_CALLS or last[:1].isupper() or callee in ctx.classes:
            positional = 0
            for arg in value.args:
                index = None
                if arg.keyword is None and not arg.star:
                    index, positional = positional, positional + 1
                if reaches(ctx, arg.value, key, function, cls, nxt, seen) is not None and (
                    callee in WRAPPING_CALLS or _constructor_keeps(ctx, callee, index, arg)
                ):
                    return value
        return None
    if isinstance(value, cst.Attribute) and ctx.code(value.value).strip() == key_code:
        owner = cls if key_code == "self" else None
        return value if _is_bound_method(ctx, owner, value.attr.value) else None
    if isinstance(value, cst.Lambda) and isinstance(key, cst.Name):
        params = value.params
        shadowed = any(
            p.name.value == key.value
            for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        )
        return value if not shadowed and mentions(value.body, key.value) else None
    if isinstance(value, cst.Name) and function is not None and value.value not in seen:
        if find_param(function, value.value) is not None:
            return None
        # Only values built in this function count: a plain alias (`mod = key`) is
        # usually rebound before use (`mod = getattr(mod, name)`, `for mod in ...`).
        for assigned, _ in ctx.heavy.local_assignments(function).get(value.value, ()):
            if isinstance(assigned, _BUILDERS) and reaches(
                ctx, assigned, key, function, cls, nxt, seen | {value.value}
            ) is not None:
                return value
    return None


def holds_heavy(ctx, expr: Optional[cst.BaseExpression], function, cls, depth: int = 0) -> bool:
    """Is `expr` heavy, or does it obviously hold something heavy: a container with a
    heavy element, or `self` of a class with a heavy attribute (`self.model = model`
    where `model: nn.Module`)?"""
    if expr is None or depth > 3:
        return False
    oracle = ctx.heavy
    if oracle.is_heavy_value(expr, function, cls):
        return True
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return any(holds_heavy(ctx, e.value, function, cls, depth + 1) for e in expr.elements)
    if isinstance(expr, cst.Dict):
        return any(
            holds_heavy(ctx, e.value, function, cls, depth + 1) for e in expr.elements
        )
    if is_self(expr) and cls is not None:
        return has_heavy_attribute(ctx, cls)
    if isinstance(expr, cst.Attribute) and cls is not None and ctx_code(ctx, expr.value) == "self":
        return has_heavy_attribute(ctx, cls, expr.attr.value) or (
            _is_bound_method(ctx, cls, expr.attr.value) and has_heavy_attribute(ctx, cls))
    return False


def has_heavy_attribute(ctx, cls: cst.ClassDef, only: Optional[str] = None) -> bool:
    """Does some method of `cls` assign `self.<attr>` a heavy value (or annotate it so)?"""
    oracle = ctx.heavy
    if oracle.is_heavy_class(cls):
        return only is None
    for method in ctx.methods(cls).values():
        for target, assigned in oracle.local_assignments(method).items():
            if not target.startswith("self.") or (only is not None and target != f"self.{only}"):
                continue
            for value, ann in assigned:
                if oracle.is_heavy_annotation(ann) or (
                    value is not None and oracle.is_heavy_value(value, method, cls)
                ):
                    return True
    return False


class Scopes:
    """Turns a container expression into a reference that survives across functions:
    ("g", name) a module global, ("a", class, name) a class or instance attribute,
    ("l", id(function), name) a function's local (closures resolve to the function
    that binds the name)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._bindings: dict[int, FunctionNames] = {}

    def bindings(self, fn: cst.FunctionDef) -> FunctionNames:
        found = self._bindings.get(id(fn))
        if found is None:
            found = self._bindings[id(fn)] = function_bindings(fn)
        return found

    def ref(self, expr: cst.BaseExpression) -> Optional[tuple]:
        scope = self.ctx.scope
        if isinstance(expr, cst.Name):
            name = expr.value
            if not scope.functions:
                if scope.classes:
                    return ("a", scope.classes[-1].name.value, name)
                return ("g", name)
            for fn in reversed(scope.functions):
                b = self.bindings(fn)
                if name in b.globals:
                    return ("g", name)
                if name in b.nonlocals:
                    continue
                if name in b.bound or _is_param(fn, name):
                    return ("l", id(fn), name)
            return ("g", name)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, (cst.Name, cst.Call)):
            owner, attr = expr.value, expr.attr.value
            if isinstance(owner, cst.Name):
                if owner.value in ("self", "cls") and scope.functions and scope.classes:
                    return ("a", scope.classes[-1].name.value, attr)
                if owner.value in self.ctx.classes:
                    return ("a", owner.value, attr)
            elif (
                self.ctx.qualname(owner.func) in ("type", "builtins.type")
                and len(owner.args) == 1
                and ctx_code(self.ctx, owner.args[0].value) == "self"
                and scope.classes
            ):
                return ("a", scope.classes[-1].name.value, attr)
        return None


def ctx_code(ctx, node: cst.CSTNode) -> str:
    return ctx.code(node).strip()


def _is_param(fn: cst.FunctionDef, name: str) -> bool:
    if find_param(fn, name) is not None:
        return True
    params = fn.params
    return any(
        isinstance(p, cst.Param) and p.name.value == name for p in (params.star_arg, params.star_kwarg)
    )


def first_slice(sub: cst.Subscript) -> Optional[cst.BaseExpression]:
    if len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index):
        return sub.slice[0].slice.value
    return None




# -- values that hold no other object ---------------------------------------------------
# Numbers, text, bytes and paths (a path holds only its text): dropping one frees nothing
# worth a finding, and whatever else refers to it keeps nothing else alive.
_IMMUTABLE_TYPES = frozenset(
    {"int", "float", "bool", "complex", "str", "bytes", "None", "pathlib.Path", "pathlib.PurePath",
     "pathlib.PosixPath", "pathlib.WindowsPath", "pathlib.PurePosixPath", "pathlib.PureWindowsPath"}
)
_IMMUTABLE_TYPES = _IMMUTABLE_TYPES | frozenset(f"builtins.{t}" for t in _IMMUTABLE_TYPES if "." not in t)
# Calls whose result is such a value whatever they are given.
_IMMUTABLE_RESULTS = _IMMUTABLE_TYPES | frozenset(
    {"len", "id", "hash", "repr", "ascii", "format", "hex", "oct", "bin", "os.fspath", "os.fsencode",
     "os.fsdecode", "os.getpid", "time.time", "time.monotonic", "time.perf_counter"}
) | frozenset(
    f"{module}.{name}" for module in ("os.path", "posixpath", "ntpath")
    for name in ("join", "abspath", "realpath", "dirname", "basename", "normpath", "relpath",
                 "expanduser", "expandvars")
)
_LITERALS = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString, cst.Integer, cst.Float,
             cst.Imaginary)


def immutable_annotation(ctx, ann: Optional[cst.BaseExpression]) -> bool:
    """`int`, `Optional[Path]`, `str | None`, `Union[int, float]`: only values that hold
    no other object."""
    if ann is None:
        return False
    if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
        return immutable_annotation(ctx, ann.left) and immutable_annotation(ctx, ann.right)
    if isinstance(ann, cst.Subscript):
        if ctx.qualname(ann.value) not in ("typing.Optional", "typing.Union"):
            return False
        parts = [s.slice.value for s in ann.slice if isinstance(s.slice, cst.Index)]
        return bool(parts) and all(immutable_annotation(ctx, p) for p in parts)
    if isinstance(ann, cst.Name) and ann.value == "None":
        return True
    return ctx.qualname(ann) in _IMMUTABLE_TYPES


def immutable_value(ctx, value: Optional[cst.BaseExpression], function: Optional[cst.FunctionDef],
                    depth: int = 0) -> bool:
    """Is `value` (evaluated in `function`) surely a number, text, bytes or a path: a
    literal, such a constructor or a call of a project function annotated to return one,
    a parameter annotated as one, a local only ever assigned one, operations on them?"""
    if value is None or depth > _MAX_DEPTH:
        return False
    nxt = depth + 1
    if isinstance(value, _LITERALS):
        return True
    if isinstance(value, cst.Name):
        if value.value in ("None", "True", "False"):
            return True
        if function is None:
            return False
        param = find_param(function, value.value)
        if param is not None:
            return param.annotation is not None and immutable_annotation(ctx, param.annotation.annotation)
        assigned = ctx.heavy.local_assignments(function).get(value.value, ())
        return bool(assigned) and all(
            immutable_annotation(ctx, ann.annotation) if ann is not None and v is None
            else immutable_value(ctx, v, function, nxt) for v, ann in assigned)
    if isinstance(value, cst.UnaryOperation):
        return immutable_value(ctx, value.expression, function, nxt)
    if isinstance(value, cst.BinaryOperation):
        return immutable_value(ctx, value.left, function, nxt) and immutable_value(ctx, value.right, function, nxt)
    if isinstance(value, cst.BooleanOperation):
        return immutable_value(ctx, value.left, function, nxt) and immutable_value(ctx, value.right, function, nxt)
    if isinstance(value, cst.IfExp):
        return immutable_value(ctx, value.body, function, nxt) and immutable_value(ctx, value.orelse, function, nxt)
    if isinstance(value, cst.Call):
        callee = ctx.qualname(value.func)
        if callee in _IMMUTABLE_RESULTS:
            return True
        index = ctx.index
        found = index.functions.get(index.resolve(ctx.absolute(callee)) or "") if callee else None
        return found is not None and bool(found.returns) and all(r in _IMMUTABLE_TYPES for r in found.returns)
    return False


# -- attributes that hold the caller's object ----------------------------------------------


class _OtherBindings(cst.CSTVisitor):
    """Binds `self.<attr>` other than by a plain assignment: unpacking, a `for` or `with`
    target, an augmented assignment."""

    def __init__(self, attr: str) -> None:
        self.attr = attr
        self.found = False

    def _check(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._check(element.value)
        elif isinstance(target, cst.Attribute) and is_self(target.value) and target.attr.value == self.attr:
            self.found = True

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if isinstance(t.target, (cst.Tuple, cst.List)):
                self._check(t.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._check(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._check(node.asname.name)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._check(node.target)


def caller_supplied(ctx, cls: cst.ClassDef, attr: str) -> bool:
    """Is `self.attr` only ever a parameter as given (`self.conn = conn`, the parameter
    not rebound first) or None: the caller's object, which the class never builds?"""
    seen = False
    for fn in body_functions(cls):
        other = _OtherBindings(attr)
        visit(fn.body, other)
        if other.found:
            return False
        assignments = ctx.heavy.local_assignments(fn)
        for value, _ in assignments.get(f"self.{attr}", ()):
            if isinstance(value, cst.Name) and value.value == "None":
                continue
            if not isinstance(value, cst.Name) or find_param(fn, value.value) is None \
                    or value.value in assignments:  # `conn = Pooled(conn)`: made here
                return False
            seen = True
    return seen
