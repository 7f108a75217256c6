"""RL604 deleted-parameter: `del` of a parameter in code meant to free only unbinds the
function's own name."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.cstutil import body_statements
from retainlint.analysis.deletions import (Deleted, after, bare_names, breaks_traceback_cycle, is_docstring,
                                           kept_under_alias, listed)
from retainlint.analysis.heavy import find_param
from retainlint.analysis.hook_exprs import iter_nodes, names_in
from retainlint.analysis.reclaims import reclaims_in
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.names import name_words
from retainlint.project.release_scan import CLEANUP_WORDS
from retainlint.rules.prefilters.rl604 import DeletedParameterPrefilter


class DeletedParameter(Rule):
    prefilter = DeletedParameterPrefilter
    name = "deleted-parameter"
    summary = ("`del` of a parameter in code meant to free something: it unbinds the function's own name, "
               "and the caller's references keep the object")
    severity = Severity.WARNING  # an error when the parameter is annotated as a model
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports `del objs` (or `del self`) in a function that is meant to free something (its
name says so: `free`, `release`, `cleanup`, `delete`, `destroy`, `unload`, `close`, ...;
or it calls `gc.collect()` / `torch.cuda.empty_cache()`). `del` only unbinds the
function's own name. A function that deletes several of its parameters gets one finding,
at the first `del`, naming them all (the others are its related locations): the fix is
one, in the caller.

Not reported: a parameter rebound in the function first (`x = prepare(x); ...; del x`
frees the new object), and the "unused argument" idiom: `del` as the first statement
(after the docstring) of any function - a method, a module function, a fake bound later
with `MethodType` - the names never used again. A deletion meant to free is not that
idiom: one right before `gc.collect()` / `empty_cache()` (unless the parameter is
optional: a caller may pass nothing), `del self` in a method of a class, or a `del` that
is all a plain function does (`def free(objs): del objs`). Nor `del self` in `__del__`
(no caller holds the instance any more), nor a `del` in an `except ... as e:` handler
that hands `e` on (`future.set_exception(e)`): the traceback references the frame, the
frame its locals, and unbinding them breaks that cycle - the `del` does free.

Severity: an error when what is kept is heavy (a parameter annotated as a model, or
`self` of a class holding one - one tensor may be a scalar or a big mask: a warning),
unless the function itself keeps using the object under a local name (`env =
env_or_factory` ... `del env_or_factory`): then the `del` was never its release.

Split from RL603 (ineffective-release), which still selects and silences it.

## Why it leaks
Memory is freed when the last reference goes. Unbinding a function's own name leaves the
object - a model, a KV cache, a dict of tensors - reachable from the caller, while the
code reads as if it were released.

## Example
```python
def free_model(model):
    model.cpu()
    del model  # RL604: the caller still holds the model
    torch.cuda.empty_cache()
```

## Fix
None automatic: drop the reference where it is held (the caller's variable or
attribute), then collect.
"""

    valid = [
        # the parameter is rebound first: the `del` frees the new object
        """
import gc

def step(inputs):
    inputs = prepare(inputs)
    loss = run(inputs)
    del inputs
    gc.collect()
    return loss
""",
        # the unused-argument idiom, in a method or any other function
        """
class Hooks:
    def close(self, force):
        del force
        self.stop()

def sample_clean_root(*, seed_tokens, logits):
    "Sample the clean root."
    del seed_tokens
    return logits.argmax(-1)
""",
        # a deletion inside a function that frees nothing by intent
        """
def forward(x, cache):
    y = x + 1
    del cache
    return y
""",
    ]

    invalid = [
        Example(
            """
import torch

def free_model(model):
    model.cpu()
    del model
    torch.cuda.empty_cache()
""",
            lines=[6],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._deleted: dict[int, list[Deleted]] = {}  # id(function) -> its `del`s
        self._kept: dict[tuple[int, str], str] = {}  # (id(`del`), name) -> what it leaves to the caller, for the consequence

    def visit_Del(self, node: cst.Del) -> None:
        fn = self.ctx.scope.function
        if fn is None:
            return
        for target in bare_names(node.target):
            name = target.value
            param = find_param(fn, name)
            if param is None or name == "cls":
                continue
            if name == "self" and fn.name.value == "__del__":
                continue  # finalising: no caller holds the instance any more
            if self._unused_argument(fn, node, name) or breaks_traceback_cycle(fn, node):
                continue
            if name != "self" and not self._deletes_to_free(fn, name):
                continue
            # a model handed in is heavy; one tensor may be a scalar or a [b, L, L] mask:
            # its weight is unknown (torchtune's per-step `del advantages`)
            heavy = (self.ctx.heavy.is_heavy_annotation(param.annotation)
                     and not self.ctx.heavy.is_tensor_annotation(param.annotation)) or (
                name == "self" and self.ctx.heavy.is_heavy_class(self.ctx.scope.method_class))
            # the function goes on using the object under another name: the `del` was
            # never the release of it, whatever the caller holds
            heavy = heavy and not kept_under_alias(fn, node, name)
            self._kept[id(node), name] = self._what_is_kept(name, param, heavy)
            self._deleted.setdefault(id(fn), []).append(Deleted(node, self.ctx.scope.statement, name, heavy))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        found = self._deleted.pop(id(original_node), [])
        if not found:
            return
        fn = original_node.name.value
        first, rest = found[0], found[1:]
        name, names = first.name, [d.name for d in found]
        if len(set(names)) == 1:
            what = "the instance" if name == "self" else "the object"
            message = (f"`del {name}` in `{fn}()` only unbinds its own "
                       f"{'`self`' if name == 'self' else f'parameter `{name}`'}: the caller's "
                       f"references keep {what} alive, so nothing is freed; drop the reference where "
                       "it is held (the caller's variable or attribute)")
        else:
            message = (f"`del` in `{fn}()` only unbinds its own parameters {listed(names)}: the "
                       "caller's references keep the objects alive, so nothing is freed; drop the "
                       "references where they are held (the caller's variables or attributes)")
        self.report(first.node, message, statement=first.statement,
                    severity=Severity.ERROR if any(d.heavy for d in found) else Severity.WARNING,
                    related=[RelatedNode(f"`del {d.name}`", d.node) for d in rest if d.node is not first.node],
                    consequence=self._consequence(fn, found))

    def _what_is_kept(self, name: str, param: cst.Param, heavy: bool) -> str:
        """What the caller still holds for `del name`: the instance, or the object handed
        in as `name`, named by its heavy annotation when it has one."""
        if name == "self":
            cls = self.ctx.scope.method_class
            owner = f"the `{cls.name.value}` instance" if cls is not None else "the instance"
            return owner + (" and the heavy objects it holds" if heavy else "")
        if heavy and param.annotation is not None:
            return f"the `{self.ctx.code(param.annotation.annotation)}` passed as `{name}` (heavy)"
        return f"the object passed as `{name}`"

    def _consequence(self, fn: str, found: list[Deleted]) -> Consequence:
        kept = [self._kept.pop((id(d.node), d.name), "") for d in found]
        names = list(dict.fromkeys(d.name for d in found))
        if len(names) == 1:
            return Consequence(kept[0], "the caller's reference",
                               f"as long as the caller keeps it, after `{fn}()`")
        heavy = [d.name for d in found if d.heavy]
        return Consequence(f"the objects passed as {listed(names)}" + (f" (heavy: {listed(heavy)})" if heavy else ""),
                           "the caller's references", f"as long as the caller keeps them, after `{fn}()`")

    def _deletes_to_free(self, fn: cst.FunctionDef, name: str) -> bool:
        if fn.name.value in ("__exit__", "__aexit__"):
            return False
        if self.ctx.heavy.local_assignments(fn).get(name):
            return False  # rebound in the function: the `del` frees the new object
        if any(isinstance(n, cst.For) and name in names_in(n.target) for n in iter_nodes(fn.body)):
            return False
        if name_words(fn.name.value) & CLEANUP_WORDS or fn.name.value in self.ctx.settings.release_methods:
            return True
        return reclaims_in(self.ctx, fn.body)

    def _unused_argument(self, fn: cst.FunctionDef, node: cst.Del, name: str) -> bool:
        """The "unused argument" idiom: `del` of parameters as the first statement (after
        the docstring), the name never used again - in any function, a method, a module
        function or a fake bound later with `MethodType`, and for `self` too. Not the
        idiom, but a deletion meant to free: one right before `gc.collect()` /
        `empty_cache()` (the next statement), `del self` in a method of a class (no
        linter asks a method to use `self`), and a `del` that is all a plain function
        does (`def free(objs): del objs`; a method whose body only deletes an argument
        is a stub)."""
        body = [s for s in body_statements(fn) if not is_docstring(s)]
        first = body[0] if body else None
        if not (isinstance(first, cst.SimpleStatementLine) and any(s is node for s in first.body)):
            return False
        if sum(1 for n in iter_nodes(fn.body) if isinstance(n, cst.Name) and n.value == name) > 1:
            return False  # used again (or deleted twice)
        in_class = self.ctx.scope.method_class is not None
        if in_class and name == "self":
            return False
        if not in_class and len(body) == 1 and len(first.body) == 1:
            return False
        following = after(node, first, body[1:])
        if following is None or not reclaims_in(self.ctx, following):
            return True
        # an optional parameter (a caller may pass nothing) is no object handed in to be
        # freed, even right before a collection
        param = find_param(fn, name)
        return param is not None and param.default is not None
