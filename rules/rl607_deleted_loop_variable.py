"""RL607 deleted-loop-variable: `for obj in objs: del obj` in code meant to free only
unbinds the loop variable."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.deletions import Deleted, bare_names, is_parameter, listed
from retainlint.analysis.heavy import find_param
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.reclaims import reclaims_in
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.names import name_words
from retainlint.project.release_scan import CLEANUP_WORDS
from retainlint.rules.prefilters.rl607 import DeletedLoopVariablePrefilter


class DeletedLoopVariable(Rule):
    prefilter = DeletedLoopVariablePrefilter
    name = "deleted-loop-variable"
    summary = ("`for obj in objs: del obj` in code meant to free something: each `del` unbinds the loop "
               "variable, and the caller's list and names keep every object")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports `for obj in objs: del obj` over a parameter, in a function meant to free (a
cleanup name: `free`, `release`, `cleanup`, `unload`, ...; or a reclaim call in it:
`gc.collect()`, `torch.cuda.empty_cache()`): each `del` unbinds the loop variable; the
caller's list and names keep every object. A function with several such loops gets one
finding, at the first `del`, naming them all. Not reported: a loop over a list the function
made itself (`pending = list(queue)`), nor a loop variable the function assigns again.

Severity: a warning - what is kept depends on the caller.

Split from RL603 (ineffective-release), which still selects and silences it.

## Why it leaks
Memory is freed when the last reference goes. The loop variable is one more name for
each object in turn; unbinding it leaves the caller's list, and every name the caller
has, holding the objects.

## Example
```python
def release_all(objects):
    for obj in objects:
        del obj  # RL607: the caller's list and names keep every object
    gc.collect()
```

## Fix
None automatic: the caller has to drop its own references (`del a, b`, `objects.clear()`)
before collecting.
"""

    valid = [
        # a loop over a local list
        """
import gc

def release_pending(queue):
    pending = list(queue)
    for item in pending:
        del item
    gc.collect()
""",
    ]

    invalid = [
        Example(
            """
import gc

def release_all(objects):
    for obj in objects:
        del obj
    gc.collect()
""",
            lines=[6],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._deleted: dict[int, list[Deleted]] = {}  # id(function) -> its `del`s

    def visit_Del(self, node: cst.Del) -> None:
        fn = self.ctx.scope.function
        if fn is None:
            return
        for target in bare_names(node.target):
            if find_param(fn, target.value) is None:
                self._deleted_loop_variable(fn, node, target.value)

    def _deleted_loop_variable(self, fn: cst.FunctionDef, node: cst.Del, name: str) -> None:
        loop = next((n for n in iter_nodes(fn.body) if isinstance(n, cst.For)
                     and isinstance(n.target, cst.Name) and n.target.value == name
                     and isinstance(n.iter, cst.Name) and is_parameter(fn, n.iter.value)
                     and any(d is node for d in iter_nodes(n.body))), None)
        if loop is None or self.ctx.heavy.local_assignments(fn).get(name):
            return
        if not (name_words(fn.name.value) & CLEANUP_WORDS or reclaims_in(self.ctx, fn.body)):
            return
        self._deleted.setdefault(id(fn), []).append(Deleted(node, self.ctx.scope.statement, name, over=loop.iter.value))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        found = self._deleted.pop(id(original_node), [])
        if not found:
            return
        fn = original_node.name.value
        names, objects = [d.name for d in found], [d.over for d in found]
        first, rest = found[0], found[1:]
        if len(found) == 1:
            message = (f"`del {names[0]}` in `{fn}()` only unbinds the loop variable over its parameter "
                       f"`{objects[0]}`: the caller's `{objects[0]}` and its own names keep every object alive, so "
                       "nothing is freed; the caller has to drop its references (`del a, b`) before collecting")
        else:
            variables = "variable" if len(set(names)) == 1 else "variables"
            message = (f"`del` in `{fn}()` only unbinds the loop {variables} {listed(names)} over its parameters "
                       f"{listed(objects)}: the caller's references and its own names keep every object alive, so "
                       "nothing is freed; the caller has to drop its references (`del a, b`) before collecting")
        self.report(first.node, message, statement=first.statement, severity=Severity.WARNING,
                    related=[RelatedNode(f"`del {d.name}`", d.node) for d in rest],
                    consequence=Consequence(f"every object in {listed(objects)}",
                                            f"the caller's {listed(objects)} argument" + ("s" if len(set(objects)) > 1 else ""),
                                            f"as long as the caller keeps them, after `{fn}()`"))
