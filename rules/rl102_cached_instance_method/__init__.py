"""RL102 cached-instance-method.

The rule's class (detection and reports); its documentation and examples are in
`examples.py`, process-wide singletons (the `ProjectIndex.ask` questions) in
`singletons.py`, what a method's parameters and a class's stores say in `arguments.py`."""

from __future__ import annotations

import ast
import os
from typing import Iterator, Optional

import libcst as cst
import libcst.helpers

from retainlint.project.names import NOT_INSTANCE_DECORATORS
from retainlint.analysis.cstutil import body_functions, body_statements, cache_maxsize, call_args, is_self, self_attribute
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.hooks import local_bases
from retainlint.analysis.weight import weigher
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.index import CACHE_DECORATORS, instantiated_in_functions
from retainlint.rules.prefilters.rl102 import (
    CachedInstanceMethodPrefilter,
    ENUM_BASES,
)
from retainlint.analysis.severity import Facts, is_model, level
from retainlint.project.consequence import built_as_a_part, lives_for_the_process
from retainlint.analysis.rule import RelatedNode, Rule
from retainlint.analysis.walk import visit
from retainlint.rules.rl102_cached_instance_method.arguments import _container, _per_device, _scalar
from retainlint.rules.rl102_cached_instance_method.examples import DOCS, INVALID, VALID
from retainlint.project.class_family import class_family
from retainlint.rules.rl102_cached_instance_method.singletons import (
    _fillers_in,
    _Instantiations,
    process_singleton,
)

_UNBOUNDED_BY_DEFAULT = frozenset({"functools.cache"})


class CachedInstanceMethod(Rule):
    prefilter = CachedInstanceMethodPrefilter
    name = "cached-instance-method"
    summary = "`@lru_cache`/`@cache` on an instance method keeps every instance it was called on alive"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = DOCS
    valid = VALID
    invalid = INVALID

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
                cache = (decorator, *self._aliased(decorator.decorator, qualified))
                break
        if cache is None:
            return
        if self._is_enum(cls) or self._is_module_singleton(cls) or self._is_process_singleton(cls):
            return
        decorator, expr, qualified = cache
        heavy = self.ctx.heavy.is_heavy_class(cls)
        weights = heavy and (self._holds_weights(cls) or self._builds_unseen_children(cls))
        method = f"{cls.name.value}.{node.name.value}"
        size = self._size(expr, qualified)
        spelled = "@" + self.ctx.code(
            decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        )
        # what stays: the instance and what the method returned for it, always; weights
        # only when the class holds some (a rotary embedding module has none)
        held = f"; `{cls.name.value}` holds weights, and they stay allocated with it" if weights else ""
        # a bound keeps the instances of the latest entries, not all it saw
        maxsize = cache_maxsize(self.ctx, expr, qualified)
        which = (f"every `{cls.name.value}` instance it saw" if maxsize in (None, "None")
                 else f"the last `{cls.name.value}` instance it saw" if maxsize == "1"
                 else f"the `{cls.name.value}` instances of its latest "
                      f"{maxsize if maxsize.isdigit() else f'`{maxsize}`'} entries")
        self.report(
            decorator,
            f"`{spelled}` on instance method `{method}` ({size}): `self` is part of every "
            f"cache key, so the class-level cache keeps {which} "
            f"alive, with the values it returned, for as long as the process runs{held}. "
            f"{self._suggestion(node, heavy)}",
            severity=level(self._facts(cls, expr, qualified, node, heavy, weights)),
            related=[RelatedNode(f"class `{cls.name.value}`", cls.name)],
            consequence=self._consequence(cls, node, maxsize, weights),
        )

    def _consequence(self, cls: cst.ClassDef, fn: cst.FunctionDef, maxsize: Optional[str],
                     weights: bool) -> Consequence:
        """Every instance the method saw, with its arguments and results, in the cache on
        the function (the class's, for the process); without a bound (a project wrapper
        counts as unbounded, as in `_grows`) one entry more per instance and arguments -
        per arguments only for the instance the process makes once."""
        name, method = cls.name.value, fn.name.value
        bounded = maxsize not in (None, "None")
        p = fn.params
        keys = [*p.posonly_params, *p.params, *p.kwonly_params][1:]
        starred = isinstance(p.star_arg, cst.Param) or isinstance(p.star_kwarg, cst.Param)
        per = ("" if not keys and not starred
               else "device" if not starred and all(_per_device(self.ctx, k) for k in keys)
               else "distinct arguments")
        once = self.ctx.classes.get(name) is cls and lives_for_the_process(
            self.ctx.index, f"{self.ctx.module_name}.{name}")
        growth = ("" if bounded or once and not per else f"one entry per {per}" if once
                  else f"one entry per instance{' and ' + per if per else ''}")
        weighs = " (with its weights)" if weights else ""
        kept = (f"the last `{name}` instance{weighs} `{method}` was called on, with its arguments and result"
                if maxsize == "1" else
                f"every `{name}` instance{weighs} `{method}` was called on, with its arguments and results"
                + (f" (up to {maxsize} entries)" if bounded else ""))
        return Consequence(kept, f"the class-level cache of `{name}.{method}`", "the process", growth)

    def _facts(self, cls: cst.ClassDef, expr: cst.BaseExpression, qualified: str,
               fn: cst.FunctionDef, heavy: bool, weights: bool) -> Facts:
        """What the cache costs. Heavy: the class holds weights. Meant to go: a module with
        weights is what a process loads, drops and loads again (a model), and a cache
        of more than one entry keeps the dropped ones; one entry (`maxsize=1`) keeps at most
        the last, replaced by the next call. An instance made once for the process (a
        platform, an environment) is kept no longer than it lives anyway. Light and bounded:
        a few small values."""
        grows = heavy and self._grows(fn, expr, qualified)
        maxsize = cache_maxsize(self.ctx, expr, qualified)
        if self.ctx.classes.get(cls.name.value) is cls and lives_for_the_process(
                self.ctx.index, f"{self.ctx.module_name}.{cls.name.value}"):
            return Facts(heavy=weights, grows=grows, meant_to_go=False)
        # A torch module's weight is what its parameters, buffers and children weigh, which
        # `weights` measured; what else its `__init__` keeps is configuration. An instance
        # keeps what a base of this file stores too (crossfit's `FrameBackend.__init__`).
        if not weights and maxsize not in (None, "None") and (
                is_model(self.ctx, cls) or not any(self._keeps_arguments(c) for c in [cls, *local_bases(self.ctx, cls)])):
            return Facts(heavy=False, grows=False)
        several = maxsize in (None, "None") or maxsize.strip() not in ("0", "1")
        if not several and is_model(self.ctx, cls) and self.ctx.classes.get(cls.name.value) is cls \
                and built_as_a_part(self.ctx.index, f"{self.ctx.module_name}.{cls.name.value}"):
            # one entry keeps one part of the last model that ran (a position embedding, a
            # decoder), replaced when any model of that class runs again: a model released
            # to free its memory is not kept whole, and nothing piles up
            return Facts(heavy=False, grows=False)
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
        if "." not in absolute and self.ctx.module_name:  # an alias: `remember_last = lru_cache(1)`
            absolute = f"{self.ctx.module_name}.{absolute}"
        if self.ctx.index.is_cache_decorator(absolute):
            return self.ctx.index.resolve(absolute) or absolute
        return None

    def _aliased(self, expr: cst.BaseExpression, qualified: str) -> tuple[cst.BaseExpression, str]:
        """The cache a module-level alias of this file stands for (`remember_last =
        lru_cache(1)`: `lru_cache(1)` and `functools.lru_cache`, whose size then counts), or
        the decorator as it is."""
        name = qualified.rpartition(".")[2]
        if not isinstance(expr, cst.Name) or qualified != f"{self.ctx.module_name}.{name}":
            return expr, qualified
        for stmt in _module_statements(self.ctx.module.body):
            for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and len(small.targets) == 1 \
                        and isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == name:
                    made = self.ctx.qualname(small.value.func)
                    if made in CACHE_DECORATORS:
                        return small.value, made
        return expr, qualified

    def _grows(self, fn: cst.FunctionDef, expr: cst.BaseExpression, qualified: str) -> bool:
        """Can the cache grow without bound: not bounded by a `maxsize` (a project wrapper
        without one counts as unbounded), and keyed by more than the device or dtype (one
        entry per device is as many as the machine has)?"""
        if cache_maxsize(self.ctx, expr, qualified) not in (None, "None"):
            return False
        p = fn.params
        keys = [param for param in (*p.posonly_params, *p.params, *p.kwonly_params)][1:]
        if isinstance(p.star_arg, cst.Param) or isinstance(p.star_kwarg, cst.Param):
            return True
        return not all(_per_device(self.ctx, param) for param in keys)

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


def _module_statements(body) -> Iterator[cst.CSTNode]:
    """A module's statements, with those of its `if`, `try` and `with` blocks."""
    for stmt in body:
        yield stmt
        if not isinstance(stmt, (cst.If, cst.Try, cst.With)):
            continue
        blocks = [stmt.body, *(h.body for h in getattr(stmt, "handlers", ()))]
        for extra in (getattr(stmt, "orelse", None), getattr(stmt, "finalbody", None)):
            if isinstance(extra, cst.If):  # `elif`
                yield from _module_statements([extra])
            elif extra is not None:
                blocks.append(extra.body)
        for block in blocks:
            if isinstance(block, cst.IndentedBlock):
                yield from _module_statements(block.body)
