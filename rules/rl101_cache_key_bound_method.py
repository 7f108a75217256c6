"""RL101 cache-key-bound-method."""

from __future__ import annotations

import ast
import os
import weakref
from typing import Optional

import libcst as cst

from retainlint.cstutil import decorator_names
from retainlint.finding import Applicability, Position, Related, Severity
from retainlint.heavy import HEAVY_TYPES, TENSOR_FACTORIES
from retainlint.imports import absolute_import
from retainlint.index import METHOD_NAMES, CACHE_DECORATORS
from retainlint.nodes import FileNodes, dotted
from retainlint.prefilter import words
from retainlint.rule import Example, RelatedNode, Rule

_DECORATOR_TOKENS = (b"lru_cache", b"functools.cache", b"@cache", b"import cache", b"alru_cache")
_PROPERTIES = frozenset({"property", "builtins.property", "functools.cached_property"})
_LOGGERS = frozenset({"logging.Logger", "logging.LoggerAdapter"})


class CacheKeyBoundMethod(Rule):
    code = "RL101"
    name = "cache-key-bound-method"
    summary = "A bound method, `self` or a model is passed to an `lru_cache`d function, whose cache keeps it alive"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    triggers = ("cache",)
    docs = """
## What it does
Reports a call to a function decorated with `functools.lru_cache` / `functools.cache`
(any spelling or alias, `async_lru.alru_cache`, or a decorator of the project that wraps
one of them) with an argument that is a bound method (`model.forward`, `self.compute`,
a local assigned from `getattr(model, "forward")`), `self`, or a heavy object (a model,
a tensor). The call may be in any file of the project: the report is at the call site,
with the cached definition as related location.

The cached definition itself is reported too when bound methods reach it (from any
file), or when its parameters are annotated as heavy types (`def get_fqns(model:
nn.Module)`: a library API whose callers pass models); that finding carries the fix.

## Why it leaks
The cache keeps its keys alive. A bound method holds `__self__`, so the instance - a
model with all its GPU tensors - lives as long as the cache: for an unbounded cache,
forever; for a bounded one, until evicted.

## Incident
A helper `supports_kw(callable, kw_name)` was `@lru_cache`d and called with
`model.forward`; the model could never be freed after shutdown. The fix moved the cached
body to `_supports_kw`, and a thin uncached `supports_kw` unwraps `callable.__func__`
before calling it.

## Example
```python
@functools.lru_cache
def takes_kwarg(fn, name):
    return name in inspect.signature(fn).parameters

class Runner:
    def __init__(self, model):
        if takes_kwarg(model.forward, "positions"):   # RL101
            ...
```

## Fix (unsafe, at the cached definition)
When bound methods reach it (and no parameter is annotated heavy), the cached function is renamed `_<name>`, and an uncached `<name>` with the same
signature replaces bound-method arguments by their `__func__` before calling it (and
keeps `cache_clear` reachable). Unsafe because `inspect.signature` of a plain function
includes `self`, so code that inspects what it receives may see a difference.

## Not reported
Plain functions, classes, strings, numbers and tuples of them; module-level functions
passed by name; `type(obj).method` and `Class.method` (already unbound); methods of the
class itself (`self.method(...)` calls: see RL102).
"""

    valid = [
        """
import functools

@functools.lru_cache
def takes_kwarg(fn, name):
    return name

def helper():
    pass

class Runner:
    def __init__(self, model):
        takes_kwarg(helper, "x")
        takes_kwarg(type(model).forward, "x")
        takes_kwarg(Runner.__init__, "x")
        takes_kwarg("text", 3)
""",
        # the facade pattern: the cached function only ever sees unwrapped functions
        """
from functools import lru_cache

@lru_cache
def _supports_kw(fn, name):
    return name

def supports_kw(fn, name):
    fn = getattr(fn, "__func__", fn)
    return _supports_kw(fn, name)

class Runner:
    def __init__(self, model):
        supports_kw(model.forward, "x")
""",
    ]

    invalid = [
        Example(
            """
import functools
import inspect

@functools.lru_cache
def takes_kwarg(fn, name):
    \"\"\"Does `fn` take `name`?\"\"\"
    return name in inspect.signature(fn).parameters

class Runner:
    def __init__(self, model):
        self.model = model
        if takes_kwarg(model.forward, "positions"):
            pass
        takes_kwarg(self, "x")
""",
            lines=[6, 13, 15],
            fixed="""
import functools
import inspect

@functools.lru_cache
def _takes_kwarg(fn, name):
    \"\"\"Does `fn` take `name`?\"\"\"
    return name in inspect.signature(fn).parameters


def takes_kwarg(fn, name):
    \"\"\"Uncached facade: bound methods are unwrapped before `_takes_kwarg` caches them.\"\"\"
    fn = getattr(fn, "__func__", fn)
    name = getattr(name, "__func__", name)
    return _takes_kwarg(fn, name)


takes_kwarg.cache_clear = _takes_kwarg.cache_clear

class Runner:
    def __init__(self, model):
        self.model = model
        if takes_kwarg(model.forward, "positions"):
            pass
        takes_kwarg(self, "x")
""",
        ),
        # a local bound from getattr, aliased decorator, keyword-only parameter
        Example(
            """
from functools import lru_cache as memo

@memo(maxsize=None)
def supports_kw(fn, kw, *, strict=False):
    return kw

def check(model):
    forward = getattr(model, "forward", None)
    return supports_kw(forward, "x", strict=True)
""",
            lines=[5, 10],
            fixed="""
from functools import lru_cache as memo

@memo(maxsize=None)
def _supports_kw(fn, kw, *, strict=False):
    return kw


def supports_kw(fn, kw, *, strict=False):
    \"\"\"Uncached facade: bound methods are unwrapped before `_supports_kw` caches them.\"\"\"
    fn = getattr(fn, "__func__", fn)
    kw = getattr(kw, "__func__", kw)
    strict = getattr(strict, "__func__", strict)
    return _supports_kw(fn, kw, strict=strict)


supports_kw.cache_clear = _supports_kw.cache_clear

def check(model):
    forward = getattr(model, "forward", None)
    return supports_kw(forward, "x", strict=True)
""",
        ),
        # a tensor attribute of the instance (assigned in another method) as a cache key
        Example(
            """
import functools
import torch


@functools.lru_cache(maxsize=8)
def scaled(inv_freq, n):
    return inv_freq * n


class Rotary(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inv_freq = torch.ones(4)

    def forward(self, n: int):
        return scaled(self.inv_freq, n)
""",
            lines=[17],
        ),
        # a library API annotated with a heavy parameter type: reported at the definition
        Example(
            """
import functools
from torch import nn

@functools.cache
def get_fqns(model: nn.Module, name: str):
    return [name]
""",
            lines=[6],
        ),
    ]

    scans = True

    @classmethod
    def scan(cls, nodes: FileNodes):
        """(decorated module-level functions: (name, qualified decorators, names their
        parameters are annotated with); decorated module-level function -> what may make
        the arguments it is called with here retained (`Values`); local class -> bases;
        `hidden_imports`). Calls of other files' functions are left to the index's
        `bound_calls`: a pass over every call here would cost more than the parse saved."""
        tree = nodes.tree
        functions = {}  # the last definition of a name wins, as in the rule
        for node in tree.body:
            if isinstance(node, _DEFS):
                functions[node.name] = node
        decorated = {name: fn for name, fn in functions.items() if fn.decorator_list}
        hidden = hidden_imports(nodes)
        if not decorated:
            return (), {}, {}, hidden
        values = Values(nodes, bound=True)
        imports = values.imports
        defs = []
        for name, fn in decorated.items():
            decorators = tuple(q for q in (decorator_name(imports, d) for d in fn.decorator_list) if q)
            a = fn.args
            annotated = frozenset(q for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)
                                  for q in annotation_names(imports, p.annotation))
            defs.append((name, decorators, annotated))
        local: dict[str, set[str]] = {}
        for call in nodes.of(ast.Call):
            func = call.func
            if type(func) is ast.Name and func.id in decorated:
                evidence = values.arguments(call)
                if evidence:
                    local.setdefault(func.id, set()).update(evidence)
        named = [q for d in defs for q in d[2]] + [q for found in local.values() for q in found]
        return tuple(defs), {k: frozenset(v) for k, v in local.items()}, values.bases(named), hidden

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """A cached module-level function here with a parameter annotated as heavy, or
        bound-method callers, or called here with something that may be retained (`self`,
        a bound method, or what may be heavy by the names involved); or a call of a cached
        function of another file passing something that may be a bound method (the index
        lists those calls)."""
        summary = getattr(data, "summary", None)
        if summary is None:
            return (any(token in data for token in _DECORATOR_TOKENS)
                    or not words(data).isdisjoint(index.cached_names | index.cache_decorator_names))
        found = summary.scans.get(cls.code)
        if found is None:  # no "cache" here: only the calls the index lists
            return calls_cached(summary, index, {})
        defs, local, bases, hidden = found
        if defs:
            heavy = Heavy(summary, settings, index, bases)
            for name, decorators, annotated in defs:
                if not any(d in CACHE_DECORATORS or index.is_cache_decorator(heavy.full(d))
                           for d in decorators):
                    continue
                if name in local and heavy.any(local[name]):
                    return True
                if index.bound_callers.get(f"{summary.module}.{name}") or heavy.any(annotated):
                    return True
        return calls_cached(summary, index, hidden)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._local_cached: dict[str, cst.FunctionDef] = {
            name: fn for name, fn in ctx.functions.items() if self._is_cached(fn)
        }

    def _is_cached(self, fn: cst.FunctionDef) -> bool:
        index = self.ctx.index
        return any(
            q in CACHE_DECORATORS or index.is_cache_decorator(self.ctx.absolute(q))
            for q in decorator_names(self.ctx, fn)
        )

    # -- call sites ----------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        target = self._cached_target(node.func)
        if target is None:
            return
        name, related = target
        fn, cls = self.ctx.scope.function, self.ctx.scope.method_class
        for arg in node.args:
            if arg.star:
                continue
            what = self._retained(arg.value, fn, cls)
            if what:
                self.report(
                    arg.value,
                    f"`{self.ctx.code(arg.value)}` ({what}) is passed to cached `{name}`: the "
                    "cache keeps it - and the instance it belongs to - alive as long as the entry "
                    "lives (for an unbounded cache, forever)",
                    related=related,
                )

    def _cached_target(self, func: cst.BaseExpression):
        """(name, related location) when `func` names a cached module-level function."""
        if isinstance(func, cst.Name) and func.value in self._local_cached:
            definition = self._local_cached[func.value]
            return func.value, [RelatedNode(f"`{func.value}` is cached here", definition.name)]
        if isinstance(func, cst.Name) and func.value in self.ctx.functions:
            return None  # defined here, not cached
        qualified = self.ctx.qualname(func)
        if not qualified or qualified.split(".", 1)[0] in ("self", "cls"):
            return None
        summary = self.ctx.index.cached_function(self.ctx.absolute(qualified))
        if summary is None or summary.is_method:
            return None
        where = Position(summary.line, summary.column)
        related = Related(f"`{summary.qualname}` is cached here", _display(summary.path), where, where)
        return self.ctx.code(func), [related]

    def _retained(self, value: cst.BaseExpression, fn, cls, depth: int = 0) -> Optional[str]:
        """What kind of long-lived object `value` is, if it is one the cache would pin."""
        if isinstance(value, cst.Name):
            if value.value == "self" and fn is not None and cls is not None:
                if self._process_lifetime(cls):
                    return None
                return "the instance itself"
            if fn is not None and depth < 2:
                for assigned, _ in self.ctx.heavy.local_assignments(fn).get(value.value, ()):
                    if assigned is not None:
                        kind = self._retained(assigned, fn, cls, depth + 1)
                        if kind:
                            return kind
        if isinstance(value, cst.Call) and self.ctx.qualname(value.func) in ("getattr", "builtins.getattr"):
            args = value.args
            if len(args) >= 2 and isinstance(args[1].value, cst.SimpleString):
                attr = args[1].value.evaluated_value
                if isinstance(attr, str) and self._is_method_name(attr, args[0].value, cls):
                    return "a bound method"
            return None
        if isinstance(value, cst.Attribute) and self._is_instance(value.value):
            if self._is_method_name(value.attr.value, value.value, cls):
                return "a bound method"
        if self.ctx.heavy.is_heavy_value(value, fn, cls):
            return "a heavy object"
        return None

    def _process_lifetime(self, cls: cst.ClassDef) -> bool:
        """Loggers live as long as the process (the logging manager keeps them)."""
        return any(self.ctx.qualname(b.value) in _LOGGERS for b in cls.bases)

    def _is_instance(self, owner: cst.BaseExpression) -> bool:
        """Not a module, a class or `type(x)`: something whose attributes are bound."""
        if isinstance(owner, cst.Call):
            return self.ctx.qualname(owner.func) not in ("type", "builtins.type")
        base = owner
        while isinstance(base, cst.Attribute):
            base = base.value
        if not isinstance(base, cst.Name):
            return True
        name = base.value
        if name in ("self", "cls"):
            return name == "self" or base is not owner
        if name in self.ctx.imports.names or name in self.ctx.classes:
            return False
        return not name[:1].isupper()

    def _is_method_name(self, attr: str, owner: cst.BaseExpression, cls) -> bool:
        """Is `owner.attr` a method? `forward`/`__call__`/`__init__`, a method of this
        class for `self`, or called as a method on the same receiver in this file."""
        if attr in METHOD_NAMES:
            return True
        if isinstance(owner, cst.Name) and owner.value == "self":
            # `self.x` is bound only if the class defines a method `x` (a callable
            # attribute such as `self.tokenizer` is an instance, not a bound method)
            method = self.ctx.methods(cls).get(attr) if cls is not None else None
            return method is not None and not decorator_names(self.ctx, method) & _PROPERTIES
        return f"{self.ctx.code(owner)}.{attr}(" in self.ctx.source

    # -- definitions -----------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = self.ctx.scope
        if len(scope.functions) != 1 or scope.classes or node.name.value not in self._local_cached:
            return
        if self.ctx.functions.get(node.name.value) is not node:
            return
        qualified = f"{self.ctx.module_name}.{node.name.value}"
        callers = self.ctx.index.bound_callers.get(qualified, [])
        heavy_params = [
            p.name.value for p in _params(node) if self.ctx.heavy.is_heavy_annotation(p.annotation)
        ]
        if not callers and not heavy_params:
            return
        if heavy_params:
            why = f"its parameter{'s' if len(heavy_params) > 1 else ''} " + ", ".join(
                f"`{p}`" for p in heavy_params) + " take heavy objects"
        else:
            sites = ", ".join(f"{_display(p)}:{line}" for p, line in callers[:3])
            more = f" and {len(callers) - 3} more" if len(callers) > 3 else ""
            why = f"it is called with bound methods or instances ({sites}{more})"
        self.report(
            node.name,
            f"cached `{node.name.value}` keeps its arguments alive and {why}: every model or "
            "instance that reaches it stays allocated as long as its cache entry",
            # A facade unwraps bound methods; it cannot help when models are passed as such.
            fix=None if heavy_params else self._facade(node),
        )

    def _facade(self, node: cst.FunctionDef):
        name = node.name.value
        private = f"_{name}"
        if private in self.ctx.functions or private in self.ctx.classes:
            return None
        params = node.params
        star = params.star_arg if isinstance(params.star_arg, cst.Param) else None
        unwrap = [f'{p.name.value} = getattr({p.name.value}, "__func__", {p.name.value})'
                  for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                  if not _plain_annotation(p)]
        call_args = [p.name.value for p in (*params.posonly_params, *params.params)]
        if star is not None:
            call_args.append(f"*{star.name.value}")
        call_args += [f"{p.name.value}={p.name.value}" for p in params.kwonly_params]
        if params.star_kwarg is not None:
            call_args.append(f"**{params.star_kwarg.name.value}")
        call = f"{private}({', '.join(call_args)})"
        body = "\n".join(
            [f'    """Uncached facade: bound methods are unwrapped before `{private}` caches them."""',
             *(f"    {line}" for line in unwrap),
             f"    return {'await ' if node.asynchronous else ''}{call}"]
        )
        header = cst.Module(body=[]).code_for_node(params)
        facade_src = f"{'async ' if node.asynchronous else ''}def {name}({header}):\n{body}\n"
        two_blank_lines = [cst.EmptyLine(), cst.EmptyLine()]  # PEP 8, between top-level defs
        facade = cst.parse_statement(facade_src).with_changes(
            params=params,  # the original parameters, formatting included
            whitespace_before_params=node.whitespace_before_params,
            returns=node.returns,
            leading_lines=two_blank_lines,
        )
        alias = cst.parse_statement(f"{name}.cache_clear = {private}.cache_clear\n").with_changes(
            leading_lines=two_blank_lines)
        renamed = node.with_changes(name=cst.Name(private))
        return self.fix(
            f"Rename the cached function to `{private}` and add an uncached `{name}` that "
            "unwraps bound methods before calling it",
            {node: cst.FlattenSentinel([renamed, facade, alias])},
        )


def _plain_annotation(param: cst.Param) -> bool:
    """Annotated as a str, int, float, bool or bytes: never a bound method."""
    ann = param.annotation.annotation if param.annotation else None
    return isinstance(ann, cst.Name) and ann.value in ("str", "int", "float", "bool", "bytes")


def _params(fn: cst.FunctionDef):
    p = fn.params
    return [*p.posonly_params, *p.params, *p.kwonly_params]


def _display(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


# -- ast facts for prefilters ------------------------------------------------------------
# The scans of RL101, RL102, RL201, RL202 and RL401 read the file's `ast` the way these
# rules read libcst: names resolve through the same import table, values count as
# possibly heavy by the same shapes. Coarser is fine (a file passes that the rule then
# clears); finer is not (the file would never be parsed).

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_UNIONS = frozenset({"typing.Optional", "typing.Union", "Optional", "Union"})
_GETATTR = frozenset({"getattr", "builtins.getattr"})
_PLAIN = frozenset({"str", "int", "float", "bool", "bytes", "None", "object"})
RETAINED = "!"  # evidence that needs no index: `self`, a bound method, a tensor made here




def file_imports(nodes: FileNodes) -> dict[str, str]:
    """Local name -> qualified name, as `retainlint.imports.ImportTable` builds it for a
    rule (every import of the file; the first binding of a name wins), except that the
    module is unknown here: a relative import stays relative (`.sub.name`, see
    `absolute`). Several rules' scans need it: it is kept on `nodes`."""
    return nodes.shared("imports", _file_imports)


def _file_imports(nodes: FileNodes) -> dict[str, str]:
    table: dict[str, str] = {}
    found = nodes.of(ast.Import, ast.ImportFrom)
    if len(found) > 1:
        found = sorted(found, key=lambda n: (n.lineno, n.col_offset))
    for node in found:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    table.setdefault(alias.asname, alias.name)
                else:
                    head = alias.name.split(".")[0]
                    table.setdefault(head, head)
            continue
        base = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name != "*":
                sep = "" if not base or base.endswith(".") else "."
                table.setdefault(alias.asname or alias.name, f"{base}{sep}{alias.name}")
    return table


def decorator_name(imports: dict[str, str], decorator: ast.AST) -> Optional[str]:
    """`cstutil.decorator_names` for one decorator: a call reduced to its callee."""
    return qualify(imports, decorator.func if isinstance(decorator, ast.Call) else decorator)


def qualify(imports: dict[str, str], node: ast.AST) -> Optional[str]:
    """`ctx.qualname` on the ast: names not imported stay as written."""
    name = dotted(node)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    target = imports.get(head)
    if target is None:
        return name
    return f"{target}.{rest}" if rest else target


def absolute(qualified: str, summary) -> str:
    """A name from `file_imports` as the rule sees it: a relative one made absolute for
    the file's module, one defined in the file prefixed with the module (`ctx.absolute`)."""
    if qualified.startswith("."):
        rest = qualified.lstrip(".")
        level = len(qualified) - len(rest)
        is_package = os.path.basename(summary.path).startswith("__init__.")
        return absolute_import(summary.module, is_package, level, rest or None)
    head = qualified.split(".", 1)[0]
    if head in summary.functions or head in summary.classes:
        return f"{summary.module}.{qualified}"
    return qualified


def annotation_names(imports: dict[str, str], ann: Optional[ast.AST]) -> list[str]:
    """The names `HeavyOracle.is_heavy_annotation` tests: `X`, `X | Y`, `Optional[X]`,
    `Union[X, Y]`, `"X"` (plain builtins left out)."""
    if ann is None:
        return []
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            return annotation_names(imports, ast.parse(ann.value, mode="eval").body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return []
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return annotation_names(imports, ann.left) + annotation_names(imports, ann.right)
    if isinstance(ann, ast.Subscript):
        if qualify(imports, ann.value) not in _UNIONS:
            return []
        items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        return [q for item in items for q in annotation_names(imports, item)]
    q = qualify(imports, ann)
    return [q] if q and q not in _PLAIN else []


def _target_key(target: ast.AST) -> Optional[str]:
    if type(target) is ast.Name:
        return target.id
    if type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self":
        return f"self.{target.attr}"
    return None


class Values:
    """What may make a value heavy, read as `HeavyOracle.is_heavy_value` reads it (through
    parameters' annotations, local assignments, `self` attributes assigned in any method,
    callees' return annotations), as a set of names for `Heavy.any` to judge with the
    index: `RETAINED` when that needs no index. With `bound`, RL101's other retained
    values count too: `self` in a method, bound methods, `getattr(x, "method")`."""

    def __init__(self, nodes: FileNodes, bound: bool = False) -> None:
        self.nodes = nodes
        self.bound = bound
        self.imports = file_imports(nodes)
        # the last definition of a name wins, as in `FileContext`
        self.functions: dict[str, ast.AST] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        for node in nodes.tree.body:
            if isinstance(node, _DEFS):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        self._assigned: Optional[dict[str, list[ast.AST]]] = None
        # Complete answers for a name in a function, a `self` attribute in a class, an
        # attribute name called somewhere: arguments repeat them all over a file.
        self._closures: dict[tuple, frozenset[str]] = {}
        self._called: dict[str, bool] = {}
        self._scopes: dict[int, tuple] = {}
        self._params: dict[int, dict[str, ast.AST]] = {}

    # -- where a node is -------------------------------------------------------------
    def scope(self, node: ast.AST) -> tuple[Optional[ast.AST], Optional[ast.ClassDef]]:
        """(innermost function, its class if it is a method): `ctx.scope.function` and
        `method_class` (a def under an `if` of the class body counts: coarser)."""
        inner = self.nodes.owner(node)
        scope = self._scopes.get(id(inner))
        if scope is None:
            fn = inner
            while fn is not None and not isinstance(fn, _DEFS):
                fn = self.nodes.owner(fn)
            owner = self.nodes.owner(fn) if fn is not None else None
            klass = owner if isinstance(owner, ast.ClassDef) else None
            scope = self._scopes[id(inner)] = (fn, klass)
        return scope

    def assigned(self, fn: ast.AST, key: str) -> list[tuple[Optional[ast.AST], Optional[ast.AST]]]:
        """`HeavyOracle.local_assignments(fn)[key]`: (value, annotation) of `key = ...`,
        `key: T = ...`, `(key := ...)` in `fn`'s own body (nested scopes left out)."""
        by_key = self._assigned
        if by_key is None:  # the whole file's by target at once: cheaper than walking
            by_key = self._assigned = {}
            for node in self.nodes.of(ast.Assign):
                for target in node.targets:
                    k = _target_key(target)
                    if k:
                        by_key.setdefault(k, []).append(node)
            for node in self.nodes.of(ast.AnnAssign, ast.NamedExpr):
                k = _target_key(node.target)
                if k:
                    by_key.setdefault(k, []).append(node)
        owner = self.nodes.owner
        return [(n.value, n.annotation if type(n) is ast.AnnAssign else None)
                for n in by_key.get(key, ()) if owner(n) is fn]

    # -- evidence ----------------------------------------------------------------------
    def arguments(self, call: ast.Call) -> set[str]:
        """Evidence for the arguments of `call` (starred ones left out, as the rules do)."""
        found: set[str] = set()
        scope = None
        for arg in (*call.args, *(k.value for k in call.keywords if k.arg is not None)):
            kind = type(arg)
            if kind is ast.Constant or kind is ast.Starred:
                continue
            if scope is None:
                scope = self.scope(call)
            found |= self.evidence(arg, *scope)
        return found

    def evidence(self, expr: ast.AST, fn, cls) -> set[str]:
        """What may make `expr`, evaluated in `fn` (a method of `cls`), heavy or retained."""
        found: set[str] = set()
        try:
            self.value(expr, fn, cls, found, set())
        except RecursionError:  # an absurdly long chain of assignments: let it pass
            found.add(RETAINED)
        return found

    def value(self, expr: ast.AST, fn, cls, found: set[str], seen: set) -> None:
        kind = type(expr)
        if kind is ast.Name:
            if seen:
                self._name(expr.id, fn, cls, found, seen)
            else:  # a whole closure: complete, so it can be kept
                found |= self._closure((id(fn), id(cls), expr.id), self._name, expr.id, fn, cls)
        elif kind is ast.Call:
            self._call(expr, fn, cls, found, seen)
        elif kind is ast.Attribute:
            if self.bound and self._bound_method(expr, cls):
                found.add(RETAINED)
            if cls is not None and type(expr.value) is ast.Name and expr.value.id == "self":
                if seen:
                    self._attribute(cls, expr.attr, found, seen)
                else:
                    found |= self._closure((id(cls), expr.attr), self._attribute, cls, expr.attr)

    def _closure(self, key: tuple, walk, *args) -> frozenset[str]:
        answer = self._closures.get(key)
        if answer is None:
            found: set[str] = set()
            walk(*args, found, set())
            answer = self._closures[key] = frozenset(found)
        return answer

    def _name(self, name: str, fn, cls, found: set[str], seen: set) -> None:
        if name == "self" and fn is not None and cls is not None:
            if not self.bound:
                found.add(cls.name)  # heavy if the class is
            elif not any(qualify(self.imports, b) in _LOGGERS for b in cls.bases):
                found.add(RETAINED)
            return
        if fn is None or (id(fn), name) in seen:
            return
        seen.add((id(fn), name))
        params = self._params.get(id(fn))
        if params is None:
            a = fn.args
            params = self._params[id(fn)] = {
                p.arg: p.annotation for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)
                if p.annotation is not None}
        if name in params:
            found.update(annotation_names(self.imports, params[name]))
        for value, ann in self.assigned(fn, name):
            if ann is not None:
                found.update(annotation_names(self.imports, ann))
            if value is not None:
                self.value(value, fn, cls, found, seen)

    def _call(self, call: ast.Call, fn, cls, found: set[str], seen: set) -> None:
        q = qualify(self.imports, call.func)
        if q is None:
            return
        if self.bound and q in _GETATTR:  # RL101 decides a `getattr` by its name alone
            args = call.args
            if (len(args) >= 2 and type(args[1]) is ast.Constant and isinstance(args[1].value, str)
                    and self._method_name(args[1].value, args[0], cls)):
                found.add(RETAINED)
            return
        if q in TENSOR_FACTORIES:
            found.add(RETAINED)
            return
        found.add(q)  # a heavy class, or a function of the project annotated to return one
        callee = self._callee(call.func, cls)
        if callee is not None and callee.returns is not None:
            found.update(annotation_names(self.imports, callee.returns))

    def _callee(self, func: ast.AST, cls) -> Optional[ast.AST]:
        """`HeavyOracle._callee`: a function or method of this file that `func` names."""
        if type(func) is ast.Name:
            return self.functions.get(func.id)
        if type(func) is ast.Attribute and type(func.value) is ast.Name:
            owner = func.value.id
            target = cls if owner in ("self", "cls") else self.classes.get(owner)
            if target is not None:
                return _methods(target).get(func.attr)
        return None

    def _attribute(self, cls: ast.ClassDef, attr: str, found: set[str], seen: set) -> None:
        """`HeavyOracle._is_heavy_attribute`: `attr: T` in the class body, `self.attr = v`
        in any of its methods."""
        if (id(cls), attr) in seen:
            return
        seen.add((id(cls), attr))
        for stmt in cls.body:
            if (type(stmt) is ast.AnnAssign and type(stmt.target) is ast.Name
                    and stmt.target.id == attr):
                found.update(annotation_names(self.imports, stmt.annotation))
        key = f"self.{attr}"
        for method in _methods(cls).values():
            for value, ann in self.assigned(method, key):
                found.update(annotation_names(self.imports, ann))
                if value is not None:
                    self.value(value, method, cls, found, seen)

    # -- RL101's bound methods -----------------------------------------------------------
    def _bound_method(self, expr: ast.Attribute, cls) -> bool:
        """`x.m` where `x` is an instance and `m` a method (RL101 `_is_instance`,
        `_is_method_name`)."""
        owner = expr.value
        if type(owner) is ast.Call:
            if qualify(self.imports, owner.func) in ("type", "builtins.type"):
                return False
        else:
            base = owner
            while type(base) is ast.Attribute:
                base = base.value
            if type(base) is ast.Name:
                name = base.id
                if name == "cls" and base is owner:
                    return False
                if name not in ("self", "cls") and (
                        name in self.imports or name in self.classes or name[:1].isupper()):
                    return False
        return self._method_name(expr.attr, owner, cls)

    def _method_name(self, attr: str, owner: ast.AST, cls) -> bool:
        if attr in METHOD_NAMES:
            return True
        if type(owner) is ast.Name and owner.id == "self":
            method = _methods(cls).get(attr) if cls is not None else None
            return method is not None and not any(
                decorator_name(self.imports, d) in _PROPERTIES for d in method.decorator_list)
        # the rule looks for `<owner as written>.attr(` in the file
        called = self._called.get(attr)
        if called is None:
            called = self._called[attr] = f".{attr}(".encode() in self.nodes.source
        return called

    def bases(self, names) -> dict[str, tuple[str, ...]]:
        """Local class -> its qualified bases, for the local classes among `names` and
        their local bases (`Heavy` follows them as `HeavyOracle.local_heavy_classes`)."""
        out: dict[str, tuple[str, ...]] = {}
        todo = [n for n in names if n in self.classes]
        while todo:
            name = todo.pop()
            if name in out:
                continue
            bases = (qualify(self.imports, b) for b in self.classes[name].bases)
            out[name] = tuple(q for q in bases if q)
            todo.extend(b for b in out[name] if b in self.classes)
        return out


def _methods(cls: ast.ClassDef) -> dict[str, ast.AST]:
    return {s.name: s for s in cls.body if isinstance(s, _DEFS)}


class Heavy:
    """Judges `Values` evidence with the index and settings, in `might_match`."""

    def __init__(self, summary, settings, index, bases: dict[str, tuple[str, ...]]) -> None:
        self.summary = summary
        self.index = index
        self.bases = bases
        self.configured = frozenset(settings.heavy_types)
        # a configured `pkg.mod.Engine` may be spelled `Engine` in pkg/mod.py
        self.configured_last = frozenset(t.rpartition(".")[2] for t in self.configured)

    def full(self, qualified: str) -> str:
        return absolute(qualified, self.summary)

    def any(self, evidence) -> bool:
        return RETAINED in evidence or any(self.name(q) or self.index.returns_heavy(self.full(q))
                                           for q in evidence)

    def name(self, q: str, depth: int = 0) -> bool:
        """`HeavyOracle.is_heavy_qualname`: a heavy or configured type, `torch.nn.<Class>`,
        a heavy class of the project, a local class deriving from one."""
        last = q.rpartition(".")[2]
        if q in HEAVY_TYPES or q in self.configured or last in self.configured_last:
            return True
        if q.startswith("torch.nn.") and q.count(".") == 2 and last[:1].isupper():
            return True
        if self.index.is_heavy_class(self.full(q)):
            return True
        return depth < 10 and any(self.name(b, depth + 1) for b in self.bases.get(q, ()))


def calls_cached(summary, index, hidden: dict[str, tuple[str, ...]]) -> bool:
    """Does the file pass something that may be a bound method to a cached module-level
    function (`summary.bound_calls`)? `hidden`: names imported only where the summary
    does not look (see `hidden_imports`), with what they may stand for."""
    calls = summary.bound_calls
    if not calls:
        return False
    # Only a name a cached function goes by can be one: its own, or an alias it is
    # imported under somewhere (the index resolves through both).
    names = index.cached_names
    aliases = None
    for callee in calls:
        head, dot, rest = callee.partition(".")
        for q in ([absolute(t, summary) + dot + rest for t in hidden[head]] if head in hidden
                  else (callee,)):
            last = q.rpartition(".")[2].encode()
            if last not in names:
                if aliases is None:
                    aliases = index.ask(cached_aliases, None)
                if last not in aliases:
                    continue
            f = index.cached_function(q)
            if f is not None and not f.is_method:
                return True
    return False


def hidden_imports(nodes: FileNodes) -> dict[str, tuple[str, ...]]:
    """Names bound only by imports in module-level compound statements (`try:`, `if
    TYPE_CHECKING:`): the index's summary leaves those out of `imports`, the rules' import
    table does not. Name -> what it may stand for (relative names as in `file_imports`)."""
    found = nodes.of(ast.Import, ast.ImportFrom)
    top = [n for n in nodes.tree.body if type(n) is ast.Import or type(n) is ast.ImportFrom]
    if len(top) == len(found) or len(top) == sum(nodes.owner(n) is None for n in found):
        return {}  # every module-level import is a statement of the module itself
    top = {id(n) for n in top}
    hidden: dict[str, list[str]] = {}
    seen: set[str] = set()
    for node in found:
        nested = nodes.owner(node) is None and id(node) not in top
        for alias in node.names:
            if alias.name == "*":
                continue
            if isinstance(node, ast.Import):
                local = alias.asname or alias.name.split(".")[0]
                target = alias.name if alias.asname else local
            else:
                local = alias.asname or alias.name
                base = "." * node.level + (node.module or "")
                target = f"{base}{'' if not base or base.endswith('.') else '.'}{alias.name}"
            if nested:
                hidden.setdefault(local, []).append(target)
            else:
                seen.add(local)
    return {k: tuple(v) for k, v in hidden.items() if k not in seen}


_ALIASES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def cached_aliases(index, key=None) -> frozenset[bytes]:
    """Names a project module imports a cached module-level function under, other than
    its own (`from .impl import _f as f`). A question for `ProjectIndex.ask`; the answer
    only depends on the index, so it is kept per index."""
    answer = _ALIASES.get(index)
    if answer is None:
        found = set()
        for summary in index.modules.values():
            for local, target in summary.imports.items():
                if local != target.rpartition(".")[2]:
                    f = index.cached_function(target)
                    if f is not None and not f.is_method:
                        found.add(local.encode())
        answer = _ALIASES[index] = frozenset(found)
    return answer
