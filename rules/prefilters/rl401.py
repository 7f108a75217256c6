"""RL401's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl401_gc_freeze_without_unfreeze.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast
import re

from retainlint.project.names import NOT_INSTANCE_DECORATORS
from retainlint.project.nodes import FileNodes
from retainlint.project.prefilter import Prefilter, words
from retainlint.project.ast_facts import absolute, decorator_name, file_imports, qualify


FREEZE = "gc.freeze"

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)



def _instance_method(imports: dict[str, str], fn: ast.AST) -> bool:
    """`cstutil.is_instance_method` on the ast."""
    if any(decorator_name(imports, d) in NOT_INSTANCE_DECORATORS for d in fn.decorator_list):
        return False
    params = fn.args.posonlyargs or fn.args.args
    return bool(params) and params[0].arg == "self"


def freezer_aliases(index, key=None) -> frozenset[str]:
    """Names a project module imports a function that freezes under, other than its own.
    A question for `ProjectIndex.ask`, which works each answer out once per index."""
    return frozenset(
        local for summary in index.modules.values()
        for local, target in summary.imports.items()
        if local != target.rpartition(".")[2] and index.resolve(target) in index.freezers)


class GcFreezeWithoutUnfreezePrefilter(Prefilter):
    code = "RL401"

    triggers = ("freeze",)

    scans = True

    @classmethod
    def scan(cls, nodes: FileNodes):
        """(callees of instance methods; module-level function -> its callees), qualified
        as the rule's import table does (names of the file's own functions stay bare;
        calls on `self`/`cls` and of unimported bare names, never a freezer, left out)."""
        imports = file_imports(nodes)
        functions = {n.name for n in nodes.tree.body if isinstance(n, _DEFS)}
        in_methods: set[str] = set()
        graph: dict[str, set[str]] = {}
        instance: dict[int, bool] = {}
        for call in nodes.of(ast.Call):
            func = call.func
            if type(func) is ast.Name:
                name = func.id
                if name not in imports and name not in functions:
                    continue
            elif type(func) is not ast.Attribute:
                continue
            q = qualify(imports, func)
            if q is None or q.split(".", 1)[0] in ("self", "cls"):
                continue
            top = None
            for owner in nodes.owners(call):
                top = owner
            if top is not None and isinstance(top, _DEFS):
                graph.setdefault(top.name, set()).add(q)
            where = nodes.method_of(call)
            if where is not None:
                fn = where[1]
                if id(fn) not in instance:
                    instance[id(fn)] = _instance_method(imports, fn)
                if instance[id(fn)]:
                    in_methods.add(q)
        # only module-level functions matter (`top` may be a nested one of the same name)
        graph = {name: frozenset(callees) for name, callees in graph.items() if name in functions}
        return frozenset(in_methods), graph

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """An instance method calls `gc.freeze`, a function of the project that freezes
        (`index.freezers`), or one of the file's functions that calls one of those."""
        summary = getattr(data, "summary", None)
        if summary is None:
            return cls._imports_freezer(data, index)
        found = summary.scans.get(cls.code)
        if found is None:
            return cls._methods_call_freezer(data, summary, index)
        in_methods, graph = found
        if not in_methods:
            return False
        names = {q.rpartition(".")[2] for q in index.freezers}
        aliases = None

        def freezes(q: str, local: set[str]) -> bool:
            nonlocal aliases
            if q == FREEZE or q in local:
                return True
            if q in graph:  # a function of the file that is no freezer (yet)
                return False
            last = q.rpartition(".")[2]
            if last not in names:
                if aliases is None:
                    aliases = index.ask(freezer_aliases, None)
                if last not in aliases:
                    return False
            return index.resolve(absolute(q, summary)) in index.freezers

        local: set[str] = set()
        changed = True
        while changed:  # the file's functions that freeze, through each other
            changed = False
            for name, callees in graph.items():
                if name not in local and any(freezes(q, local) for q in callees):
                    local.add(name)
                    changed = True
        return any(freezes(q, local) for q in in_methods)

    @classmethod
    def _methods_call_freezer(cls, data: bytes, summary, index) -> bool:
        """No "freeze" in the file: a method of one of its classes calls a project
        function that freezes, by the index's summary of the file (its functions that do
        are freezers themselves; methods of classes nested in classes are not summarized)."""
        if not summary.classes:
            return False
        freezers = index.freezers
        # a qualified call can only resolve to a freezer under its name or an alias
        ends = tuple({"." + q.rpartition(".")[2] for q in freezers}
                     | {"." + a for a in index.ask(freezer_aliases, None)})
        for klass in summary.classes.values():
            for method in klass.methods.values():
                if NOT_INSTANCE_DECORATORS.intersection(method.decorators):
                    continue
                calls = method.calls
                if not calls.isdisjoint(freezers) or any(
                        q.endswith(ends) and index.resolve(q) in freezers for q in calls):
                    return True
        return False

    @classmethod
    def _imports_freezer(cls, data: bytes, index) -> bool:
        """No `ast`: "freeze" in the file, or a project function that freezes imported by
        name or called through its module (`from x import warm_up`, `x.warm_up(`)."""
        if b"freeze" in data:
            return True
        present = words(data)
        for q in index.freezers:
            f = index.functions.get(q)
            if f is None or f.is_method or q.rsplit(".", 1)[1].encode() not in present:
                continue
            name = re.escape(q.rsplit(".", 1)[1].encode())
            # `import` then the name within a (parenthesised, multi-line) import list
            if re.search(rb"(?:\bimport\b[^;]{0,1000}?\b|\.)" + name + rb"\b", data):
                return True
        return False
