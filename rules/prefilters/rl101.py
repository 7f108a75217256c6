"""RL101's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl101_cache_key_bound_method.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast

from retainlint.project.ast_facts import DEFS, Heavy, Values, absolute, annotation_names, decorator_name
from retainlint.project.index import CACHE_DECORATORS
from retainlint.project.names import NOT_INSTANCE_DECORATORS
from retainlint.project.nodes import FileNodes
from retainlint.project.prefilter import Prefilter, words

_DECORATOR_TOKENS = (b"lru_cache", b"functools.cache", b"@cache", b"import cache", b"alru_cache")


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


def _cached_statics_called(nodes: FileNodes) -> tuple[str, ...]:
    """The decorators (other than `staticmethod`/`classmethod`) of static and class
    methods of this file's classes that are called here through `self.m(...)`, `cls.m(...)`
    or `Klass.m(...)` with `self` among the arguments: a cached one keeps each instance."""
    imports = None
    called = {call.func.attr for call in nodes.of(ast.Call)
              if type(call.func) is ast.Attribute and type(call.func.value) is ast.Name
              and any(type(a) is ast.Name and a.id == "self" for a in call.args)}
    if not called:
        return ()
    found: list[str] = []
    for cls in nodes.of(ast.ClassDef):
        for fn in cls.body:
            if not isinstance(fn, DEFS) or fn.name not in called or len(fn.decorator_list) < 2:
                continue
            if imports is None:
                imports = Values(nodes, bound=True).imports
            names = [q for q in (decorator_name(imports, d) for d in fn.decorator_list) if q]
            if any(q in NOT_INSTANCE_DECORATORS for q in names):
                found.extend(q for q in names if q not in NOT_INSTANCE_DECORATORS)
    return tuple(found)


def cached_aliases(index, key=None) -> frozenset[bytes]:
    """Names a project module imports a cached module-level function under, other than
    its own (`from .impl import _f as f`). A question for `ProjectIndex.ask`, which works
    each answer out once per index."""
    found = set()
    for summary in index.modules.values():
        for local, target in summary.imports.items():
            if local != target.rpartition(".")[2]:
                f = index.cached_function(target)
                if f is not None and not f.is_method:
                    found.add(local.encode())
    return frozenset(found)


class CacheKeyBoundMethodPrefilter(Prefilter):
    code = "RL101"

    triggers = ("cache",)

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
            if isinstance(node, DEFS):
                functions[node.name] = node
        decorated = {name: fn for name, fn in functions.items() if fn.decorator_list}
        hidden = hidden_imports(nodes)
        statics = _cached_statics_called(nodes)
        if not decorated:
            return (), {}, {}, hidden, statics
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
        return (tuple(defs), {k: frozenset(v) for k, v in local.items()}, values.bases(named), hidden,
                statics)

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
        defs, local, bases, hidden, statics = found
        if any(index.is_cache_decorator(absolute(d, summary)) or d in CACHE_DECORATORS
               for d in statics):
            return True
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
