"""RL101 cache-key-bound-method."""

from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import cache_maxsize, decorator_names, is_self
from retainlint.core.finding import Applicability, Consequence, Position, Related, Severity
from retainlint.project.index import CACHE_DECORATORS, METHOD_NAMES
from retainlint.project.ast_facts import LOGGERS, PROPERTIES
from retainlint.project.names import NOT_INSTANCE_DECORATORS
from retainlint.rules.prefilters.rl101 import CacheKeyBoundMethodPrefilter
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.severity import Facts, level


class CacheKeyBoundMethod(Rule):
    prefilter = CacheKeyBoundMethodPrefilter
    name = "cache-key-bound-method"
    summary = "A bound method, `self` or a model is passed to an `lru_cache`d function, whose cache keeps it alive"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
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

A cached `@staticmethod` or `@classmethod` of a class of the file, called as
`self.m(...)`, `cls.m(...)` or `Klass.m(...)`, counts like a module-level function: its
cache lives on the class, so `self.get_flat_type_info(self)` - where the class was meant -
keeps every instance it is called on. A project's own memoizing decorator counts as a
cache: a function whose wrapper stores each result in a dict of its closure under the
call's arguments (`cache[args] = func(*args)`), or a class whose `__call__` stores what the
function its `__init__` was given returns in a dict attribute (`self.memo[key] =
self.func(*args)`); keys made of `id()`s do not count.

## Why it leaks
The cache keeps its keys alive. A bound method holds `__self__`, so the instance - a
model with all its GPU tensors - lives as long as the cache: for an unbounded cache,
forever; for a bounded one, until evicted. A tensor keeps no module alive: a cache of a
stated size whose heavy parameters are tensors only (`lru_cache(maxsize=32)` over
`inv_freq: torch.Tensor`) keeps a bounded number of tensors of unknown weight, a warning.

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
When only bound methods reach it (no parameter is annotated heavy, no caller passes
`self`), the cached function is renamed `_<name>`, and an uncached `<name>` with the same
signature replaces bound-method arguments by their `__func__` before calling it (and
keeps `cache_clear` reachable). Unsafe because `inspect.signature` of a plain function
includes `self`, so code that inspects what it receives may see a difference.

## Not reported
Plain functions, classes, strings, numbers and tuples of them; module-level functions
passed by name; `type(obj).method` and `Class.method` (already unbound); cached instance
methods of the class itself (`self.method(...)` calls: see RL102).

## Example: a cached static method given the instance
```python
class ComplexModel:
    @staticmethod
    @memoize                     # the project's memo: `self.memo[key] = self.func(*args)`
    def get_flat_type_info(cls):
        ...

    def as_dict(self):
        return {k: getattr(self, k)
                for k in self.get_flat_type_info(self)}   # RL101: meant self.__class__
```
"""

    valid = [
        # the cached static method given the class, as meant
        """
import functools

class Model:
    @staticmethod
    @functools.cache
    def flat_fields(cls):
        return dict(vars(cls))

    def as_dict(self):
        return self.flat_fields(type(self))
""",
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
""",
            lines=[6, 13],
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
""",
        ),
        # the instance itself reaches the cache: unwrapping bound methods would not free
        # it, so no fix is offered (a fix must not hide a leak it leaves)
        Example(
            """
import functools

@functools.lru_cache(maxsize=None)
def describe(obj):
    return type(obj).__name__

class Runner:
    def __init__(self, model):
        self.model = model
        self.kind = describe(self)
""",
            lines=[5, 11],
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
        # a cached static method of the class, given the instance instead of the class
        Example(
            """
import functools

class Model:
    @staticmethod
    @functools.cache
    def flat_fields(cls):
        return dict(vars(cls))

    def as_dict(self):
        return self.flat_fields(self)
""",
            lines=[11],
        ),
    ]

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
        name, related, holder, size = target
        fn, cls = self.ctx.scope.function, self.ctx.scope.method_class
        for arg in node.args:
            if arg.star:
                continue
            what = self._retained(arg.value, fn, cls)
            if what:
                definition = self._local_cached.get(name)
                few_tensors = what == "a heavy object" and definition is not None and self._few_tensors(definition)
                self.report(
                    arg.value,
                    f"`{self.ctx.code(arg.value)}` ({what}) is passed to cached `{name}`: the "
                    + ("cache keeps it alive as long as the entry lives" if few_tensors else
                       "cache keeps it - and the instance it belongs to - alive as long as the entry "
                       "lives (for an unbounded cache, forever)"),
                    related=related,
                    severity=Severity.WARNING if few_tensors else None,
                    consequence=_consequence(self._kept(arg.value, what, few_tensors, cls), holder, size),
                )

    def _kept(self, value: cst.BaseExpression, what: str, few_tensors: bool,
              cls: Optional[cst.ClassDef]) -> str:
        code = self.ctx.code(value)
        if what == "the instance itself" and cls is not None:
            return f"the `{cls.name.value}` instance and what it holds"
        if what == "a bound method":
            return f"`{code}` and the instance it is bound to"
        return f"`{code}` ({'a tensor' if few_tensors else 'heavy'})"

    def _cached_target(self, func: cst.BaseExpression):
        """(name, related location, what holds the cache, its size: see `_consequence`)
        when `func` names a cached module-level function or static method."""
        if isinstance(func, cst.Name) and func.value in self._local_cached:
            definition = self._local_cached[func.value]
            return (func.value, [RelatedNode(f"`{func.value}` is cached here", definition.name)],
                    f"the module-level cache of `{func.value}`", self._size(definition))
        if isinstance(func, cst.Name) and func.value in self.ctx.functions:
            return None  # defined here, not cached
        static = self._cached_static_method(func)
        if static is not None:
            owner = func.value.value if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) else ""
            cls = self.ctx.scope.method_class if owner in ("self", "cls") else self.ctx.classes.get(owner)
            method = f"{cls.name.value}.{static.name.value}" if cls is not None else self.ctx.code(func)
            return (self.ctx.code(func), [RelatedNode(f"`{static.name.value}` is cached here", static.name)],
                    f"the class-level cache of `{method}`", self._size(static))
        qualified = self.ctx.qualname(func)
        if not qualified or qualified.split(".", 1)[0] in ("self", "cls"):
            return None
        summary = self.ctx.index.cached_function(self.ctx.absolute(qualified))
        if summary is None or summary.is_method:
            return None
        where = Position(summary.line, summary.column)
        related = Related(f"`{summary.qualname}` is cached here", _display(summary.path), where, where)
        # another file's cache: its summary knows whether it is bounded, not its size
        size = None if summary.bounded is None else "" if summary.bounded else "None"
        return self.ctx.code(func), [related], f"the module-level cache of `{self.ctx.code(func)}`", size

    def _size(self, fn: cst.FunctionDef) -> Optional[str]:
        """The `maxsize` of cached `fn` as written ("None" when unbounded, "128" for
        `lru_cache`'s default); None for the project's own cache decorator (unknown)."""
        for decorator in fn.decorators:
            expr = decorator.decorator
            qualified = self.ctx.qualname(expr.func if isinstance(expr, cst.Call) else expr)
            if not qualified:
                continue
            absolute = self.ctx.absolute(qualified)
            resolved = qualified if qualified in CACHE_DECORATORS else self.ctx.index.resolve(absolute) or absolute
            if resolved in CACHE_DECORATORS:
                return cache_maxsize(self.ctx, expr, resolved)
        return None

    def _cached_static_method(self, func: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        """`self.m` / `cls.m` / `Klass.m` naming a cached static or class method of a class
        of this file: its cache lives on the class and keeps every argument it is given
        (`self.get_flat_type_info(self)` where `self.__class__` was meant)."""
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return None
        owner = func.value.value
        klass = self.ctx.scope.method_class if owner in ("self", "cls") else self.ctx.classes.get(owner)
        if klass is None:
            return None
        method = self.ctx.methods(klass).get(func.attr.value)
        if method is None or not decorator_names(self.ctx, method) & NOT_INSTANCE_DECORATORS:
            return None
        return method if self._is_cached(method) else None

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
        return any(self.ctx.qualname(b.value) in LOGGERS for b in cls.bases)

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
        if is_self(owner):
            # `self.x` is bound only if the class defines a method `x` (a callable
            # attribute such as `self.tokenizer` is an instance, not a bound method)
            method = self.ctx.methods(cls).get(attr) if cls is not None else None
            return method is not None and not decorator_names(self.ctx, method) & PROPERTIES
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
        few_tensors = bool(heavy_params) and self._few_tensors(node)
        params = ", ".join(f"`{p}`" for p in heavy_params)
        kept = (f"every tensor passed as {params}" if few_tensors
                else f"every heavy object passed as {params}" if heavy_params
                else "every instance passed to it, or whose bound method is")
        self.report(
            node.name,
            f"cached `{node.name.value}` keeps its arguments alive and {why}: every model or "
            "instance that reaches it stays allocated as long as its cache entry",
            # A facade unwraps bound methods; it cannot help when models or the instance
            # itself are passed as such (the cache would still hold them, unreported).
            fix=None if heavy_params or self.ctx.index.instance_callers.get(qualified)
            else self._facade(node),
            severity=self._level(node, heavy_params) if heavy_params else None,
            consequence=_consequence(kept, f"the module-level cache of `{node.name.value}`", self._size(node)),
        )

    def _level(self, fn: cst.FunctionDef, heavy_params: list[str]) -> Severity:
        few_tensors = self._few_tensors(fn)
        return level(Facts(heavy=None if few_tensors else True, grows=False if few_tensors else None,
                           meant_to_go=None if self._only_module_level(fn.name.value, heavy_params) else True))

    def _few_tensors(self, fn: cst.FunctionDef) -> bool:
        """Are the heavy parameters of cached `fn` tensors only, behind a cache of a stated
        size (`lru_cache(maxsize=32)`)? A tensor does not reference the module it belongs to,
        and what one weighs is unknown (a frequency vector or a batch): a bounded number of
        them is no proven cost."""
        heavy = [p for p in _params(fn) if self.ctx.heavy.is_heavy_annotation(p.annotation)]
        if not heavy or not all(self.ctx.heavy.is_tensor_annotation(p.annotation) for p in heavy):
            return False
        for decorator in fn.decorators:
            call = decorator.decorator
            if isinstance(call, cst.Call):
                for arg in call.args:
                    if (arg.keyword is None or arg.keyword.value == "maxsize") and isinstance(arg.value, cst.Integer):
                        return arg.value.evaluated_value > 0
        return False

    def _only_module_level(self, name: str, params: list[str]) -> bool:
        """Is every call of `name` in this file handed, for its heavy `params`, an object bound
        at module level (`MODEL = build()`): one the process keeps anyway, which the cache
        adds no lifetime to? No call here at all: unknown (False)."""
        fn = self.ctx.functions[name]
        positions = [p.name.value for p in _params(fn)]
        module_level = {t.target.value for stmt in self.ctx.module.body
                        if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body
                        if isinstance(small, cst.Assign) for t in small.targets
                        if isinstance(t.target, cst.Name)}
        calls = [n for n in iter_nodes(self.ctx.module)
                 if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == name]
        for call in calls:
            for i, arg in enumerate(call.args):
                param = arg.keyword.value if arg.keyword else positions[i] if i < len(positions) else None
                if param in params and not (isinstance(arg.value, cst.Name) and arg.value.value in module_level):
                    return False
        return bool(calls)

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


def _consequence(kept: str, holder: str, size: Optional[str]) -> Consequence:
    """What a cache keeps of an argument, by its `maxsize` as written: "None" (unbounded:
    every distinct call adds an entry, kept for the process), a size (the entry stays among
    that many most recently used), "" (bounded, size unknown), None (not known at all)."""
    if size == "None":
        return Consequence(kept, holder, "the process", "one entry per distinct set of arguments")
    if size is None:
        return Consequence(kept, holder, "as long as the cache keeps its entry")
    if size == "1":
        return Consequence(kept, holder, "as long as its entry is the most recently used")
    among = f"the {size}" if size.isdigit() else f"the `{size}`" if size else "the bounded number of"
    return Consequence(kept, holder, f"as long as its entry stays among {among} most recently used")


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


