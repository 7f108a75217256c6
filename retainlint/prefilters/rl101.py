"""RL101's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl101_cache_key_bound_method.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast
import os
import weakref
from typing import Optional

from retainlint.index import CACHE_DECORATORS, METHOD_NAMES
from retainlint.names import HEAVY_TYPES, TENSOR_FACTORIES, absolute_import
from retainlint.nodes import FileNodes, dotted
from retainlint.prefilter import Prefilter, words


_DECORATOR_TOKENS = (b"lru_cache", b"functools.cache", b"@cache", b"import cache", b"alru_cache")

_PROPERTIES = frozenset({"property", "builtins.property", "functools.cached_property"})

_LOGGERS = frozenset({"logging.Logger", "logging.LoggerAdapter"})

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
