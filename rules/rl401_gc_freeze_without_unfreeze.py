"""RL401 gc-freeze-without-unfreeze."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Optional

import libcst as cst

from retainlint.analysis.context import FileContext
from retainlint.analysis.cstutil import append_to_function, body_functions, is_instance_method
from retainlint.core.finding import Applicability, Severity
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
freeze/unfreeze pair, e.g. around CUDA graph capture), and in classes that run as a Ray
actor (`@ray.remote`, `ray.remote(Cls)` in the same file): like an entry point, the actor
owns its process.

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
`close`, `cleanup`, ... it defines), adding `import gc` when the module does not import
it at top level. Without a release method there is no fix: add `gc.unfreeze()` to
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
        if cls.name.value in self.actors or self._unfreezes(cls):
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
            "`gc.unfreeze()`, so objects in reference cycles allocated before it (the model, "
            "KV cache) survive shutdown",
            fix=self._fix(cls, fn),
            related=related,
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
                    if arg.keyword is None and not arg.star and isinstance(arg.value, cst.Name):
                        actors.add(arg.value.value)

        visit(module, _Actors())
        return actors

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
        release = self.ctx.release_method(cls)
        if release is None or release is fn:
            return None
        spelling, imports = _unfreeze_spelling(self.ctx)
        stmt = cst.parse_statement(f"{spelling}()")
        return self.fix(
            f"Call `gc.unfreeze()` at the end of `{release.name.value}()`",
            {release: append_to_function(release, [stmt])},
            imports=imports,
        )


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
