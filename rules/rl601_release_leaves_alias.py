"""RL601 release-leaves-alias."""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import (
    OwnScopeVisitor, body_functions, body_statements, is_self, self_attribute)
from retainlint.analysis.fix_preconditions import nulling, still_held
from retainlint.analysis.holding import caller_supplied, immutable_annotation, immutable_value
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.index import qualified_in
from retainlint.rules.prefilters.rl601 import (
    ReleaseLeavesAliasPrefilter,
    READ_ONLY_METHODS,
    SCALAR_ATTRS,
    SCALAR_CALLS,
    scalar_name,
)
from retainlint.analysis.release import FINALIZER, is_release_method
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.walk import visit
from retainlint.analysis.weight import substantial_value

# Attribute names that are methods on any model-like object.
_METHOD_NAMES = frozenset({"forward", "__call__"})


# -- does a project callee keep what it is handed? ----------------------------------
# (The project index records no data flow, so the callee's source is read with `ast`,
# once per file and only for calls that hand over a released attribute.)
_MAX_CALLEE_DEPTH = 4


def _function_node(index, summary) -> Optional[ast.AST]:
    found = index.source(summary.path)
    if found is None:
        return None
    tree = found[0]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == summary.line \
                and node.col_offset + 1 == summary.column:
            return node
    return None


def _methods_named(index, name: str) -> list:
    """Every project method called `name` (asked of the index as one project-wide question)."""
    return index.ask(_all_methods_named, name)


def _all_methods_named(index, name: str) -> list:
    return index.memo("rl601 methods by name", lambda: _methods_by_name(index)).get(name, [])


def _methods_by_name(index) -> dict[str, list]:
    table: dict[str, list] = {}
    for q, f in index.functions.items():
        if f.is_method:
            table.setdefault(q.rsplit(".", 1)[1], []).append(f)
    return table


def _from_inner_root(index, qualified: Optional[str], importer: Optional[str]) -> Optional[str]:
    """`core.patience.f` imported by `app.core.run`, a project run with `app/` itself on
    `sys.path` (its modules import each other without the `app.` prefix): the project's
    `app.core.patience.f`, looked for under the importer's own packages, innermost first.
    None when there is none (a name of the standard library never is one)."""
    if not qualified or not importer or qualified.split(".", 1)[0] in sys.stdlib_module_names:
        return None
    packages = importer.split(".")[:-1]
    for end in range(len(packages), 0, -1):
        found = index.resolve(".".join(packages[:end]) + "." + qualified)
        if found in index.classes or found in index.functions:
            return found
    return None


def _ast_root(node: ast.AST) -> Optional[ast.AST]:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


class _Escape:
    """Does parameter `param` of a project function escape it (stored on an object,
    returned, captured by a closure, handed to a method of another object)?"""

    def __init__(self, index) -> None:
        self.index = index
        self.known: dict[tuple, bool] = index.memo("rl601 escapes", dict)
        self.active: dict[tuple, int] = {}  # functions being judged -> depth on that stack
        self.low = 1 << 30  # the shallowest of them the current judgement went back to

    def callee_keeps(self, qualified: Optional[str], position: Optional[int],
                     keyword: Optional[str], depth: int = 0, importer: Optional[str] = None) -> bool:
        """Does calling project function/class `qualified` (named in module `importer`)
        keep the argument? True when unknown."""
        resolved = self.index.resolve(qualified)
        if resolved not in self.index.classes and resolved not in self.index.functions:
            resolved = _from_inner_root(self.index, qualified, importer) or resolved
        if not resolved:
            return True
        cls = self.index.classes.get(resolved)
        if cls is not None:
            seen = 0
            while cls is not None and "__init__" not in cls.methods and seen < 6:
                seen += 1
                bases = [self.index.resolve(b) for b in cls.bases]
                cls = next((self.index.classes[b] for b in bases if b in self.index.classes), None)
            if cls is None:
                return True
            return self.keeps(cls.methods["__init__"], position, keyword, True, depth)
        function = self.index.functions.get(resolved)
        if function is None:
            return True
        return self.keeps(function, position, keyword, function.is_method, depth)

    def keeps(self, summary, position, keyword, skip_first: bool, depth: int,
              returns: bool = True) -> bool:
        """With `returns` False: does the call leave a reference behind, on its receiver
        or anything it reaches? What the call returns is the caller's to judge where the
        result goes (`self.lease = self.pool.lease(size=n)` holds `n` in the lease, not
        in the pool)."""
        key = (summary.qualname, summary.path, position, keyword, returns)
        if key in self.known:
            return self.known[key]
        if key in self.active:
            # A cycle (`send_parts` handing on to another object's `send_parts`): going
            # round it adds no store, so it counts for nothing; what was judged under that
            # assumption is only remembered once the cycle's first function has its answer.
            self.low = min(self.low, self.active[key])
            return False
        mine, outer = len(self.active), self.low
        self.active[key] = mine
        self.low = mine
        result = self._keeps(summary, position, keyword, skip_first, depth, returns)
        del self.active[key]
        if result or self.low >= mine:
            self.known[key] = result
        self.low = min(outer, self.low)
        return result

    def _keeps(self, summary, position, keyword, skip_first, depth, returns) -> bool:
        if depth > _MAX_CALLEE_DEPTH:
            return True
        fn = _function_node(self.index, summary)
        if fn is None:
            return True
        args = fn.args
        positional = [*args.posonlyargs, *args.args]
        if skip_first and positional:
            positional = positional[1:]
        if keyword is not None:
            names = [a.arg for a in (*positional, *args.kwonlyargs)]
            if keyword not in names:
                return args.kwarg is not None
            param = keyword
        elif position is not None:
            if position >= len(positional):
                return args.vararg is not None
            param = positional[position].arg
        else:
            return True
        file = self.index.files.get(os.path.abspath(summary.path))
        tracked = {param}
        body = list(ast.walk(ast.Module(body=fn.body, type_ignores=[])))
        for _ in range(3):  # locals derived from the parameter
            for node in body:
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if self.holds(file, node.value, tracked, depth):
                        for t in targets:
                            for n in ast.walk(t):
                                if isinstance(n, (ast.Attribute, ast.Subscript)):
                                    break
                                if isinstance(n, ast.Name) and n.id != "self":
                                    tracked.add(n.id)
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    if self.holds(file, node.iter, tracked, depth) or (
                            isinstance(node.iter, ast.Call) and any(
                                isinstance(a, ast.Name) and a.id in tracked for a in node.iter.args)):
                        for n in ast.walk(node.target):
                            if isinstance(n, ast.Name) and n.id != "self":
                                tracked.add(n.id)
        for node in body:
            if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) and node.value is not None:
                if returns and self.holds(file, node.value, tracked, depth):
                    return True
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets) and \
                        self.holds(file, node.value, tracked, depth):
                    return True
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node is not fn:
                if any(isinstance(n, ast.Name) and n.id in tracked for n in ast.walk(node)):
                    return True
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in READ_ONLY_METHODS:
                    continue
                root = _ast_root(node.func.value)
                if isinstance(root, ast.Name) and root.id in tracked:
                    continue  # a method of the argument itself
                if isinstance(root, ast.Name) and file is not None and root.id in file.imports:
                    continue  # a module function: judged where its result goes
                if isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name) \
                        and node.func.value.func.id == "super":
                    if any(self.holds(file, a, tracked, depth) for a in node.args) or any(
                            self.holds(file, k.value, tracked, depth) for k in node.keywords):
                        return True
                    continue
                # what the method returns is judged where it goes: an assignment or a
                # `return` above, an argument of a call (`holds`)
                for i, a in enumerate(node.args):
                    if self.holds(file, a, tracked, depth):
                        methods = _methods_named(self.index, node.func.attr)
                        if not methods or any(self.keeps(m, i, None, True, depth + 1, False) for m in methods):
                            return True
                for k in node.keywords:
                    if self.holds(file, k.value, tracked, depth):
                        methods = _methods_named(self.index, node.func.attr)
                        if not methods or any(self.keeps(m, None, k.arg, True, depth + 1, False)
                                              for m in methods):
                            return True
        return False

    def holds(self, file, expr: ast.AST, tracked: set, depth: int) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in tracked
        if isinstance(expr, ast.Attribute):
            return isinstance(expr.value, ast.Name) and expr.value.id in tracked and \
                expr.attr in _METHOD_NAMES
        if isinstance(expr, ast.Starred):
            return self.holds(file, expr.value, tracked, depth)
        if isinstance(expr, ast.Await):
            return self.holds(file, expr.value, tracked, depth)
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            return any(self.holds(file, e, tracked, depth) for e in expr.elts)
        if isinstance(expr, ast.Dict):
            return any(self.holds(file, e, tracked, depth) for e in (*expr.keys, *expr.values) if e is not None)
        if isinstance(expr, ast.IfExp):
            return self.holds(file, expr.body, tracked, depth) or self.holds(file, expr.orelse, tracked, depth)
        if isinstance(expr, ast.BoolOp):
            return any(self.holds(file, e, tracked, depth) for e in expr.values)
        if isinstance(expr, ast.NamedExpr):
            return self.holds(file, expr.value, tracked, depth)
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            inner = set(tracked)
            for gen in expr.generators:
                if isinstance(gen.iter, ast.Name) and gen.iter.id in tracked:
                    inner |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
            return self.holds(file, expr.elt, inner, depth)
        if isinstance(expr, ast.Call):
            q = qualified_in(file, expr.func)
            importer = file.module if file is not None else None
            if q in SCALAR_CALLS or scalar_name(q):
                return False
            if isinstance(expr.func, ast.Attribute):
                root = _ast_root(expr.func.value)
                if isinstance(root, ast.Name) and root.id in tracked:
                    return False  # a value computed by the argument's method
            for i, a in enumerate(expr.args):
                if self.holds(file, a, tracked, depth):
                    if isinstance(a, ast.Starred):
                        return True
                    if self.callee_keeps(q, i, None, depth + 1, importer):
                        return True
            for k in expr.keywords:
                if self.holds(file, k.value, tracked, depth):
                    if k.arg is None or self.callee_keeps(q, None, k.arg, depth + 1, importer):
                        return True
            return False
        return False


_STORE_VERBS = frozenset(
    {
        "load", "register", "add", "attach", "bind", "set", "append", "extend", "insert",
        "setdefault", "install", "store", "push", "track", "wrap", "hold", "keep",
        "save", "own", "adopt", "init", "initialize", "setup", "__setitem__",
    }
)
_COPY_CALLS = frozenset(
    {
        "list", "dict", "tuple", "set", "frozenset", "copy.copy", "collections.OrderedDict",
        "builtins.list", "builtins.dict", "builtins.tuple", "builtins.set",
    }
)


# Method names that use a handle/id they are given and do not keep it.
_USE_VERBS = frozenset(
    {
        "release", "free", "remove", "close", "unregister", "drop", "delete", "discard",
        "cancel", "abort", "check", "get", "query", "is", "has", "poll", "wait", "lookup",
        "contains", "shutdown", "cleanup", "destroy", "reset", "clear", "stop", "finish",
    }
)
_CLOSE_METHODS = frozenset({"close", "shutdown", "release", "cleanup", "stop", "terminate", "destroy"})
# Words of a module function that ends the object it is handed first (`ray.kill(actor)`,
# `os.close(fd)`, `terminate_process(proc)`): what still refers to it holds a dead handle.
_ENDING_WORDS = frozenset({"close", "shutdown", "terminate", "destroy", "kill", "dispose", "stop"})


def _ends_argument(func: cst.BaseExpression, modules: frozenset) -> bool:
    """A function (not a method of an object: `self.pool.release(x)` gives `x` back to a
    pool that keeps it) named to end what it is handed."""
    root = func
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name) or (root is not func and root.value not in modules):
        return False
    last = func.attr.value if isinstance(func, cst.Attribute) else func.value
    return not _ENDING_WORDS.isdisjoint(last.lower().split("_"))


def _uses_only(method: Optional[str]) -> bool:
    return bool(method) and any(t in _USE_VERBS for t in method.split("_"))


def _stores_by_name(method: Optional[str]) -> bool:
    if not method:
        return True
    return method in _STORE_VERBS or any(t in _STORE_VERBS for t in method.split("_"))


@dataclass
class _Source:
    attr: str  # the alias attribute (`b`)
    node: cst.CSTNode  # where it was made
    method: str  # the method it was made in
    how: str  # "alias" | "bound" | "built" | "container" | "handed"
    via: str  # `self.model` or the local's name


@dataclass
class _Release:
    attr: str
    kind: str  # "del" | "none" | "clear"
    small: cst.BaseSmallStatement
    line: cst.CSTNode  # SimpleStatementLine or SimpleStatementSuite
    order: int
    # inside a loop: the order the outermost enclosing loop starts at (what the loop
    # runs after the release, on its next pass, comes before it in the source)
    loop_start: Optional[int] = None


@dataclass
class _MethodFacts:
    # self.X = value (X -> [(value, statement node)])
    assigns: list = field(default_factory=list)  # (attr, value, node)
    # self.X...m(args) / self.X.y = value / self.X[k] = value
    handed: list = field(default_factory=list)  # (attr, [exprs], node, method name)
    # name = value, self.X = name
    name_from_attr: list = field(default_factory=list)  # (name, attr)
    # ordered events for fix safety: ("ref", attr, order) / ("call", method, order)
    events: list = field(default_factory=list)
    releases: list = field(default_factory=list)
    calls_self: set = field(default_factory=set)
    closed: set = field(default_factory=set)  # attrs whose object is ended here: `.close()`, `ray.kill(...)`
    closing_names: set = field(default_factory=set)  # locals `.close()`d here
    called_attrs: dict = field(default_factory=dict)  # self.X.y(...) -> {X: {y}}
    self_called: set = field(default_factory=set)  # self.X(...)
    unpacked: set = field(default_factory=set)  # attrs assigned by unpacking (`self.X, y = ...`)


def _self_root(expr: cst.BaseExpression) -> Optional[str]:
    """`b` for `self.b.x.y`, `self.b[0].z` (but not for `self.b` itself)."""
    node = expr
    while True:
        if isinstance(node, cst.Attribute):
            if is_self(node.value):
                return None if node is expr else node.attr.value
            node = node.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            return None


def _const_str(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _del_targets(target: cst.BaseExpression):
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _del_targets(element.value)
    else:
        yield target


class _Collector(OwnScopeVisitor):
    """Facts about one method body, nested functions and lambdas left out."""

    def __init__(self, modules: frozenset = frozenset()) -> None:
        self.modules = modules  # names the file's imports bind
        self.facts = _MethodFacts()
        self.order = 0
        self.line: Optional[cst.CSTNode] = None
        self.loops: list[int] = []  # orders the enclosing for/while loops start at

    def _tick(self) -> int:
        self.order += 1
        return self.order

    def visit_For(self, node) -> None:
        self.loops.append(self.order)

    def leave_For(self, node) -> None:
        self.loops.pop()

    visit_While = visit_For
    leave_While = leave_For

    def visit_SimpleStatementLine(self, node) -> None:
        self.line = node

    def visit_SimpleStatementSuite(self, node) -> None:
        self.line = node

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if is_self(node.value):
            self.facts.events.append(("ref", node.attr.value, self._tick()))

    def _release(self, attr: str, kind: str, small) -> None:
        loop_start = self.loops[0] if self.loops else None
        self.facts.releases.append(_Release(attr, kind, small, self.line, self._tick(), loop_start))

    def visit_Del(self, node: cst.Del) -> None:
        for target in _del_targets(node.target):
            attr = self_attribute(target)
            if attr is not None:
                self._release(attr, "del", node)

    def visit_Assign(self, node: cst.Assign) -> None:
        names = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
        for t in node.targets:
            self._assign(t.target, node.value, node, names)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assign(node.target, node.value, node, [])

    def _assign(self, target, value, node, names) -> None:
        attr = self_attribute(target)
        if attr is not None:
            is_none = isinstance(value, cst.Name) and value.value == "None"
            if is_none:
                self._release(attr, "none", node)
            else:
                self.facts.assigns.append((attr, value, node))
                for n in names:
                    self.facts.name_from_attr.append((n, attr))
                if isinstance(value, cst.Name):
                    self.facts.name_from_attr.append((value.value, attr))
            return
        if isinstance(target, cst.Name):
            source = self_attribute(value)
            if (
                source is None and isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
                and value.func.value == "getattr" and len(value.args) >= 2
                and is_self(value.args[0].value)
            ):
                source = _const_str(value.args[1].value)
            if source is not None:
                self.facts.name_from_attr.append((target.value, source))
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            if isinstance(value, (cst.Tuple, cst.List)) and len(target.elements) == len(value.elements):
                for t, v in zip(target.elements, value.elements):
                    self._assign(t.value, v.value, node, [])
            else:
                for t in target.elements:
                    for inner in _del_targets(t.value):
                        attr = self_attribute(inner)
                        if attr is not None:
                            self.facts.unpacked.add(attr)
            return
        root = _self_root(target)
        if root is not None:
            self.facts.handed.append((root, [value], node, None))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "delattr" and node.args:
            if is_self(node.args[0].value):
                name = _const_str(node.args[1].value) if len(node.args) > 1 else None
                if name is not None:
                    self._release(name, "del", node)
            return
        if node.args and not node.args[0].keyword and _ends_argument(func, self.modules):
            first = node.args[0].value
            if self_attribute(first) is not None:
                self.facts.closed.add(self_attribute(first))
            elif isinstance(first, cst.Name):
                self.facts.closing_names.add(first.value)
        if not isinstance(func, cst.Attribute):
            return
        receiver = func.value
        method = func.attr.value
        if is_self(receiver):
            self.facts.calls_self.add(method)
            self.facts.self_called.add(method)
            self.facts.events.append(("call", method, self._tick()))
            return
        attr = self_attribute(receiver)
        if method in _CLOSE_METHODS:
            if attr is not None:
                self.facts.closed.add(attr)
            elif isinstance(receiver, cst.Name):
                self.facts.closing_names.add(receiver.value)
        if attr is not None:
            self.facts.called_attrs.setdefault(attr, set()).add(method)
        root = attr or _self_root(receiver)
        if root is not None and node.args:
            self.facts.handed.append((root, [a.value for a in node.args], node, method))

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "clear"
            and not call.args
        ):
            attr = self_attribute(call.func.value)
            if attr is not None:
                self._release(attr, "clear", node)

class ReleaseLeavesAlias(Rule):
    prefilter = ReleaseLeavesAliasPrefilter
    name = "release-leaves-alias"
    summary = "A release method drops an attribute while another attribute still references the same object"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    docs = """
## What it does
Reports a release method (`shutdown`, `close`, `cleanup`, `release`, `teardown`, `free`,
`stop`, `__exit__`, `__aexit__`; configurable) that drops an attribute `self.a`
(`del self.a`, `self.a = None`, `self.a.clear()`, also under a guard such as
`if hasattr(self, "a"):`) while another attribute `self.b` still references the same
object and is not dropped on the release path: by that method, the methods it calls on
`self` or through `super()`, in this class or a project base class in any file. `self.b`
references it when, anywhere in the class, it was

- assigned from an expression that holds `self.a`: `self.b = State(self.a)`,
  `self.b = self.a.forward`, `self.b = [self.a]`, `self.b = self.a`;
- assigned from the same local value: `m = load(); self.a = m; self.b = Wrapper(m)`;
- handed `self.a`: `self.b.load_model(self.a)`, `self.b.model = self.a`.

Values only derived from it (`len(self.a)`, `str(self.a)`, `os.path.join(self.a, "x")`,
`self.a.config`, `self.a.compute(x)`) do not count. A `.clear()` release is only reported for
attributes built from the container (a clear empties the shared object itself).

Not release methods (the shared judgement of `analysis/release.py`): `__del__` (what
still references `self.a` dies with the object), methods that free one item per call
(`stop(self, action_name)`, `free(self, idx=None)` returning when given nothing),
abstract ones and stubs that raise. Nor is anything reported when the release path drops
attributes it cannot name (`vars(self)`, `self.__dict__`) or hands `self` to other code,
for an attribute that only ever holds a number, text, bytes or a path, for an object the
release path ends first (`ray.kill(self.x)`, `self.x.close()`), or for a sink the caller
handed in whose method is judged only by its name.

## Why it leaks
`del self.model` frees nothing while `self.model_state` still references the model: the
weights stay allocated until the whole owner goes away, which after a "shutdown" in the
same process may be never.

## Incident
A GPU model runner's new `shutdown()` deleted `self.model`, the KV caches and the config,
but `self.model_state` (built from the model) and `self.speculator` (which had been
handed the model) kept the weights alive. A follow-up added `del self.model_state` and
`self.speculator = None`.

## Example
```python
class Runner:
    def load_model(self):
        self.model = load()
        self.model_state = ModelState(self.model)

    def shutdown(self):
        if hasattr(self, "model"):
            del self.model  # RL601: `self.model_state` still references it
```

## Severity
An error when what stays is heavy - annotated or built as a model or tensor, returned by an
accessor as one (`def get_model(self) -> nn.Module`), or built from such an attribute
(`init_model_state(config, self.model)`) - so the release is defeated; a warning otherwise
(a task group, a poller, a small dict: real, but it costs little).

## Fix (safe for a private name nothing else reads)
Offered only for an error: nulling the other holders of something light frees nothing that
matters. `self.b = None` is inserted right after the release of `self.a`, inside the same guard
when the release is guarded - for every holder the finding names, or for none. No fix is
offered when something may read `self.b` after the release: the release method (or a
method it calls afterwards) past that point, any other method of the class, its bases or
its subclasses (properties and re-entry such as `load()` after `shutdown()` included) that
reads it without assigning it first, a `hasattr`/`getattr` guard on it, or a class
attribute of that name that `None` would hide; nor when `b` is a property, nor when
another attribute holds `self.a`'s object or its parts too (`self.optimizer` built from
`self.model.parameters()`): the message names it. The fix is unsafe, its help line saying
what changes, when `b` is a public name (code outside the project may read it), when
another module reads `.b`, or when the release method reads `self.b` (a second call sees
`None`).
"""

    valid = [
        # the alias is dropped too (in a method the release method calls)
        """
class Runner:
    def load(self, m):
        self.model = m
        self.state = State(self.model)

    def shutdown(self):
        del self.model
        self._drop_state()

    def _drop_state(self):
        self.state = None
""",
        # plain values derived from the model
        """
class Runner:
    def load(self):
        self.model = build()
        self.n_layers = len(self.model)
        self.name = str(self.model)
        self.out = self.model.compute(1)
        self.cfg = self.model.config

    def close(self):
        self.model = None
""",
        # clearing a shared list empties it for every holder
        """
class Cache:
    def __init__(self):
        self.kv_caches = []
        self.view = self.kv_caches
        self.binder.bind(self.kv_caches)

    def cleanup(self):
        self.kv_caches.clear()
""",
        # the actor's process is ended first: what still refers to it holds a dead handle
        """
import ray


class Pool:
    def __init__(self, factory):
        self.worker = factory.remote()
        self.client = Client(self.worker)

    def stop(self):
        ray.kill(self.worker)
        self.worker = None
""",
        # dynamic deletes: cannot tell what is left
        """
class Runner:
    def __init__(self, m):
        self.model = m
        self.wrapped = Wrap(m)

    def close(self):
        del self.model
        for name in list(vars(self)):
            delattr(self, name)
""",
    ]
    invalid = [
        Example(
            """
class Runner:
    def load_model(self):
        self.model = load()
        self.model_state = init_model_state(self.config, self.model)
        self.speculator.load_model(self.model)

    def shutdown(self):
        if hasattr(self, "model"):
            del self.model
""",
            # no fix: `load_model()` reads `self.speculator` again after `shutdown()`
            lines=[10],
        ),
        # nothing reads the holder after the release: fixed (unsafe: a public name)
        Example(
            """
import torch.nn as nn


class Runner:
    def load_model(self):
        self.model: nn.Module = load()
        self.model_state = init_model_state(self.config, self.model)

    def shutdown(self):
        if hasattr(self, "model"):
            del self.model
""",
            lines=[12],
            fixed="""
import torch.nn as nn


class Runner:
    def load_model(self):
        self.model: nn.Module = load()
        self.model_state = init_model_state(self.config, self.model)

    def shutdown(self):
        if hasattr(self, "model"):
            del self.model
            self.model_state = None
""",
        ),
        # the same local value; a bound method
        Example(
            """
import torch.nn as nn


class Engine:
    def __init__(self, model: nn.Module):
        self.model = model
        self.wrapper = Wrapper(model)
        self.fn = self.model.forward

    def close(self):
        self.model = None  # release
        self.fn = None
""",
            lines=[12],
            fixed="""
import torch.nn as nn


class Engine:
    def __init__(self, model: nn.Module):
        self.model = model
        self.wrapper = Wrapper(model)
        self.fn = self.model.forward

    def close(self):
        self.model = None  # release
        self.wrapper = None
        self.fn = None
""",
        ),
        # still used later in the release method: reported, no fix
        Example(
            """
class Engine:
    def __init__(self, model):
        self.model = model
        self.graphs = GraphPool(self.model)

    def close(self):
        del self.model
        self.graphs.reset()
""",
            lines=[8],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._facts: dict[int, _MethodFacts] = {}

    # -- facts ---------------------------------------------------------------------
    def _method_facts(self, fn: cst.FunctionDef) -> _MethodFacts:
        key = id(fn)
        if key not in self._facts:
            collector = _Collector(frozenset(self.ctx.imports.names))
            visit(fn.body, collector)
            self._facts[key] = collector.facts
        return self._facts[key]

    # -- detection -----------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        cls = self.ctx.scope.method_class
        if cls is None or self.ctx.scope.function is not node:
            return
        # not `__del__`: what still references the attribute dies with the object
        if node.name.value == FINALIZER or not is_release_method(self.ctx, node):
            return
        facts = self._method_facts(node)
        if not facts.releases:
            return
        drops = self.ctx.release.drops(cls, [node])
        if drops is None:
            return
        dropped = drops.unbound  # references let go (a holder closed still holds)
        # One finding per released attribute: its last `del`/`= None`, else its `.clear()`.
        chosen: dict[str, _Release] = {}
        for release in facts.releases:
            previous = chosen.get(release.attr)
            if previous is None or (previous.kind == "clear" and release.kind != "clear"):
                chosen[release.attr] = release
        methods = self.ctx.methods(cls)
        closed = set(facts.closed) | {
            attr for name, attr in facts.name_from_attr if name in facts.closing_names
        }
        for release in sorted(chosen.values(), key=lambda r: r.order):
            if release.attr in closed:
                continue  # explicitly ended: what still references it holds a dead handle
            sources = self._aliases(cls, node, release)
            sources = [s for s in sources if s.attr not in dropped]
            if sources:
                self._report(cls, node, release, sources, methods)

    def _plain_value(self, cls: cst.ClassDef, attr: str) -> bool:
        """Is `self.attr` only ever a value that holds no other object (a number, text,
        bytes, a path): by its literal, its annotation, the parameter or the function
        it comes from (`self.width = requested_width(r)` with `-> int`)?"""
        seen = False
        for fn in body_functions(cls):
            if attr in self._method_facts(fn).unpacked:
                return False  # `self.a, self.b = make()`: a value not seen here
            for value, ann in self.ctx.heavy.local_assignments(fn).get(f"self.{attr}", ()):
                if value is None or (isinstance(value, cst.Name) and value.value == "None"):
                    continue
                if not (immutable_value(self.ctx, value, fn) or (
                        ann is not None and immutable_annotation(self.ctx, ann.annotation))):
                    return False
                seen = True
        return seen

    def _aliases(self, cls: cst.ClassDef, release_fn: cst.FunctionDef, release: _Release) -> list[_Source]:
        a = release.attr
        if self._plain_value(cls, a):
            return []
        found: dict[str, _Source] = {}
        release_names = set(self.ctx.settings.release_methods)
        called_on_a: set[str] = set()
        called_self: set[str] = set()
        for fn in body_functions(cls):
            facts = self._method_facts(fn)
            called_on_a |= facts.called_attrs.get(a, set())
            called_self |= facts.self_called
        for fn in body_functions(cls):
            facts = self._method_facts(fn)
            names = {n for n, attr in facts.name_from_attr if attr == a}
            for attr, value, node in facts.assigns:
                if attr == a or attr in found:
                    continue
                held = self._holds(value, a, names, called_on_a, attr in called_self)
                if held is None:
                    continue
                how, via = held
                if release.kind == "clear" and how != "copy":
                    continue
                if release.kind != "clear" and how == "copy":
                    how = "built"
                if how == "built" and attr.lstrip("_").startswith(SCALAR_ATTRS):
                    continue
                found[attr] = _Source(attr, node, fn.name.value, how, via)
            if fn.name.value in release_names:
                continue  # handing it over while releasing is cleanup, not retention
            for attr, exprs, node, method in facts.handed:
                if attr == a or attr in found or method in READ_ONLY_METHODS:
                    continue
                if release.kind == "clear":
                    continue
                for i, expr in enumerate(exprs):
                    held = self._holds(expr, a, names, called_on_a, False)
                    if held is not None and self._handed_keeps(cls, attr, node, method, i):
                        found[attr] = _Source(attr, node, fn.name.value, "handed", held[1])
                        break
        return list(found.values())

    def _holds(self, expr, a: str, names: set, called_on_a: set, called: bool):
        """Does evaluating `expr` give something that references `self.a`?
        (how, spelled source) or None."""

        def ref(e) -> Optional[str]:
            if self_attribute(e) == a:
                return f"self.{a}"
            if isinstance(e, cst.Name) and e.value in names:
                return e.value
            return None

        def walk(e, depth: int):
            if depth > 8:
                return None
            direct = ref(e)
            if direct is not None:
                return ("alias", direct) if depth == 0 else ("container", direct)
            if isinstance(e, cst.Attribute):
                base = ref(e.value)
                if base is not None and (
                    e.attr.value in _METHOD_NAMES or e.attr.value in called_on_a
                    or (called and depth == 0)
                ):
                    return ("bound", base)
                return None
            if isinstance(e, cst.Call):
                q = self.ctx.qualname(e.func)
                if q in SCALAR_CALLS or scalar_name(q):
                    return None
                if isinstance(e.func, cst.Attribute):
                    if depth == 0 and e.func.attr.value == "copy" and not e.args and ref(e.func.value):
                        return ("copy", ref(e.func.value))
                    root = e.func.value
                    while isinstance(root, (cst.Attribute, cst.Subscript)):
                        if ref(root):
                            return None  # a value computed by its own method
                        root = root.value
                    if ref(root):
                        return None
                for i, arg in enumerate(e.args):
                    inner = walk(arg.value, depth + 1)
                    if inner is None:
                        continue
                    if depth == 0 and q in _COPY_CALLS and i == 0 and inner[0] in ("alias", "container"):
                        return ("copy", inner[1])
                    if arg.star or self._callee_keeps(q, i, arg):
                        return ("built", inner[1])
                return None
            if isinstance(e, (cst.Tuple, cst.List, cst.Set)):
                for element in e.elements:
                    inner = walk(element.value, depth + 1)
                    if inner is not None:
                        return ("container", inner[1])
                return None
            if isinstance(e, cst.Dict):
                for element in e.elements:
                    parts = (
                        (element.key, element.value)
                        if isinstance(element, cst.DictElement)
                        else (element.value,)
                    )
                    for part in parts:
                        inner = walk(part, depth + 1)
                        if inner is not None:
                            return ("container", inner[1])
                return None
            if isinstance(e, cst.IfExp):
                return walk(e.body, depth) or walk(e.orelse, depth)
            if isinstance(e, cst.BooleanOperation):
                return walk(e.left, depth) or walk(e.right, depth)
            if isinstance(e, cst.NamedExpr):
                return walk(e.value, depth)
            return None

        return walk(expr, 0)

    def _callee_keeps(self, qualified: Optional[str], position: int, arg: cst.Arg) -> bool:
        keyword = arg.keyword.value if arg.keyword is not None else None
        absolute = self.ctx.absolute(qualified)
        index = self.ctx.index
        resolved = index.resolve(absolute)
        if resolved not in index.classes and resolved not in index.functions:
            resolved = _from_inner_root(index, absolute, self.ctx.module_name)
            if resolved is None:
                return True
        return _Escape(index).callee_keeps(resolved, None if keyword else position, keyword)

    def _attribute_classes(self, cls: cst.ClassDef, attr: str) -> set[str]:
        """Project classes `self.attr` is annotated with or built from."""
        found: set[str] = set()
        index = self.ctx.index
        for fn in body_functions(cls):
            for value, ann in self.ctx.heavy.local_assignments(fn).get(f"self.{attr}", ()):
                exprs = []
                if ann is not None:
                    a = ann.annotation
                    if isinstance(a, cst.BinaryOperation):
                        exprs += [a.left, a.right]
                    else:
                        exprs.append(a)
                if isinstance(value, cst.Call):
                    exprs.append(value.func)
                for e in exprs:
                    q = index.resolve(self.ctx.absolute(self.ctx.qualname(e)))
                    if q in index.classes:
                        found.add(q)
        return found

    def _handed_keeps(self, cls, receiver: str, node: cst.CSTNode, method: Optional[str],
                      position: int) -> bool:
        if method is None or not isinstance(node, cst.Call):
            return True  # `self.b.x = ...`, `self.b[k] = ...`
        arg = node.args[position]
        if arg.star:
            return True
        keyword = arg.keyword.value if arg.keyword is not None else None
        if _uses_only(method):
            return False
        candidates = []
        direct = isinstance(node.func, cst.Attribute) and self_attribute(node.func.value) == receiver
        if direct:
            for q in self._attribute_classes(cls, receiver):
                c, seen = self.ctx.index.classes.get(q), 0
                while c is not None and method not in c.methods and seen < 6:
                    seen += 1
                    bases = [self.ctx.index.resolve(b) for b in c.bases]
                    c = next((self.ctx.index.classes[b] for b in bases if b in self.ctx.index.classes), None)
                if c is not None:
                    candidates.append(c.methods[method])
        if not candidates:
            own = f"{self.ctx.module_name}.{cls.name.value}."
            candidates = [  # the receiver is another object: not this class's method
                m for m in _methods_named(self.ctx.index, method) if not m.qualname.startswith(own)
            ]
            if not candidates or len(candidates) > 3:
                # Judged by the method's name alone. A sink the caller handed in
                # (`self.buffer = buffer`) keeps what it is given for its owner, on
                # purpose: dropping this object's reference to it would free nothing.
                return _stores_by_name(method) and not (direct and caller_supplied(self.ctx, cls, receiver))
        escape = _Escape(self.ctx.index)
        return any(  # what the method returns is judged where it goes (`assigns`)
            escape.keeps(m, None if keyword else position, keyword, True, 0, False) for m in candidates
        )

    # -- reporting -----------------------------------------------------------------
    def _report(self, cls, fn, release: _Release, sources: list[_Source], methods) -> None:
        spelled = {
            "del": f"`del self.{release.attr}`",
            "none": f"`self.{release.attr} = None`",
            "clear": f"`self.{release.attr}.clear()`",
        }[release.kind]
        what = {
            "alias": "is the same object",
            "bound": "holds a bound method of it",
            "built": "was built from it",
            "container": "contains it",
            "copy": "is a copy of it",
            "handed": "was handed it",
        }
        parts = [
            f"`self.{s.attr}` ({what[s.how]}, via `{s.via}` in `{s.method}()`)" for s in sources
        ]
        holders = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        verb = "keeps" if len(sources) == 1 else "keep"
        related = [
            RelatedNode(f"`self.{s.attr}` takes a reference to `self.{release.attr}` here", s.node)
            for s in sources
        ]
        message = (f"{spelled} in `{fn.name.value}()` frees nothing: {holders} {verb} "
                   f"`self.{release.attr}`'s object alive, and `{fn.name.value}()` does not drop "
                   f"{'it' if len(sources) == 1 else 'them'}")
        # holders of its parts the alias analysis does not name (an optimizer over its
        # parameters): nulling the named ones alone would still free nothing
        named = {s.attr for s in sources} | {release.attr}
        drops = self.ctx.release.drops(cls, [fn])
        others = still_held(self.ctx, cls, release.attr, named | (drops.unbound if drops else set()))
        if others:
            message += "; " + "; ".join(f"`self.{a}` (built from it in `{m}()`) holds it or its parts too"
                                        for a, m in others[:3])
        # What stays decides the level: a model, tensors or what was built from them is a
        # release defeated (error); anything else - a task group, a poller, a few ints -
        # stays real but bounded (warning), and nulling its other holders frees nothing
        # that matters, so no fix is offered for it.
        heavy = self._heavy(cls, release.attr)
        kept = f"`self.{release.attr}`'s object" + (" (heavy)" if heavy else "")
        if not heavy:
            message += "; what stays is not known to be heavy"
        fix = None
        if heavy and not others and all(self._fixable(cls, fn, release, s.attr, methods) for s in sources):
            changes = [c for s in sources for c in self._nulling(cls, fn, release, s.attr).changes]
            fix = self._fix(release, [s.attr for s in sources], changes)
        self.report(
            release.small,
            message,
            fix=fix,
            severity=Severity.ERROR if heavy else Severity.WARNING,
            related=related,
            statement=release.line,
            consequence=Consequence(
                kept=kept,
                holder=", ".join(f"`self.{s.attr}`" for s in sources),
                lifetime=f"as long as the `{cls.name.value}` instance, after `{fn.name.value}()`",
            ),
        )

    def _heavy(self, cls: cst.ClassDef, attr: str, depth: int = 0) -> bool:
        """Is `self.attr` something heavy that pins real memory: by an assignment's
        annotation or value anywhere in the class, by an accessor that returns it as a
        heavy type (`def get_model(self) -> nn.Module: return self.model`), or as a call
        handed such an attribute (`init_model_state(config, self.model)` keeps the model)?"""
        oracle = self.ctx.heavy
        for fn in body_functions(cls):
            if depth < 2 and fn.returns is not None and oracle.is_heavy_annotation(fn.returns.annotation) \
                    and any(isinstance(s, cst.Return) and s.value is not None and self_attribute(s.value) == attr
                            for line in body_statements(fn) if isinstance(line, cst.SimpleStatementLine)
                            for s in line.body):
                return True
            for value, ann in oracle.local_assignments(fn).get(f"self.{attr}", ()):
                if ann is not None and oracle.is_heavy_annotation(ann.annotation):
                    return True
                if value is None or (isinstance(value, cst.Name) and value.value == "None"):
                    continue
                if oracle.is_heavy_value(value, fn, cls) and substantial_value(self.ctx, value, fn):
                    return True
                if depth < 2 and isinstance(value, cst.Call) and any(
                        self_attribute(a.value) not in (None, attr)
                        and self._heavy(cls, self_attribute(a.value) or "", depth + 1) for a in value.args):
                    return True
        return False

    def _fixable(self, cls, fn, release: _Release, attr: str, methods) -> bool:
        if attr in methods:
            return False  # a property or method: assigning None would not do the same
        for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Assign, cst.AnnAssign)) and "__slots__" in self.ctx.code(small):
                        return False
        if self._nulling(cls, fn, release, attr).blockers:
            return False  # read after the release by another method, a guard, a class attribute
        facts = self._method_facts(fn)
        uses = self._users(cls, attr)
        # uses after the release run after `self.b = None`, and so does all of a loop
        # around the release (its condition included) on its next pass
        later = release.order if release.loop_start is None else release.loop_start
        for kind, name, order in facts.events:
            if order <= later:
                continue
            if kind == "ref" and name == attr:
                return False
            if kind == "call" and name in uses:
                return False
        return True

    def _nulling(self, cls, fn, release: _Release, attr: str):
        # after `del self.a`, a method reading `self.a` unguarded fails already: its
        # reading `self.b` too is named in the help line rather than blocking the fix
        return nulling(self.ctx, cls, attr, fn, deleted=release.attr if release.kind == "del" else None)

    def _users(self, cls, attr: str) -> set[str]:
        """Methods of the class that reference `self.attr`, directly or via calls."""
        methods = self.ctx.methods(cls)
        users = {
            name for name, f in methods.items()
            if any(k == "ref" and n == attr for k, n, _ in self._method_facts(f).events)
        }
        changed = True
        while changed:
            changed = False
            for name, f in methods.items():
                if name not in users and self._method_facts(f).calls_self & users:
                    users.add(name)
                    changed = True
        return users

    def _fix(self, release: _Release, attrs: list[str], changes: list[str]):
        new_small = [
            cst.Assign(
                targets=[cst.AssignTarget(cst.Attribute(cst.Name("self"), cst.Name(attr)))],
                value=cst.Name("None"),
            )
            for attr in attrs
        ]
        line = release.line
        if isinstance(line, cst.SimpleStatementLine):
            replacement = cst.FlattenSentinel(
                [line, *(cst.SimpleStatementLine(body=[s]) for s in new_small)]
            )
        elif isinstance(line, cst.SimpleStatementSuite):
            body = list(line.body)
            body[-1] = body[-1].with_changes(semicolon=cst.Semicolon(
                whitespace_after=cst.SimpleWhitespace(" ")))
            replacement = line.with_changes(body=[*body, *new_small])
        else:
            return None
        names = ", ".join(f"`self.{a} = None`" for a in attrs)
        message = f"Add {names} after the release of `self.{release.attr}`"
        if changes:  # what a caller may see: unsafe, and said so
            return self.fix(f"{message}: {'; '.join(changes)}", {line: replacement},
                            applicability=Applicability.UNSAFE)
        return self.fix(message, {line: replacement})
