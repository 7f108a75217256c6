"""RL401 gc-freeze-without-unfreeze."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Optional

import libcst as cst

from retainlint.analysis.context import FileContext
from retainlint.analysis.cstutil import append_to_function, body_functions, is_instance_method
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.analysis.release import fix_release_method
from retainlint.project.index import qualified_in
from retainlint.rules.prefilters.rl401 import FREEZE, GcFreezeWithoutUnfreezePrefilter
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.walk import visit

UNFREEZE = "gc.unfreeze"
# A class handed to (or decorated with) one of these runs as an actor in a process
# of its own: like a process entry point, the process owns the frozen heap.
ACTOR_DECORATORS = frozenset({"ray.remote"})

Resolver = Callable[[cst.BaseExpression], Optional[str]]


# --------------------------------------------------------------------------------------
# Which functions freeze / unfreeze the collector: a computed set, keyed by the qualified
# name a call resolves to. Same-file functions are keyed by their bare name (that is what
# an unimported name resolves to); a project index can pass `known_freezers` /
# `known_unfreezers` with the qualified names of functions in other modules
# (`vllm.utils.gc_utils.freeze_gc_heap`), which calls here resolve to through imports.
# --------------------------------------------------------------------------------------


@dataclass
class CallSummary:
    """The calls a function makes, by resolved qualified name."""

    direct: set[str] = field(default_factory=set)  # in the function's own body
    nested: set[str] = field(default_factory=set)  # in nested defs / lambdas / classes


class _CallCollector(cst.CSTVisitor):
    def __init__(self, resolve: Resolver) -> None:
        self.resolve = resolve
        self.depth = 0
        self.summary = CallSummary()

    def _enter(self, node) -> bool:
        self.depth += 1
        return True

    def _leave(self, node) -> None:
        self.depth -= 1

    visit_FunctionDef = visit_Lambda = visit_ClassDef = _enter
    leave_FunctionDef = leave_Lambda = leave_ClassDef = _leave

    def visit_Call(self, node: cst.Call) -> None:
        name = self.resolve(node.func)
        if name:
            (self.summary.nested if self.depth else self.summary.direct).add(name)


def summarize(fn: cst.FunctionDef, resolve: Resolver) -> CallSummary:
    collector = _CallCollector(resolve)
    visit(fn.body, collector)
    return collector.summary


@dataclass
class GcEffects:
    """`freezers`: functions that leave the heap frozen (they call `gc.freeze()`, directly
    or through another freezer, and never `gc.unfreeze()`); `unfreezers`: functions that
    call `gc.unfreeze()` (directly or through another unfreezer, nested code included)."""

    freezers: set[str]
    unfreezers: set[str]

    def freezes(self, name: Optional[str]) -> bool:
        return name == FREEZE or name in self.freezers

    def unfreezes(self, names: Iterable[str]) -> bool:
        return any(n == UNFREEZE or n in self.unfreezers for n in names)


def compute_gc_effects(
    functions: Mapping[str, cst.FunctionDef],
    resolve: Resolver,
    known_freezers: Iterable[str] = (),
    known_unfreezers: Iterable[str] = (),
) -> GcEffects:
    summaries = {name: summarize(fn, resolve) for name, fn in functions.items()}
    unfreezers = set(known_unfreezers)
    changed = True
    while changed:
        changed = False
        for name, s in summaries.items():
            if name not in unfreezers and (UNFREEZE in s.direct | s.nested
                                           or (s.direct | s.nested) & unfreezers):
                unfreezers.add(name)
                changed = True
    freezers = set(known_freezers) - unfreezers
    changed = True
    while changed:
        changed = False
        for name, s in summaries.items():
            if name in freezers or name in unfreezers:  # paired in one function: fine
                continue
            if FREEZE in s.direct or s.direct & freezers:
                freezers.add(name)
                changed = True
    return GcEffects(freezers, unfreezers)


class GcFreezeWithoutUnfreeze(Rule):
    prefilter = GcFreezeWithoutUnfreezePrefilter
    name = "gc-freeze-without-unfreeze"
    summary = "`gc.freeze()` in a method of a class that never calls `gc.unfreeze()`"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    docs = """
## What it does
Reports `gc.freeze()` called in an instance method of a class (its `__init__` or any
other method) - directly, or through a function of the same file that calls it (a
`freeze_gc_heap()` helper, followed through other helpers) - when no method of that class
(or of a base class defined in the same file) calls `gc.unfreeze()`, directly or through
a function of the same file. `import gc as g`, `from gc import freeze` and imports inside
functions are understood.

Not reported: `gc.freeze()` at module level, in plain functions (process entry points
such as `main()`, worker loops, code under `if __name__ == "__main__":`), in
staticmethods and classmethods, in a function that also calls `gc.unfreeze()` (a
freeze/unfreeze pair, e.g. around CUDA graph capture), and in classes whose instances live
in a Ray actor process: like an entry point, the actor owns its process. Those are classes
run as an actor anywhere in the project (`@ray.remote`, `ray.remote(Cls)`,
`ray.remote(**options)(Cls)`, or a subclass made at run time,
`ray.remote(type(name, (Cls,), dict(Cls.__dict__)))`), and classes that only such code makes
(a method of an actor class, or a factory function only actor code calls).

## Why it leaks
Frozen objects move to a permanent generation that the cyclic collector ignores. Any
reference cycle among them - engines are full of cycles - is never collected, so
everything allocated before the freeze (the model, the KV cache) survives shutdown of an
engine that was created in-process.

## Incident
`EngineCore.__init__` called `freeze_gc_heap()` (which calls `gc.freeze()`) after
start-up, and `shutdown()` never called `gc.unfreeze()`: deleting an engine in-process
(tests, single-process mode) left the model weights and KV cache on the GPU. The fix
added `gc.unfreeze()` at the end of `shutdown()`.

## Example
```python
import gc

class EngineCore:
    def __init__(self, model):
        self.model = model
        gc.collect()
        gc.freeze()  # RL401

    def shutdown(self):
        self.model = None
```

## Fix (safe, where a release method exists)
`gc.unfreeze()` is appended to the class's release method (the first of `shutdown`,
`close`, `cleanup`, ... it defines that releases the whole object: not `__del__`, not a
per-item `free(self, block_id)`), adding `import gc` when the module does not import it
at top level. Without a release method there is no fix: add `gc.unfreeze()` to
whatever tears the object down.
"""

    valid = [
        # module level: the documented pre-fork use
        """
import gc
gc.collect()
gc.freeze()
""",
        # a process entry point owns the process's lifetime
        """
import gc

def main():
    server = build_server()
    gc.freeze()
    server.serve_forever()

if __name__ == "__main__":
    gc.freeze()
    main()
""",
        # freeze paired with unfreeze in the same function (here a helper)
        """
import gc
from contextlib import contextmanager

@contextmanager
def frozen_heap():
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()

class Runner:
    def capture(self):
        with frozen_heap():
            self.graphs = capture_graphs()
        gc.freeze()
        gc.unfreeze()
""",
        # the class unfreezes in close()
        """
import gc as g

class Engine:
    def __init__(self):
        g.freeze()

    def close(self):
        g.unfreeze()
""",
        # staticmethods and classmethods are not instance methods
        """
from gc import freeze

class Proc:
    @staticmethod
    def run_busy_loop():
        freeze()

    @classmethod
    def launch(cls):
        freeze()
""",
    ]
    invalid = [
        Example(
            """
import gc

class EngineCore:
    def __init__(self, model):
        self.model = model
        gc.collect()
        gc.freeze()

    def shutdown(self):
        self.model = None
""",
            lines=[8],
            fixed="""
import gc

class EngineCore:
    def __init__(self, model):
        self.model = model
        gc.collect()
        gc.freeze()

    def shutdown(self):
        self.model = None
        gc.unfreeze()
""",
        ),
        # through a helper of the same file (and a helper of the helper); `gc` is only
        # imported inside the helper, so the fix imports it at top level
        Example(
            """
import logging

def _freeze():
    import gc as g
    g.collect()
    g.freeze()

def freeze_gc_heap():
    logging.info("freezing")
    _freeze()

class EngineCore:
    def __init__(self):
        self.ready = True
        freeze_gc_heap()

    def close(self):
        \"\"\"Tear down.\"\"\"
        self.ready = False
        return
""",
            lines=[16],
            fixed="""
import logging
import gc

def _freeze():
    import gc as g
    g.collect()
    g.freeze()

def freeze_gc_heap():
    logging.info("freezing")
    _freeze()

class EngineCore:
    def __init__(self):
        self.ready = True
        freeze_gc_heap()

    def close(self):
        \"\"\"Tear down.\"\"\"
        self.ready = False
        gc.unfreeze()
        return
""",
        ),
        # no release method: reported, no fix
        Example(
            """
from gc import freeze

class Worker:
    def load_model(self):
        self.model = build()
        freeze()
""",
            lines=[7],
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        index = self.ctx.index
        local = self.ctx.imports.resolve

        def resolve(expr: cst.BaseExpression) -> Optional[str]:
            # same-file functions keep their bare names; others go through re-exports
            name = local(expr)
            if name is None or name.split(".", 1)[0] in self.ctx.functions:
                return name
            return index.resolve(name)

        self.resolve: Resolver = resolve
        self.effects = compute_gc_effects(self.ctx.functions, self.resolve,
                                          known_freezers=index.freezers,
                                          known_unfreezers=index.unfreezers)
        self.actors = self._actor_classes(node)
        self._class_unfreezes: dict[int, bool] = {}
        self._freezer_defs = {
            name: fn for name, fn in self.ctx.functions.items() if name in self.effects.freezers
        }

    def visit_Call(self, node: cst.Call) -> None:
        name = self.resolve(node.func)
        if not self.effects.freezes(name):
            return
        cls = self.ctx.scope.method_class
        fn = self.ctx.scope.function
        if cls is None or fn is None or not is_instance_method(self.ctx, fn):
            return
        if cls.name.value in self.actors or self._unfreezes(cls) or self._in_actor_process(cls):
            return
        where = f"{cls.name.value}.{fn.name.value}"
        if name == FREEZE:
            what = "`gc.freeze()`"
            related = []
        else:
            what = f"`{self.ctx.code(node.func)}()` (it calls `gc.freeze()`)"
            helper = self._freezer_defs.get(name)
            related = [RelatedNode(f"`{name}` freezes the heap here", helper.name)] if helper else []
        self.report(
            node,
            f"{what} in `{where}` is never undone: no method of `{cls.name.value}` calls "
            "`gc.unfreeze()`, so objects in reference cycles allocated before it survive shutdown",
            fix=self._fix(cls, fn),
            related=related,
            consequence=Consequence(f"every object in a reference cycle made before `{where}()` freezes",
                                    "`gc`'s permanent generation", "the process"),
        )

    # ----------------------------------------------------------------------------------

    def _actor_classes(self, module: cst.Module) -> set[str]:
        actors: set[str] = set()
        resolve = self.resolve

        class _Actors(cst.CSTVisitor):
            def visit_ClassDef(self, node: cst.ClassDef) -> None:
                for d in node.decorators:
                    target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
                    if resolve(target) in ACTOR_DECORATORS:
                        actors.add(node.name.value)

            def visit_Call(self, node: cst.Call) -> None:
                func = node.func
                if isinstance(func, cst.Call):  # `ray.remote(num_gpus=1)(Cls)`
                    func = func.func
                if resolve(func) in ACTOR_DECORATORS and node.args:
                    arg = node.args[0]
                    if arg.keyword is None and not arg.star:
                        actors.update(n.value for n in _actor_class_expressions(arg.value)
                                      if isinstance(n, cst.Name))

        visit(module, _Actors())
        return actors

    def _in_actor_process(self, cls: cst.ClassDef) -> bool:
        """Does every instance live in a Ray actor process, by what the whole project
        does (an actor class made in another module, or a class only actors make)?"""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return False  # a nested class: the index does not know it
        # this file's actors as it is linted; other files' are read from disk
        here = frozenset(f"{self.ctx.module_name}.{name}" for name in self.actors)
        return self.ctx.index.ask(in_actor_process, (f"{self.ctx.module_name}.{cls.name.value}", here))

    def _unfreezes(self, cls: cst.ClassDef) -> bool:
        """Does any method of `cls` or of its same-file base classes unfreeze?"""
        key = id(cls)
        if key not in self._class_unfreezes:
            self._class_unfreezes[key] = False  # guards against odd base cycles
            result = False
            for method in body_functions(cls):
                s = summarize(method, self.resolve)
                if self.effects.unfreezes(s.direct | s.nested):
                    result = True
                    break
            if not result:
                for base in cls.bases:
                    base_cls = (
                        self.ctx.classes.get(base.value.value)
                        if isinstance(base.value, cst.Name) else None
                    )
                    if base_cls is not None and base_cls is not cls and self._unfreezes(base_cls):
                        result = True
                        break
                    if base_cls is None and self._base_unfreezes(self.resolve(base.value)):
                        result = True
                        break
            self._class_unfreezes[key] = result
        return self._class_unfreezes[key]

    def _base_unfreezes(self, qualified: Optional[str], depth: int = 0) -> bool:
        """A base class in another file (through the project index) that unfreezes."""
        index = self.ctx.index
        summary = index.classes.get(index.resolve(qualified) or "")
        if summary is None or depth > 10:
            return False
        if any(m.qualname in index.unfreezers for m in summary.methods.values()):
            return True
        return any(self._base_unfreezes(b, depth + 1) for b in summary.bases)

    def _fix(self, cls: cst.ClassDef, fn: cst.FunctionDef):
        release = fix_release_method(self.ctx, cls)
        if release is None or release is fn:
            return None
        spelling, imports = _unfreeze_spelling(self.ctx)
        stmt = cst.parse_statement(f"{spelling}()")
        return self.fix(
            f"Call `gc.unfreeze()` at the end of `{release.name.value}()`",
            {release: append_to_function(release, [stmt])},
            imports=imports,
        )


def _actor_class_expressions(arg: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The classes `ray.remote(arg)` runs as an actor: `arg` itself, or the bases of a class
    made at run time, `type(name, (Cls,), dict(Cls.__dict__))`."""
    if isinstance(arg, cst.Call) and isinstance(arg.func, cst.Name) and arg.func.value == "type" \
            and len(arg.args) == 3 and isinstance(arg.args[1].value, cst.Tuple):
        return [e.value for e in arg.args[1].value.elements]
    return [arg]


# -- Ray actors across the project (`ProjectIndex.ask` questions, read with `ast`) ----------

_MAX_MAKERS_DEPTH = 4


def in_actor_process(index, key: tuple[str, frozenset[str]]) -> bool:
    """Is project class `qualified` (key[0]) run as a Ray actor somewhere in the project, or
    made (it or a project subclass) only by code that runs in an actor process: methods
    of such classes, and functions that only such code calls? Then its heap is the actor
    process's, killed on shutdown. key[1]: the actors of the file being linted."""
    qualified, here = key
    return _runs_in_actor(index, qualified, project_actors(index) | here, frozenset())


def _runs_in_actor(index, qualified: str, actors: frozenset[str], path: frozenset[str]) -> bool:
    if qualified in actors:
        return True
    if len(path) > _MAX_MAKERS_DEPTH or qualified in path:
        return False
    path = path | {qualified}
    targets = {qualified}
    if qualified in index.classes:
        targets |= {q for q, c in index.classes.items()
                    if any(a.qualname == qualified for a in index.ancestors(c.bases))}
    makers = _callers(index, targets)
    if not makers:
        return False  # made nowhere in the project: by whom, nobody knows
    return all(_runs_in_actor(index, f.qualname.rpartition(".")[0] if f.is_method else f.qualname,
                              actors, path) for f in makers)


def _callers(index, targets: set[str]) -> list:
    """The project functions and methods that call one of `targets`."""
    names = {t.rpartition(".")[2] for t in targets}
    return [f for f in index.functions.values()
            if any(c.rpartition(".")[2] in names and (index.resolve(c) or c) in targets for c in f.calls)]


def project_actors(index) -> frozenset[str]:
    """Qualified names of the project classes some file runs as a Ray actor (`@ray.remote`,
    `ray.remote(Cls)`, `ray.remote(**opts)(Cls)`, `ray.remote(type(name, (Cls,), ns))`).
    Kept per index: the answer only depends on it."""
    def make() -> frozenset[str]:
        actors: set[str] = set()
        for summary in index.files.values():
            if any(t == "ray" or t.startswith("ray.") for t in summary.imports.values()):
                actors |= _actors_in(index, summary)
        return frozenset(actors)

    return index.memo("rl401 project actors", make)


def _actors_in(index, summary) -> set[str]:
    source = index.source(summary.path)
    if source is None or b"remote" not in source[1]:
        return set()
    tree = source[0]

    def qualified(node: ast.AST) -> Optional[str]:
        q = qualified_in(summary, node)
        return index.resolve(q) or q if q else None

    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            if any(qualified(d.func if isinstance(d, ast.Call) else d) in ACTOR_DECORATORS
                   for d in node.decorator_list):
                found.add(f"{summary.module}.{node.name}")
        elif isinstance(node, ast.Call) and node.args:
            func = node.func.func if isinstance(node.func, ast.Call) else node.func
            if qualified(func) not in ACTOR_DECORATORS:
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "type" \
                    and len(arg.args) == 3 and isinstance(arg.args[1], ast.Tuple):
                classes = arg.args[1].elts
            else:
                classes = [arg]
            found.update(q for q in map(qualified, classes) if q)
    return found


def _unfreeze_spelling(ctx: FileContext) -> tuple[str, tuple[str, ...]]:
    """How to call `gc.unfreeze` from any method: only module-level imports count
    (an `import gc` inside `__init__` is not visible in `shutdown()`)."""
    top = ctx.module_imports
    local = top.local_name_for("gc")
    if local is not None:
        return f"{local}.unfreeze", ()
    local = top.local_name_for(UNFREEZE)
    if local is not None:
        return local, ()
    return UNFREEZE, ("gc",)
