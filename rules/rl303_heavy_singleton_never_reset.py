"""RL303 heavy-singleton-never-reset."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl303 import (
    SAME_OBJECT_METHODS,
    HeavySingletonNeverResetPrefilter,
    imported_as_module,
    used_anywhere,
)
from retainlint.analysis.cstutil import OwnScopeVisitor, cache_maxsize
from retainlint.analysis.module_caches import builds_own, cache_decorator, cleared_in_project
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.weight import substantial_value
from retainlint.analysis.walk import visit


def _is_globals_call(expr) -> bool:
    return (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name)
        and expr.func.value == "globals" and not expr.args
    )


def _const(expr) -> Optional[str]:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


class _Guard(cst.CSTVisitor):
    """Walks a function in source order up to one assignment: does the function read
    one of its `global` names before it, and is the assignment conditional (inside an
    `if`, or after a `return`/`raise`)? Nested functions and classes are not entered."""

    def __init__(self, target: cst.CSTNode, names: set[str]) -> None:
        self.target = target
        self.names = names
        self.stores: set[int] = set()  # the Name nodes assignments bind
        self.ifs = 0
        self.read = self.exited = False
        self.reached = self.conditional = False

    def _arrive(self, node: cst.CSTNode) -> bool:
        """Go on into `node`? Not past the assignment, nor into its own targets."""
        if node is self.target:
            self.reached = True
            self.conditional = self.ifs > 0 or self.exited
        return not self.reached

    def visit_Assign(self, node: cst.Assign) -> bool:
        self.stores.update(id(t.target) for t in node.targets)
        return self._arrive(node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        self.stores.add(id(node.target))
        return self._arrive(node)

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_Global(self, node) -> bool:
        return False

    def visit_If(self, node: cst.If) -> bool:
        self.ifs += 1
        return not self.reached

    def leave_If(self, node: cst.If) -> None:
        self.ifs -= 1

    def visit_Return(self, node) -> None:
        self.exited = self.exited or not self.reached

    def visit_Raise(self, node) -> None:
        self.exited = self.exited or not self.reached

    def visit_Name(self, node: cst.Name) -> None:
        if not self.reached and node.value in self.names and id(node) not in self.stores:
            self.read = True


def _on_demand(assignment: "_Assignment", declared: set[str]) -> bool:
    """Created on demand: the function looks at its globals (`if _X is None`,
    `cur = _X; if cur is None or cur.numel() < n`, `if _X is not None: return`) and
    assigns only in some of its calls."""
    guard = _Guard(assignment.node, declared)
    visit(assignment.function.body, guard)
    return guard.reached and guard.conditional and guard.read


@dataclass
class _Assignment:
    node: cst.CSTNode
    statement: Optional[cst.CSTNode]
    function: cst.FunctionDef
    cls: Optional[cst.ClassDef] = None  # the class `function` is a method of


@dataclass
class _Global:
    heavy: list = field(default_factory=list)  # [_Assignment]
    resets: list = field(default_factory=list)  # [FunctionDef] that reset it


class HeavySingletonNeverReset(Rule):
    prefilter = HeavySingletonNeverResetPrefilter
    name = "heavy-singleton-never-reset"
    summary = "A module global assigned a heavy object by a function (or a cached function's heavy result) is never reset"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports a module-level global that a function assigns a heavy object
(`global _manager; _manager = WorkspaceManager(device)`, where the class holds tensors;
a model, a tensor, the result of a function annotated to return one) while nothing ever
resets it: no function sets it to another value (`_manager = None`), deletes it
(`del _manager`, `globals()["_manager"] = None`) or clears it (`_manager.clear()`).

A module-level function memoized for the process (`@functools.cache`,
`@lru_cache(...)`, however imported) is the same singleton, one per argument tuple: it is
reported when a value it returns is heavy and nothing in the project calls
`<function>.cache_clear()`. A layer or model the function builds or loads
(`return Encoder(dim).eval()`) is an error; a buffer or workspace object it allocates
itself from plain inputs (`@cache def get_workspace(device): return Workspace(device)`,
holding GPU buffers) is a warning: bounded by its arguments, but pinned past every
shutdown. Tiny constants and weightless objects are not reported, and neither are
functions with heavy parameters (the cache's keys: RL101), nor tensors the function
computes itself from plain inputs (`return torch.tensor(LUT[bits], device=device)`, a
per-device table: process scratch, like RL302's per-device memos).

A cached loader is reported too (a warning): a function that returns a container it makes
empty and fills, in a loop over a file it opens, with numpy or torch arrays (`with
open(path) as f: for line in f: table[word] = np.array(...)`, `shards.append(torch.load(
...))`). The table is as large as the file - a word-vector file, a feature store - and
stays after what it was loaded for has copied it, unless something calls `cache_clear()`.
A table filled from a constant range (per-device levels) or with plain values is not.

A reset only counts when it can run: a module-level reset function whose name is never
called, imported or otherwise used anywhere in the project (its file included) is dead
code, and the global is reported with it as related location. Dropping the old object
before assigning a new one, in the same function, is no reset.

Not reported: globals only assigned at module level (import-time constants), globals
that a function resets, process-wide scratch created on demand (a buffer the function
allocates itself from plain inputs - a tensor, a workspace object whose class holds no
layer - assigned only while the function's globals say it is missing or too small:
`if _X is None: _X = torch.empty(n)`, `cur = _X; if cur is None or cur.numel() < n:`;
every caller in the process shares it, so its owner is the process, not an engine it
would outlive), values that pin no real memory (a tensor of a few literal
elements such as `torch.zeros(4)`, a module without weights such as an op, a project
object holding only such things), public globals (no leading underscore) of a module
that another project file imports as a module (it may reset `mod.X = None` itself), and
files that write `globals()` with computed names.

A cached loader of a word-vector table, never cleared:

```python
@functools.lru_cache(1)
def load_glove(path):
    table = {}
    with open(path) as f:
        for line in f:
            word, *values = line.split()
            table[word] = np.array([float(v) for v in values])
    return table  # RL303: the whole table outlives the embedding layer built from it
```

## Why it leaks
A module global is a GC root: what it references lives until the interpreter exits. A
singleton created while an engine starts (a workspace manager with GPU buffers, a cached
model) outlives the engine's shutdown, and every engine created later in the same
process either leaks another one or reuses stale state.

## Incident
vLLM's workspace-manager singleton (`init_workspace_manager()` assigning
`_manager = WorkspaceManager(...)`, which holds GPU workspace buffers) survived engine
shutdown. A `reset_workspace_manager()` existed "for testing", but nothing called it;
the fix called it from the model runner's `shutdown()`.

## Example
```python
_manager = None

def init_workspace_manager(device):
    global _manager
    _manager = WorkspaceManager(device)  # RL303: nothing ever resets `_manager`
```

```python
import functools

@functools.cache
def get_workspace(device):
    return Workspace(device)  # RL303: nothing calls `get_workspace.cache_clear()`
```

## Suggestion (no automatic fix)
Add a reset function (`global _manager; _manager = None`) and call it from the release
path of whatever created the singleton (an engine's or model runner's `shutdown()`); for
a cached function, call `get_workspace.cache_clear()` there, or keep the object on its
owner instead of in a process-wide cache.
"""

    valid = [
        # a cached loader cleared once the model is built
        """
import functools
import numpy as np

@functools.lru_cache(1)
def load_glove(path):
    table = {}
    with open(path) as f:
        for line in f:
            table[line.split()[0]] = np.array(line.split()[1:], dtype=float)
    return table

def build(path):
    rows = len(load_glove(path))
    load_glove.cache_clear()
    return rows
""",
        # reset by a function that is called
        """
import torch

_table = None

def build(n):
    global _table
    _table = torch.zeros(n, n)

def reset():
    global _table
    _table = None

def shutdown():
    reset()
""",
        # a grow-only scratch every caller shares, created on demand
        """
import torch

_scratch = None

def get_scratch(rows: int, device):
    global _scratch
    if _scratch is None or _scratch.shape[0] < rows:
        _scratch = torch.empty((rows, 128), dtype=torch.uint8, device=device)
    return _scratch[:rows]
""",
        # a cached function: tiny constants, or cleared on shutdown
        """
import functools
import torch

@functools.cache
def levels(device):
    return torch.tensor([0.0, 0.5, 1.0], device=device)

@functools.cache
def scratch(device):
    return torch.empty(1 << 20, device=device)

def shutdown():
    scratch.cache_clear()
""",
        # not heavy; and a local that only shares the name
        """
import torch.nn as nn

_config = None

def load(path):
    global _config
    _config = read(path)

def make():
    _config = nn.Linear(2, 2)
    return _config
""",
    ]
    invalid = [
        # a cached loader filling a table of arrays from a file
        Example(
            """
import functools
import numpy as np

@functools.lru_cache(1)
def load_glove(path):
    table = {}
    with open(path) as f:
        for line in f:
            table[line.split()[0]] = np.array(line.split()[1:], dtype=float)
    return table
""",
            lines=[11],
        ),
        Example(
            """
import torch.nn as nn

_model = None

def get_model():
    global _model
    if _model is None:
        _model = nn.Linear(8, 8)
    return _model
""",
            lines=[9],
        ),
        # a reset function that nothing calls
        Example(
            """
import torch

_buffers = None

def init(n):
    global _buffers
    _buffers = torch.empty(n)

def reset_buffers():
    global _buffers
    _buffers = None
""",
            lines=[8],
        ),
        # a cached function returning a model it builds, never cleared
        Example(
            """
import functools
import torch.nn as nn

@functools.lru_cache(maxsize=None)
def load_head(dim: int):
    return nn.Linear(dim, dim).eval()
""",
            lines=[7],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._declared: dict[int, set[str]] = {}  # id(function) -> its `global` names
        self._globals: dict[str, _Global] = {}
        self._dynamic = False
        self._cached: list[tuple[cst.FunctionDef, cst.Decorator]] = []  # `@cache` functions
        self._cleared: set[str] = set()  # names `X.cache_clear()` is called on in this file

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = self.ctx.scope  # `node` itself is on it already
        if len(scope.functions) > 1 or scope.classes:
            return  # methods are RL102's; nested functions die with their caller
        for d in node.decorators:
            if cache_decorator(self.ctx, d.decorator):
                self._cached.append((node, d))
                return

    # -- collection (during the shared traversal) -----------------------------------
    def _declared_here(self) -> tuple[Optional[cst.FunctionDef], set[str]]:
        fn = self.ctx.scope.function
        if fn is None:
            return None, set()
        return fn, self._declared.get(id(fn), set())

    def visit_Global(self, node: cst.Global) -> None:
        fn = self.ctx.scope.function
        if fn is not None:
            self._declared.setdefault(id(fn), set()).update(n.name.value for n in node.names)

    def _entry(self, name: str) -> _Global:
        return self._globals.setdefault(name, _Global())

    def _target(self, target, value, node) -> None:
        fn, declared = self._declared_here()
        if fn is None:
            return
        if isinstance(target, cst.Name):
            if target.value not in declared:
                return
            entry = self._entry(target.value)
            if value is not None and self.ctx.heavy.is_heavy_value(value, fn, self.ctx.scope.method_class):
                entry.heavy.append(_Assignment(node, self.ctx.scope.statement, fn,
                                               self.ctx.scope.method_class))
            else:
                entry.resets.append(fn)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value, None, node)
        elif isinstance(target, cst.Subscript) and _is_globals_call(target.value):
            self._globals_item(target)

    def _globals_item(self, subscript: cst.Subscript) -> None:
        fn = self.ctx.scope.function
        keys = [
            _const(e.slice.value) for e in subscript.slice if isinstance(e.slice, cst.Index)
        ]
        if len(keys) != 1 or keys[0] is None:
            self._dynamic = True
        elif fn is not None:
            self._entry(keys[0]).resets.append(fn)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._target(t.target, node.value, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target, node.value, node)

    def visit_Del(self, node: cst.Del) -> None:
        fn, declared = self._declared_here()
        targets = [node.target]
        while targets:
            t = targets.pop()
            if isinstance(t, (cst.Tuple, cst.List)):
                targets.extend(e.value for e in t.elements)
            elif isinstance(t, cst.Name) and t.value in declared:
                self._entry(t.value).resets.append(fn)
            elif isinstance(t, cst.Subscript) and _is_globals_call(t.value):
                self._globals_item(t)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        fn = self.ctx.scope.function
        if _is_globals_call(func.value):
            if func.attr.value in ("pop", "__delitem__", "__setitem__") and node.args:
                name = _const(node.args[0].value)
                if name is None:
                    self._dynamic = True
                elif fn is not None:
                    self._entry(name).resets.append(fn)
            elif func.attr.value in ("update", "clear", "popitem", "setdefault"):
                self._dynamic = True
            return
        if fn is not None and isinstance(func.value, cst.Name) and func.attr.value == "clear":
            self._entry(func.value.value).resets.append(fn)
        if isinstance(func.value, cst.Name) and func.attr.value == "cache_clear":
            self._cleared.add(func.value.value)

    # -- verdict -------------------------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        for fn, decorator in self._cached:
            self._judge_cached(fn, decorator)
        if self._dynamic:
            return
        for name, entry in self._globals.items():
            entry.heavy = [a for a in entry.heavy
                           if self._substantial(a) and not self._process_scratch(name, a)]
        candidates = {name: g for name, g in self._globals.items() if g.heavy}
        if not candidates:
            return
        module_level = self._module_level_names(node)
        used_here: Optional[dict[str, int]] = None
        for name, entry in candidates.items():
            assigners = {id(a.function) for a in entry.heavy}
            resets = [fn for fn in entry.resets if id(fn) not in assigners]
            unused: list[cst.FunctionDef] = []
            reachable = False
            for fn in resets:
                if fn.name.value not in module_level:
                    reachable = True  # a method or a nested function: assume it runs
                    break
                if used_here is None:
                    used_here = self._name_uses(node)
                if used_here.get(fn.name.value, 0) > 0 or self.ctx.index.ask(used_anywhere, fn.name.value):
                    reachable = True
                    break
                unused.append(fn)
            if reachable:
                continue
            if not name.startswith("_") and self.ctx.index.ask(
                    imported_as_module, (self.ctx.module_name, self.ctx.module_name)):
                continue
            self._report(name, entry, unused)

    # -- cached functions ------------------------------------------------------------
    def _judge_cached(self, fn: cst.FunctionDef, decorator: cst.Decorator) -> None:
        """`@functools.cache def get_x(...)`: each result is a singleton per argument
        tuple, kept until `get_x.cache_clear()`. Reported when a result is heavy and
        nothing in the project ever clears the cache. A layer or model the function loads
        is an error; a buffer or workspace it allocates itself from plain inputs is a
        warning (bounded by its arguments, but pinned past any shutdown); tensors it
        computes itself (per-device tables), tiny constants and weightless objects are not
        reported. Heavy arguments are RL101's (keys)."""
        name = fn.name.value
        params = [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]
        if name in self._cleared or any(
                self.ctx.heavy.is_heavy_annotation(p.annotation.annotation if p.annotation else None)
                for p in params):
            return
        if self.ctx.index.ask(cleared_in_project, f"{self.ctx.module_name}.{name}"):
            return
        returns = _ReturnValues()
        visit(fn.body, returns)
        deco = " ".join(self.ctx.code(decorator.decorator).split())
        # one result per distinct argument tuple, each kept until `cache_clear()` (or evicted past `maxsize`)
        size = self._maxsize(decorator.decorator)
        many = size not in ("0", "1") and (
            bool(params) or isinstance(fn.params.star_arg, cst.Param) or fn.params.star_kwarg is not None)
        each = "every" if many else "the"
        per = ", one per distinct argument tuple" if many else ""
        cached = (f"the cache of `{name}()`", "the process",
                  f"one per distinct argument tuple{f' (up to {size})' if size else ''}" if many else "")
        for ret in returns.found:
            returned = _unchained(ret.value)
            value = self._followed(returned, fn)
            if value is None or not self.ctx.heavy.is_heavy_value(returned, fn, None):
                continue
            if isinstance(value, cst.Call) and not substantial_value(self.ctx, value, fn):
                continue
            own = builds_own(self.ctx, returned, fn, None)
            if own and not self._project_object(value):
                continue  # a per-device / per-shape table of its own: process scratch
            made = f"`{' '.join(self.ctx.code(value.func).split())}(...)`" if isinstance(value, cst.Call) else ""
            what = f"the {made}" if made else "a heavy object"
            self.report(
                ret,
                f"`{name}()` is cached by `@{deco}`: {what} it returns stays alive until the "
                f"interpreter exits{per}, and nothing in the project "
                f"calls `{name}.cache_clear()`. Clear it on the release path of whatever uses "
                "it (or keep the object on its owner instead)",
                severity=Severity.WARNING if own else Severity.ERROR,
                related=[RelatedNode("cached here", decorator)],
                consequence=Consequence(f"{each} {made} returned (heavy)" if made else f"{each} heavy object returned",
                                        *cached),
            )
            return
        table = self._array_table(fn, returns.found)
        if table is not None:
            self.report(
                table,
                f"`{name}()` is cached by `@{deco}`: the table of arrays it loads from a file "
                f"stays alive until the interpreter exits{per}, and "
                f"nothing in the project calls `{name}.cache_clear()`. Clear it once what it "
                "was loaded for is built (or keep the table on its owner instead)",
                severity=Severity.WARNING,
                related=[RelatedNode("cached here", decorator)],
                consequence=Consequence(f"{each} table of arrays loaded from a file", *cached),
            )

    def _maxsize(self, decorator: cst.BaseExpression) -> Optional[str]:
        """An `lru_cache`'s `maxsize` as written (`"128"` by default); None when unbounded."""
        called = decorator.func if isinstance(decorator, cst.Call) else decorator
        size = cache_maxsize(self.ctx, decorator, self.ctx.qualname(called) or "")
        return None if size == "None" else size

    def _array_table(self, fn: cst.FunctionDef, returns: list[cst.Return]) -> Optional[cst.Return]:
        """A loader: the function returns a container it made empty and fills, in a loop
        over a file it opened, with numpy/torch arrays (`for line in f: table[w] =
        np.array(...)`). Its size is the file's, not a per-device constant table's."""
        assignments = self.ctx.heavy.local_assignments(fn)
        for ret in returns:
            if not isinstance(ret.value, cst.Name):
                continue
            name = ret.value.value
            made = [v for v, _ in assignments.get(name, ())]
            if len(made) != 1 or not _empty_container(self.ctx, made[0]):
                continue
            files = _opened_files(self.ctx, fn)
            if files and any(_fills_with_arrays(self.ctx, loop, name)
                             for loop in _loops_over(fn, files)):
                return ret
        return None

    def _project_object(self, value: cst.BaseExpression) -> bool:
        """An instance of a project class (a workspace object owning buffers), rather
        than a bare tensor or a function's result."""
        if not isinstance(value, cst.Call):
            return False
        qualified = self.ctx.absolute(self.ctx.qualname(value.func))
        index = self.ctx.index
        return qualified is not None and (
            qualified.split(".")[-1] in self.ctx.classes
            or (index.resolve(qualified) or qualified) in index.classes)

    def _followed(self, value: Optional[cst.BaseExpression], fn: cst.FunctionDef) -> Optional[cst.BaseExpression]:
        """A returned value, followed through locals assigned once (`ws = Ws(d); return ws`)."""
        for _ in range(6):
            if not isinstance(value, cst.Name):
                break
            entries = [v for v, _ in self.ctx.heavy.local_assignments(fn).get(value.value, ())]
            if len(entries) != 1 or entries[0] is None:
                return None
            value = entries[0]
        return value

    def _origin(self, assignment: _Assignment) -> Optional[cst.BaseExpression]:
        """The value assigned, followed through locals (`t = torch.zeros(n); _t = t`)."""
        value = assignment.node.value if isinstance(assignment.node, (cst.Assign, cst.AnnAssign)) else None
        for _ in range(6):
            if not isinstance(value, cst.Name):
                break
            entries = [v for v, _ in self.ctx.heavy.local_assignments(assignment.function).get(value.value, ())
                       if v is not None]
            if not entries:
                break
            value = entries[0]
        return value

    def _substantial(self, assignment: _Assignment) -> bool:
        """Not a tensor of a few literal elements, a module without weights, or a project
        object that holds only such things."""
        value = self._origin(assignment)
        return not isinstance(value, cst.Call) or substantial_value(self.ctx, value, assignment.function)

    def _process_scratch(self, name: str, assignment: _Assignment) -> bool:
        """A buffer the function allocates itself, from plain inputs (a tensor, a
        workspace object holding no layer: see `builds_own`), created on demand: only
        while the function's globals say it is missing or too small. Every caller in the
        process then shares the one object - a grow-only scratch, a fixed workspace -
        whose owner is the process itself, not an engine it would outlive."""
        value = assignment.node.value if isinstance(assignment.node, (cst.Assign, cst.AnnAssign)) else None
        return (
            value is not None
            and builds_own(self.ctx, value, assignment.function, assignment.cls, container=name)
            and _on_demand(assignment, self._declared.get(id(assignment.function), set()))
        )

    def _module_level_names(self, module: cst.Module) -> dict[str, cst.FunctionDef]:
        return dict(self.ctx.functions)

    def _name_uses(self, module: cst.Module) -> dict[str, int]:
        """How often each name is used in this file (definitions' own names left out)."""
        counts: dict[str, int] = {}

        class _Uses(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                for part in (node.params, node.body, *node.decorators):
                    visit(part, self)
                if node.returns is not None:
                    visit(node.returns, self)
                return False

            def visit_Name(self, node: cst.Name) -> None:
                counts[node.value] = counts.get(node.value, 0) + 1

        visit(module, _Uses())
        return counts

    def _report(self, name: str, entry: _Global, unused: list) -> None:
        first = entry.heavy[0]
        value = self._origin(first)
        what, kept = "a heavy object", "the heavy object"
        if isinstance(value, cst.Call):
            callee = " ".join(self.ctx.code(value.func).split())
            what = f"the `{callee}(...)`"
            kept = f"{what} (heavy)"
        elif value is not None:
            what = kept = f"the heavy `{' '.join(self.ctx.code(value).split())[:40]}`"
        assigner = first.function.name.value
        if unused:
            resetters = ", ".join(f"`{fn.name.value}()`" for fn in unused)
            why = (f"{resetters} would reset it, but nothing in the project calls "
                   f"{'it' if len(unused) == 1 else 'them'}")
        else:
            why = "no function ever resets it (`= None`, `del`, `.clear()`)"
        related = [RelatedNode(f"`{fn.name.value}()` resets `{name}` but is never called", fn.name)
                   for fn in unused]
        related += [RelatedNode(f"`{name}` is also assigned a heavy object here", a.node)
                    for a in entry.heavy[1:]]
        self.report(
            first.node,
            f"`{name}` (module global) keeps {what} that `{assigner}()` assigns alive until "
            f"the interpreter exits: {why}. Reset it (`{name} = None`) on the release path "
            "of whatever created it",
            related=related,
            statement=first.statement,
            consequence=Consequence(f"{kept} that `{assigner}()` assigns", f"`{name}` (module global)", "the process"),
        )


class _ReturnValues(OwnScopeVisitor):
    """`return <value>` statements of one function (not of nested ones)."""

    def __init__(self) -> None:
        self.found: list[cst.Return] = []

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.found.append(node)



_ARRAY_MAKERS = frozenset(
    {f"numpy.{n}" for n in ("array", "asarray", "asanyarray", "fromstring", "frombuffer",
                            "fromfile", "load", "loadtxt", "genfromtxt", "zeros", "empty", "ones",
                            "full", "stack", "concatenate")}
    | {f"torch.{n}" for n in ("tensor", "as_tensor", "from_numpy", "load", "stack", "cat",
                              "zeros", "empty", "ones", "full")})


def _empty_container(ctx, value: Optional[cst.BaseExpression]) -> bool:
    """`{}`, `[]`, `dict()`, `list()`."""
    if isinstance(value, cst.Dict):
        return not value.elements
    if isinstance(value, cst.List):
        return not value.elements
    return (isinstance(value, cst.Call) and not value.args
            and ctx.qualname(value.func) in ("dict", "list", "builtins.dict", "builtins.list"))


def _opened_files(ctx, fn: cst.FunctionDef) -> set[str]:
    """Names the function binds to a file it opens (`with open(p) as f`, `f = open(p)`)."""
    names: set[str] = set()

    class _Opens(cst.CSTVisitor):
        def visit_WithItem(self, node: cst.WithItem) -> None:
            if _is_open(ctx, node.item) and node.asname is not None \
                    and isinstance(node.asname.name, cst.Name):
                names.add(node.asname.name.value)

        def visit_Assign(self, node: cst.Assign) -> None:
            if _is_open(ctx, node.value):
                names.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))

    visit(fn.body, _Opens())
    return names


def _is_open(ctx, value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Call) and ctx.qualname(value.func) in ("open", "builtins.open", "io.open")


def _loops_over(fn: cst.FunctionDef, files: set[str]) -> list[cst.For]:
    """`for ... in f` / `in enumerate(f)` over one of `files`."""
    found: list[cst.For] = []

    class _Loops(cst.CSTVisitor):
        def visit_For(self, node: cst.For) -> None:
            names = set()

            class _Names(cst.CSTVisitor):
                def visit_Name(self, n: cst.Name) -> None:
                    names.add(n.value)

            visit(node.iter, _Names())
            if names & files:
                found.append(node)

    visit(fn.body, _Loops())
    return found


def _fills_with_arrays(ctx, loop: cst.For, container: str) -> bool:
    """Does the loop write `container[k] = <array>` or `container.append(<array>)`, the
    array made by a numpy/torch call (directly or in a local of the loop)?"""
    made: dict[str, cst.BaseExpression] = {}
    stored: list[cst.BaseExpression] = []

    class _Writes(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                target = t.target
                if isinstance(target, cst.Name):
                    made[target.value] = node.value
                elif (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)
                      and target.value.value == container):
                    stored.append(node.value)

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if (isinstance(func, cst.Attribute) and func.attr.value == "append"
                    and isinstance(func.value, cst.Name) and func.value.value == container and node.args):
                stored.append(node.args[0].value)

    visit(loop.body, _Writes())
    for value in stored:
        if isinstance(value, cst.Name):
            value = made.get(value.value, value)
        if isinstance(value, cst.Call) and ctx.qualname(value.func) in _ARRAY_MAKERS:
            return True
    return False


def _unchained(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`Model(...)` for `Model(...).to(device).eval()`."""
    while (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
           and expr.func.attr.value in SAME_OBJECT_METHODS):
        expr = expr.func.value
    return expr
