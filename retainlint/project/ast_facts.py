"""Facts the rules' prefilters read from a file's `ast` (never libcst): its import table,
qualified names, annotations, and what may make a value heavy (`Values`, judged with the
project index by `Heavy`), read as the libcst rules read them."""

from __future__ import annotations

import ast
import os
from typing import Optional

from retainlint.project.index import METHOD_NAMES
from retainlint.project.names import HEAVY_TYPES, TENSOR_FACTORIES, absolute_import, standard_module
from retainlint.project.nodes import FileNodes, dotted, module_level


PROPERTIES = frozenset({"property", "builtins.property", "functools.cached_property"})

LOGGERS = frozenset({"logging.Logger", "logging.LoggerAdapter"})

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)

_UNIONS = frozenset({"typing.Optional", "typing.Union", "Optional", "Union"})

_GETATTR = frozenset({"getattr", "builtins.getattr"})

_PLAIN = frozenset({"str", "int", "float", "bool", "bytes", "None", "object"})

RETAINED = "!"  # evidence that needs no index: `self`, a bound method, a tensor made here


def file_imports(nodes: FileNodes) -> dict[str, str]:
    """Local name -> qualified name, as `retainlint.analysis.imports.ImportTable` builds it for a
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
                    table.setdefault(alias.asname, standard_module(alias.name))
                else:
                    head = alias.name.split(".")[0]
                    table.setdefault(head, head)
            continue
        base = "." * node.level + standard_module(node.module or "")
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
        for node in module_level(nodes.tree.body):
            if isinstance(node, DEFS):
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
            while fn is not None and not isinstance(fn, DEFS):
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
            elif not any(qualify(self.imports, b) in LOGGERS for b in cls.bases):
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
                decorator_name(self.imports, d) in PROPERTIES for d in method.decorator_list)
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
    return {s.name: s for s in cls.body if isinstance(s, DEFS)}


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


def finalize_calls(nodes: FileNodes) -> list[tuple[ast.Call, list[ast.AST], list[ast.AST]]]:
    """(call, positional arguments, keyword values) of the file's `weakref.finalize(...)`
    calls with an owner and a callback, however `weakref` or `finalize` is imported (as
    `ctx.qualname` resolves them). For the scans of RL201 and RL202: kept on `nodes`."""
    return nodes.shared("finalize calls", _finalize_calls)


def _finalize_calls(nodes) -> list:
    found = []
    imports = file_imports(nodes)
    # A relative import may still name the top-level `weakref` (`from . import weakref`
    # in a top-level module): let it count.
    modules = {k for k, v in imports.items()
               if v == "weakref" or v.startswith(".") and v.endswith(".weakref")}
    functions = {k for k, v in imports.items()
                 if v == "weakref.finalize" or v.startswith(".") and v.endswith(".weakref.finalize")}
    if "weakref" not in imports:
        modules.add("weakref")  # `weakref.finalize` resolves as written
    for call in nodes.of(ast.Call):
        func = call.func
        if type(func) is ast.Name:
            if func.id not in functions:
                continue
        elif not (type(func) is ast.Attribute and func.attr == "finalize"
                  and type(func.value) is ast.Name and func.value.id in modules):
            continue
        positional = [a for a in call.args if type(a) is not ast.Starred]
        if len(positional) >= 2:
            found.append((call, positional, [k.value for k in call.keywords if k.arg is not None]))
    return found
