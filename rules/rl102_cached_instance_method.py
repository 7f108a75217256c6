"""RL102 cached-instance-method."""

from __future__ import annotations

import ast
import os
import weakref
from typing import Any, Optional

import libcst as cst
import libcst.helpers

from retainlint.project.names import NOT_INSTANCE_DECORATORS
from retainlint.analysis.cstutil import body_functions, body_statements, call_args, is_self, self_attribute
from retainlint.analysis.hooks import iter_nodes
from retainlint.analysis.weight import weigher
from retainlint.core.finding import Applicability, Severity
from retainlint.project.index import CACHE_DECORATORS, instantiated_in_functions
from retainlint.rules.prefilters.rl102 import (
    CachedInstanceMethodPrefilter,
    ENUM_BASES,
)
from retainlint.analysis.severity import Facts, is_model, level
from retainlint.project.consequence import lives_for_the_process
from retainlint.project.retention import CONTAINER_CALLS
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.walk import visit

_UNBOUNDED_BY_DEFAULT = frozenset({"functools.cache"})


class _Instantiations(cst.CSTVisitor):
    """Calls of bare names (`Foo(...)`) anywhere in a module."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self.calls[node.func.value] = self.calls.get(node.func.value, 0) + 1


class CachedInstanceMethod(Rule):
    prefilter = CachedInstanceMethodPrefilter
    name = "cached-instance-method"
    summary = "`@lru_cache`/`@cache` on an instance method keeps every instance it was called on alive"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports `@functools.lru_cache` / `@functools.cache` (however imported or aliased,
`@lru_cache(maxsize=...)` included, and project decorators that wrap them) applied
directly to an instance method, i.e. a method whose first parameter is `self`. The
method kind comes from the whole decorator list, in any order: `@staticmethod` and
`@classmethod` methods are not reported (whether written above or below the cache),
nor methods of `enum.Enum` subclasses (`IntEnum`, `StrEnum`,
`Flag`, ...), or classes whose only instance is a process-wide singleton: created once at
module level in the same module, or published in a module global by a function of any
module of the project (`global _platform; _platform = Platform()`, also through a class
chosen at run time when the global is typed with the class), when no other function of
the project makes one (test modules aside). A `@property` stacked on the cache is
reported like any other method: the cache is still on the function and keyed by `self`
(`functools.cached_property` is the cure). Same as flake8-bugbear's B019 and pylint's
W1518, without their known false positives.

A project decorator that memoizes by hand counts as a cache too: a function whose inner
wrapper keeps each result in a dict of its closure under the call's arguments
(`cache[args] = func(*args)`, directly or through a local key built from them), or a
class whose `__call__` keeps what the function its `__init__` was given returns in a dict
attribute (`self.memo[key] = self.func(...)`).
On a method, `self` is one of those arguments. A wrapper that keeps the result on the
instance (`self._cache[func] = ...`), keys made of `id()`s, and a key that is not built
from the call's arguments (one slot per function) are not memoizing caches; neither is a
decorator that builds an `lru_cache` per instance on first call and stores it on the
instance (`setattr(self, func.__name__, cached)`, over `weakref.ref(self)`): one cache per
instance, dying with it.

Bounded caches are reported too. The finding is an error when the class is a
`torch.nn.Module` with weights (parameters or buffers) and the cache keeps more than one instance (no `maxsize`, or one above 1): a model loaded,
dropped and loaded again stays with its weights; and when a heavy class's cache has no bound
and is keyed by more than a device or dtype: a new value per distinct key, never dropped. It is a warning when one entry keeps at
most the last instance (`maxsize=1`), or when a light class's cache has no bound; info
(shown with `--min-severity info`) when the class holds no weights, keeps nothing its
callers hand it (no `self.df = df`, no dataclass fields) and the cache is bounded - it pins
only the few small values it returned - or when the instances are made
once for the whole process (at module level, as a singleton, in an entry point), so the
cache keeps them no longer than they live anyway. Weights of a project
subclass count (an abstract base's cached method runs on its subclasses' instances), and
so do children built from a class chosen at run time (`self.lm = lm_cls(config)`). The message
says what stays alive: the instances and the values the method returned for them, and
the class's weights only when it holds some (a rotary-embedding module has none).

## Why it leaks
The cache lives on the function object, i.e. on the class, for the whole process, and
`self` is part of every key: each instance the method was ever called on stays
reachable from the cache (a bounded cache only limits how many). For a model class
that is its weights and everything they reference.

## Incident
A `maxsize=1` cache on a model's method pinned a whole model on the GPU after the engine
that owned it was shut down: the cache entry held `self`.

## Example
```python
import functools
import torch

class Head(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = torch.nn.Linear(dim, dim)

    @functools.lru_cache(maxsize=8)  # RL102 (an error: `Head` holds weights)
    def mask(self, n):
        return torch.ones(n, n).tril()
```

## Fix (suggestion only)
Keep the cache on the instance so it dies with it: `functools.cached_property` for a
method that takes only `self`, otherwise a dict attribute created in `__init__`; or cache
a module-level function keyed on plain values (`_mask(n)`) and call it from the method.
A per-instance `lru_cache` built in `__init__` (`self.f = lru_cache()(self._f)`) is not
a cure: it is a reference cycle back to `self`.
"""

    valid = [
        # a hand-written decorator keeping each result on the instance
        """
def cached(func):
    def wrapper(self, *args):
        if func not in self._cache:
            self._cache[func] = func(self, *args)
        return self._cache[func]

    return wrapper

class Cube:
    def __init__(self):
        self._cache = {}

    @cached
    def extrema(self):
        return 0, 1
""",
        # the cache above the staticmethod: not an instance method
        """
from functools import cache
class Kernels:
    @cache
    @staticmethod
    def compile(n):
        return n
""",
        # classmethod written below or above the cache
        """
import functools
class Registry:
    @classmethod
    @functools.lru_cache(maxsize=None)
    def lookup(cls, name):
        return name
""",
        # enum members are immortal anyway
        """
import enum
from functools import cache
class Color(enum.IntEnum):
    RED = 1
    @cache
    def label(self):
        return self.name.lower()
""",
        # a module-level singleton created once
        """
from functools import lru_cache
class _Platform:
    @lru_cache(maxsize=None)
    def device_name(self, idx):
        return str(idx)
current_platform = _Platform()
""",
        # a process-wide singleton a resolver publishes in a module global
        """
from functools import lru_cache
from typing import Optional

class Platform:
    @lru_cache(maxsize=1)
    def is_cuda(self):
        return True

_current: Optional[Platform] = None

def current_platform() -> Platform:
    global _current
    if _current is None:
        _current = Platform()
    return _current
""",
        # a nested function, not a method
        """
from functools import cache
class Builder:
    def build(self):
        @cache
        def step(n):
            return n
        return step(3)
""",
    ]
    invalid = [
        Example(
            """
import functools
import torch

class Head(torch.nn.Module):
    @functools.lru_cache(maxsize=1)
    def mask(self, n):
        return torch.ones(n, n).tril()
""",
            lines=[6],
        ),
        Example(
            """
from functools import cache as memo

class Tokenizer:
    @memo
    def vocab(self):
        return {}
""",
            lines=[5],
        ),
        # the staticmethod is on another method; two instances of the "singleton"
        Example(
            """
import functools

class Lookup:
    @functools.lru_cache
    def find(self, key):
        return key

    @staticmethod
    @functools.cache
    def helper(x):
        return x

a = Lookup()
b = Lookup()
""",
            lines=[5],
        ),
        # `@property` over the cache: still one class-level cache keyed by `self`
        Example(
            """
from functools import lru_cache

class DataParser:
    def __init__(self, df):
        self.df = df

    @property
    @lru_cache()
    def field_metas(self):
        return [str(c) for c in self.df.columns]
""",
            lines=[9],
        ),
        # a hand-written memoizing decorator: results kept in its closure, keyed by the args
        Example(
            """
def cached(func):
    cache = {}

    def wrapper(*args):
        if args not in cache:
            cache[args] = func(*args)
        return cache[args]

    return wrapper

class Cube:
    @property
    @cached
    def extrema(self):
        return 0, 1
""",
            lines=[14],
        ),
        # a project decorator that wraps lru_cache
        Example(
            """
import functools

def memoize(fn):
    return functools.lru_cache(maxsize=None)(fn)

class Engine:
    @memoize
    def plan(self, n):
        return n
""",
            lines=[8],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._instantiations: Optional[dict[str, int]] = None
        self._tree: Optional[ast.Module] = None
        self._built_at_module_level: Optional[set[str]] = None  # classes called at module level

    def applies(self) -> bool:
        return True

    # -- detection -----------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not node.decorators:
            return
        cls = self.ctx.scope.method_class
        if cls is None or self.ctx.scope.function is not node:
            return
        names = self._decorator_names(node)
        # a `@property` (or `cached_property`) over the cache does not help: the cache is
        # still on the function, keyed by `self` (pygwalker's data parsers)
        if names & NOT_INSTANCE_DECORATORS:
            return
        params = node.params.posonly_params or node.params.params
        if not params or params[0].name.value != "self":
            return
        cache = None
        for decorator in node.decorators:
            qualified = self._cache_decorator(decorator)
            if qualified is not None:
                cache = (decorator, qualified)
                break
        if cache is None:
            return
        if self._is_enum(cls) or self._is_module_singleton(cls) or self._is_process_singleton(cls):
            return
        decorator, qualified = cache
        heavy = self.ctx.heavy.is_heavy_class(cls)
        weights = heavy and (self._holds_weights(cls) or self._builds_unseen_children(cls))
        method = f"{cls.name.value}.{node.name.value}"
        size = self._size(decorator.decorator, qualified)
        spelled = "@" + self.ctx.code(
            decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        )
        # what stays: the instance and what the method returned for it, always; weights
        # only when the class holds some (a rotary embedding module has none)
        held = f"; `{cls.name.value}` holds weights, and they stay allocated with it" if weights else ""
        self.report(
            decorator,
            f"`{spelled}` on instance method `{method}` ({size}): `self` is part of every "
            f"cache key, so the class-level cache keeps every `{cls.name.value}` instance it saw "
            f"alive, with the values it returned, for as long as the process runs{held}. "
            f"{self._suggestion(node, heavy)}",
            severity=level(self._facts(cls, decorator.decorator, qualified, node, heavy, weights)),
            related=[RelatedNode(f"class `{cls.name.value}`", cls.name)],
        )

    def _facts(self, cls: cst.ClassDef, expr: cst.BaseExpression, qualified: str,
               fn: cst.FunctionDef, heavy: bool, weights: bool) -> Facts:
        """What the cache costs. Heavy: the class holds weights. Meant to go: a module with
        weights is what a process loads, drops and loads again (a model), and a cache
        of more than one entry keeps the dropped ones; one entry (`maxsize=1`) keeps at most
        the last, replaced by the next call. An instance made once for the process (a
        platform, an environment) is kept no longer than it lives anyway. Light and bounded:
        a few small values."""
        grows = heavy and self._grows(fn, expr, qualified)
        maxsize = self._maxsize(expr, qualified)
        if self.ctx.classes.get(cls.name.value) is cls and lives_for_the_process(
                self.ctx.index, f"{self.ctx.module_name}.{cls.name.value}"):
            return Facts(heavy=weights, grows=grows, meant_to_go=False)
        # A torch module's weight is what its parameters, buffers and children weigh, which
        # `weights` measured; what else its `__init__` keeps is configuration.
        if not weights and maxsize not in (None, "None") and (
                is_model(self.ctx, cls) or not self._keeps_arguments(cls)):
            return Facts(heavy=False, grows=False)
        several = maxsize in (None, "None") or maxsize.strip() not in ("0", "1")
        model = weights and several and is_model(self.ctx, cls)
        # an unbounded cache of a heavy class keyed by more than a device makes a new value
        # per distinct key (a frequency table per requested shape) and never drops one
        return Facts(heavy=weights or None, grows=grows, meant_to_go=True if model or grows else None)

    @staticmethod
    def _keeps_arguments(cls: cst.ClassDef) -> bool:
        """Does a method store what it was handed on the instance (`self.df = df`)? Then
        what each cached instance keeps is the caller's data - a DataFrame, a client, a
        world of agents - whose weight nothing here knows: not light. A dataclass's fields
        are its `__init__`'s arguments; a container on the instance (`self._dirs = {}`)
        holds whatever its methods put there."""
        decorators = [cst.helpers.get_full_name_for_node(d.decorator) or "" for d in cls.decorators]
        if any("dataclass" in d or d.startswith("attr") for d in decorators) and any(
                isinstance(s, cst.SimpleStatementLine) and any(isinstance(small, cst.AnnAssign) for small in s.body)
                for s in body_statements(cls)):
            return True
        for fn in body_functions(cls):
            params = fn.params
            positional = (*params.posonly_params, *params.params)
            handed = {p.name.value for p in (*positional[1:], *params.kwonly_params) if not _scalar(p)}
            handed |= {p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)}
            for node in iter_nodes(fn.body):
                if not isinstance(node, (cst.Assign, cst.AnnAssign)) or node.value is None:
                    continue
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                if any(self_attribute(t) for target in targets for t in iter_nodes(target)) and (
                        _container(node.value) or any(isinstance(n, cst.Name) and n.value in handed
                                                      for n in iter_nodes(node.value))):
                    return True
        return False

    def _holds_weights(self, cls: cst.ClassDef) -> bool:
        """Does a heavy class - or one of the project's subclasses, whose instances the
        method is called on too (an abstract `PreTrainedModel` base) - pin real memory
        (parameters, buffers, tensors), or is it a module with no weights? Unknown: it does."""
        qualified = f"{self.ctx.module_name}.{cls.name.value}"
        weights = weigher(self.ctx)
        if weights.class_substantial(qualified):
            return True
        if self.ctx.classes.get(cls.name.value) is not cls:
            return False  # a nested class: the index does not know its subclasses
        return any(weights.class_substantial(q) for q in self.ctx.index.ask(class_family, qualified))

    def _builds_unseen_children(self, cls: cst.ClassDef) -> bool:
        """Does a method store on `self` what a class chosen at run time builds
        (`self.language_model = language_model_cls(config)`, `self.proj =
        self.PROJECTOR_TYPE(config)`)? Such a child is invisible to the weight judgement,
        and in a model it is where the weights are: counted as weights."""
        methods = {m.name.value for m in body_functions(cls)}
        for method in body_functions(cls):
            variables = set(self.ctx.heavy.local_assignments(method)) | {
                p.name.value for p in (*method.params.params, *method.params.kwonly_params)}
            for node in iter_nodes(method.body):
                if not (isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)
                        and any(is_self(t.target.value) for t in node.targets
                                if isinstance(t.target, cst.Attribute))):
                    continue
                func = node.value.func
                if isinstance(func, cst.Name) and func.value in variables:
                    return True
                if isinstance(func, cst.Attribute) and is_self(func.value) and func.attr.value not in methods:
                    return True
        return False

    def _suggestion(self, fn: cst.FunctionDef, heavy: bool) -> str:
        p = fn.params
        only_self = (
            len(p.posonly_params) + len(p.params) == 1
            and not p.kwonly_params
            and not isinstance(p.star_arg, cst.Param)
            and not isinstance(p.star_kwarg, cst.Param)
        )
        per_instance = (
            "use `functools.cached_property` (the value lives on the instance)"
            if only_self
            else "keep a per-instance dict attribute as the cache"
        )
        tail = (
            "; a per-instance `lru_cache` built in `__init__` would be a reference cycle "
            "back to `self`, not a cure"
            if heavy
            else ""
        )
        return (
            f"Suggestion: {per_instance}, or cache a module-level function keyed on plain "
            f"values and call it from the method{tail}."
        )

    # -- helpers -------------------------------------------------------------------
    def _decorator_names(self, fn: cst.FunctionDef) -> set[str]:
        names = set()
        for d in fn.decorators:
            target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            q = self.ctx.qualname(target)
            if q:
                names.add(q)
                names.add(self.ctx.index.resolve(self.ctx.absolute(q)) or q)
        return names

    def _cache_decorator(self, decorator: cst.Decorator) -> Optional[str]:
        expr = decorator.decorator
        target = expr.func if isinstance(expr, cst.Call) else expr
        qualified = self.ctx.qualname(target)
        if not qualified:
            return None
        absolute = self.ctx.absolute(qualified)
        if self.ctx.index.is_cache_decorator(absolute):
            return self.ctx.index.resolve(absolute) or absolute
        return None

    def _grows(self, fn: cst.FunctionDef, expr: cst.BaseExpression, qualified: str) -> bool:
        """Can the cache grow without bound: not bounded by a `maxsize` (a project wrapper
        without one counts as unbounded), and keyed by more than the device or dtype (one
        entry per device is as many as the machine has)?"""
        if self._maxsize(expr, qualified) not in (None, "None"):
            return False
        p = fn.params
        keys = [param for param in (*p.posonly_params, *p.params, *p.kwonly_params)][1:]
        if isinstance(p.star_arg, cst.Param) or isinstance(p.star_kwarg, cst.Param):
            return True
        return not all(_per_device(self.ctx, param) for param in keys)

    def _maxsize(self, expr: cst.BaseExpression, qualified: str) -> Optional[str]:
        """The cache's `maxsize` as written (`"128"` for `lru_cache`'s default, `"None"`
        when unbounded), or None when unknown (a project wrapper given none)."""
        if qualified in _UNBOUNDED_BY_DEFAULT:
            return "None"
        if isinstance(expr, cst.Call):
            positional, keywords = call_args(expr)
            if "maxsize" in keywords:
                return self.ctx.code(keywords["maxsize"].value)
            if positional and qualified in CACHE_DECORATORS:
                return self.ctx.code(positional[0].value)
        return "128" if qualified in CACHE_DECORATORS else None

    def _size(self, expr: cst.BaseExpression, qualified: str) -> str:
        if qualified not in CACHE_DECORATORS:
            return f"cached through `{qualified}`"
        if qualified in _UNBOUNDED_BY_DEFAULT:
            return "unbounded"
        size: Optional[cst.BaseExpression] = None
        if isinstance(expr, cst.Call):
            positional, keywords = call_args(expr)
            if "maxsize" in keywords:
                size = keywords["maxsize"].value
            elif positional:
                size = positional[0].value
        if size is None:
            return "bounded (maxsize=128)"
        if isinstance(size, cst.Name) and size.value == "None":
            return "unbounded"
        return f"bounded (maxsize={self.ctx.code(size)})"

    def _is_enum(self, cls: cst.ClassDef) -> bool:
        for kw in cls.keywords:
            if kw.keyword is not None and kw.keyword.value == "metaclass":
                q = self.ctx.qualname(kw.value)
                if q in ENUM_BASES:
                    return True
        return any(self._is_enum_name(self.ctx.absolute(self.ctx.qualname(b.value)), 0)
                   for b in cls.bases)

    def _is_enum_name(self, qualified: Optional[str], depth: int) -> bool:
        if not qualified or depth > 10:
            return False
        if qualified in ENUM_BASES:
            return True
        resolved = self.ctx.index.resolve(qualified)
        if resolved in ENUM_BASES:
            return True
        summary = self.ctx.index.classes.get(resolved or "")
        if summary is None:
            return False
        return any(self._is_enum_name(b, depth + 1) for b in summary.bases)

    def _is_module_singleton(self, cls: cst.ClassDef) -> bool:
        """Created once, at module level, in this module, and nowhere else in it."""
        name = cls.name.value
        if self.ctx.classes.get(name) is not cls:
            return False
        if self._instantiations is None:
            collector = _Instantiations()
            visit(self.ctx.module, collector)
            self._instantiations = collector.calls
        if self._instantiations.get(name, 0) != 1:
            return False
        if self._built_at_module_level is None:  # once per file, not once per class
            self._built_at_module_level = {
                small.value.func.value for stmt in self.ctx.module.body
                if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body
                if isinstance(small, (cst.Assign, cst.AnnAssign)) and isinstance(small.value, cst.Call)
                and isinstance(small.value.func, cst.Name)}
        if name not in self._built_at_module_level:
            return False
        # nor instantiated by any other project module's functions
        return not self.ctx.index.ask(instantiated_in_functions, f"{self.ctx.module_name}.{name}")

    def _is_process_singleton(self, cls: cst.ClassDef) -> bool:
        """Is the only instance one a function publishes in a module global (`global
        _platform; _platform = Platform()`), in any module of the project?"""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return False  # a nested class: the index does not know it
        index = self.ctx.index
        qualified = f"{self.ctx.module_name}.{cls.name.value}"
        family = index.ask(class_family, qualified)
        # this file as it is linted (other files are read from disk by the question)
        here = index.files.get(os.path.abspath(self.ctx.path))
        if here is None:
            return False
        if self._tree is None:
            try:
                self._tree = ast.parse(self.ctx.source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._tree = ast.Module(body=[], type_ignores=[])
        own = frozenset(_fillers_in(index, here, self._tree, family))
        return index.ask(process_singleton, (qualified, here.path, own))


# -- process-wide singletons, across the project (`ProjectIndex.ask` questions) ------------


def _per_device(ctx, param: cst.Param) -> bool:
    """A key parameter with one value per device or dtype (`device`, `device_str`,
    `dtype`, or annotated `torch.device`/`torch.dtype`)."""
    words = param.name.value.lower().split("_")
    if "device" in words or "dtype" in words:
        return True
    annotation = param.annotation
    return annotation is not None and any(
        t in ctx.code(annotation.annotation) for t in ("torch.device", "torch.dtype"))


def process_singleton(index, key: tuple[str, str, frozenset[str]]) -> bool:
    """Are the instances of project class `qualified` (and of its project subclasses) only
    ever made by functions that publish them in a module-global singleton slot (`global
    _x; _x = X()`, or a slot typed with the class filled through a class chosen at run
    time), anywhere in the project? Made by no other function, test modules aside: a
    test's throwaway instances say nothing about how many the program makes. `key`: the
    class, the file being linted and its slot fillers (read from the file as linted)."""
    qualified, here, own = key
    family = class_family(index, qualified)
    fillers = set(own) | _slot_fillers(index, family, here)
    if not fillers:
        return False
    calls = _calls_by_name(index)
    for name in {q.rpartition(".")[2] for q in family}:
        for function, call in calls.get(name, ()):
            if function not in fillers and _member(index, call, family):
                return False
    return True


_CALLS_BY_NAME: "weakref.WeakKeyDictionary[Any, dict[str, list[tuple[str, str]]]]" = \
    weakref.WeakKeyDictionary()


def _calls_by_name(index) -> dict[str, list[tuple[str, str]]]:
    """Last name of a callee -> (function, the callee as it spells it) for every call in
    the project's functions outside test modules: read once per index, not once per class."""
    found = _CALLS_BY_NAME.get(index)
    if found is None:
        found = {}
        for function in index.functions.values():
            if _test_module(index.module_of(function.path)):
                continue
            for call in function.calls:
                found.setdefault(call.rpartition(".")[2], []).append((function.qualname, call))
        _CALLS_BY_NAME[index] = found
    return found


def class_family(index, qualified: str) -> frozenset[str]:
    """`qualified` and the project classes deriving from it."""
    family = {qualified}
    names = {qualified.rpartition(".")[2]}
    by_name = _bases_by_name(index)
    todo = [qualified]
    while todo:
        # a class joins through a base spelled with the last name of a member, or
        # resolving to one: only those are looked at again when a member joins
        for name, base in by_name.get(todo.pop().rpartition(".")[2], ()):
            if name not in family and base.rpartition(".")[2] in names \
                    and _member(index, base, family):
                family.add(name)
                names.add(name.rpartition(".")[2])
                todo.append(name)
    return frozenset(family)


_BASES_BY_NAME: "weakref.WeakKeyDictionary[Any, dict[str, list[tuple[str, str]]]]" = \
    weakref.WeakKeyDictionary()


def _bases_by_name(index) -> dict[str, list[tuple[str, str]]]:
    """Last name of a base, as spelled or as resolved -> (project class, that base): read
    once per index, not once per class of a file with thousands of them."""
    found = _BASES_BY_NAME.get(index)
    if found is None:
        found = {}
        for name, summary in index.classes.items():
            for base in summary.bases:
                resolved = index.resolve(base) or base
                for last in {base.rpartition(".")[2], resolved.rpartition(".")[2]}:
                    found.setdefault(last, []).append((name, base))
        _BASES_BY_NAME[index] = found
    return found


def _member(index, name: str, family: "frozenset[str] | set[str]") -> bool:
    """Does `name` (as a file spells it, qualified) denote a class of `family`? Through
    re-exports; and by its trailing components when it is spelled from above a namespace
    package the index does not name modules from (`pkg.runtime.mod.X` for `mod.X`)."""
    resolved = index.resolve(name) or name
    return resolved in family or any(resolved.endswith("." + q) for q in family)


def _slot_fillers(index, family: frozenset[str], here: str) -> set[str]:
    """The slot fillers (`_fillers_in`) of the project's files other than `here`; only the
    files that define or import a class of `family` are read."""
    fillers: set[str] = set()
    for summary in index.files.values():
        if summary.path != here and _local_names(index, summary, family):
            source = index.source(summary.path)
            if source is not None:
                fillers |= _fillers_in(index, summary, source[0], family)
    return fillers


def _local_names(index, summary, family: frozenset[str]) -> set[str]:
    """The names a file knows the classes of `family` by (defined or imported)."""
    names = {q.rpartition(".")[2] for q in family}
    defined = _defined_names(index, summary)
    local = {n for q in family for n in defined.get(q, ())}
    return local | {n for n, target in summary.imports.items()
                    if target.rpartition(".")[2] in names and _member(index, target, family)}


def _fillers_in(index, summary, tree: ast.Module, family: frozenset[str]) -> set[str]:
    """Qualified names of the file's module-level functions that publish an instance of
    a class of `family` in a module global (`global _x` then `_x = ...`): a global typed
    with one of the classes, or assigned a call of one."""
    local = _local_names(index, summary, family)
    if not local:
        return set()
    by_mention, by_global, by_made = _slots_of(tree)
    typed = {name for mention in local for name in by_mention.get(mention, ())}
    fillers = {fn for made in local for fn in by_made.get(made, ())}
    fillers.update(fn for name in typed for fn in by_global.get(name, ()))
    return {f"{summary.module}.{fn}" for fn in fillers}


_SLOTS = "_retainlint_slots"  # where `_slots_of` keeps its answer: on the tree, dying with it


def _slots_of(tree: ast.Module) -> tuple[dict[str, set[str]], dict[str, set[str]],
                                         dict[str, set[str]]]:
    """Read once per tree (a file with many classes asks once per class): a name an
    annotation of a module global mentions -> those globals; a global -> the module-level
    functions assigning it under `global`; a name called (`X()`) in such an assignment ->
    those functions."""
    kept = getattr(tree, _SLOTS, None)
    if kept is not None:
        return kept  # type: ignore[no-any-return]
    by_mention: dict[str, set[str]] = {}
    for s in tree.body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
            for mention in _names(s.annotation):
                by_mention.setdefault(mention, set()).add(s.target.id)
    by_global: dict[str, set[str]] = {}
    by_made: dict[str, set[str]] = {}
    for fn in tree.body:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for name, value in _global_writes(fn):
                by_global.setdefault(name, set()).add(fn.name)
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                    by_made.setdefault(value.func.id, set()).add(fn.name)
    setattr(tree, _SLOTS, (by_mention, by_global, by_made))
    return by_mention, by_global, by_made


# index -> path -> (a file summary, qualified name -> the names the file defines it by)
_DEFINED: "weakref.WeakKeyDictionary[Any, dict[str, tuple[Any, dict[str, list[str]]]]]" = \
    weakref.WeakKeyDictionary()


def _defined_names(index, summary) -> dict[str, list[str]]:
    """Qualified name -> the names a file's summary defines that class by, read once."""
    files = _DEFINED.get(index)
    if files is None:
        files = _DEFINED[index] = {}
    kept = files.get(summary.path)
    if kept is not None and kept[0] is summary:
        return kept[1]
    found: dict[str, list[str]] = {}
    for n, c in summary.classes.items():
        found.setdefault(c.qualname, []).append(n)
    files[summary.path] = (summary, found)
    return found


def _global_writes(fn: ast.AST) -> list[tuple[str, ast.AST]]:
    """The (name, value) of each assignment in `fn` to a name it declares `global`."""
    declared = {n for node in ast.walk(fn) if isinstance(node, ast.Global) for n in node.names}
    if not declared:
        return []
    return [(target.id, node.value) for node in ast.walk(fn) if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name) and target.id in declared]


def _names(annotation: ast.AST) -> set[str]:
    """Names an annotation mentions (`Platform | None`, `Optional["Platform"]`)."""
    found = set()
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                found |= _names(ast.parse(node.value, mode="eval"))
            except (SyntaxError, ValueError):
                pass
    return found


def _test_module(module: str) -> bool:
    """`pkg.tests.test_x`, `test_x`, `x_test`, `conftest`: a test module."""
    parts = module.split(".")
    last = parts[-1]
    return (any(p in ("test", "tests") for p in parts) or last.startswith("test_")
            or last.endswith("_test") or last == "conftest")


# Numbers and flags, alone or in small shapes (`list[int]` of axes); not `str` or `bytes`,
# which may hold a whole file (pytest's assertion rewriter kept every module's source).
_SCALARS = {"int", "float", "bool", "complex", "None", "Optional", "Literal", "Union", "list", "tuple",
            "Sequence", "torch", "dtype", "device"}  # `torch.dtype`, `torch.device` too


def _scalar(param: cst.Param) -> bool:
    """A parameter that holds a plain value: annotated with numbers only (`dim: int`,
    `theta: float = 1e4`, `axes: list[int]`), or unannotated with a number, string or bool
    default. What a rotary embedding keeps of its arguments weighs nothing."""
    if param.annotation is not None:
        names = {n.value for n in iter_nodes(param.annotation.annotation) if isinstance(n, cst.Name)}
        return bool(names) and names <= _SCALARS
    default = param.default
    return isinstance(default, (cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(default, cst.Name) and default.value in ("True", "False"))


def _container(value: cst.BaseExpression) -> bool:
    """An empty or literal dict, list or set, or a call making one (`defaultdict(list)`)."""
    if isinstance(value, (cst.Dict, cst.List, cst.Set, cst.DictComp, cst.ListComp, cst.SetComp)):
        return True
    return isinstance(value, cst.Call) and \
        (cst.helpers.get_full_name_for_node(value.func) or "").rpartition(".")[2] in CONTAINER_CALLS
