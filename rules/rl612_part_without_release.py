"""RL612 part-without-release: a class holding a model it builds has no release method,
and an owner that releases its other parts cannot release it."""

from __future__ import annotations

import os

import libcst as cst

from retainlint.analysis.owned_parts import (
    _Heavy, _heavy_attributes, _is_model, _is_module_class, _substantial, brief, is_ray_actor,
)
from retainlint.analysis.release import FINALIZER, release_methods
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.core.finding import Applicability, Consequence, Position, Related, Severity
from retainlint.core.paths import display_path
from retainlint.project.release_shape import may_release_parts, releasing_owners
from retainlint.rules.prefilters.rl612 import PartWithoutReleasePrefilter


class PartWithoutRelease(Rule):
    prefilter = PartWithoutReleasePrefilter
    name = "part-without-release"
    summary = ("A class holding a model it builds has no release method, so an owner that releases its "
               "other parts cannot release it")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports, at its name, a class that holds a model (a module with weights) it builds and
has no release method at all (nor inherits one), when a project class holds an instance
(`self.drafter = DraftProposer(...)`) and its release method releases its other parts in
place (`self.profiler.shutdown()`) but neither releases nor drops this one. The owner's
release method is reported by RL610 as well, for the attribute it keeps.

Split from RL602 (release-keeps-heavy-attribute), which still selects and silences it.

## Why it leaks
A part with no release method gives its owner nothing to call: what it holds (a model's
weights registered in a forward context, its KV caches) is freed only when every
reference to it goes, while its owner's "shutdown" releases everything else.

## Example
```python
class Drafter:  # RL612: no release method
    def __init__(self):
        self.model = torch.nn.Linear(4096, 4096)

class Runner:
    def __init__(self):
        self.drafter = Drafter()
        self.graphs = GraphPool()

    def shutdown(self):
        self.graphs.release()
```

## Fix
None automatic: give the part a release method that frees what it holds, and call it
from the owner's.
"""

    valid = [
        # the part has a release method of its own
        """
import torch

class Drafter:
    def __init__(self):
        self.model = torch.nn.Linear(4096, 4096)

    def close(self):
        self.model = None

class Runner:
    def __init__(self):
        self.drafter = Drafter()
        self.graphs = GraphPool()

    def shutdown(self):
        self.graphs.release()
        self.drafter.close()
""",
    ]

    invalid = [
        Example(
            """
import torch

class Drafter:
    def __init__(self):
        self.model = torch.nn.Linear(4096, 4096)
        self.kv_caches = torch.empty(64, 4096, 4096)

class Runner:
    def __init__(self):
        self.drafter = Drafter()
        self.graphs = GraphPool()

    def shutdown(self):
        self.graphs.release()
""",
            lines=[4],
        ),
    ]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """A class that holds a model it builds (and maybe more heavy state) and has no
        release method at all (nor inherits one), held by a project class whose release
        method releases its other parts in place and can neither release this one nor,
        as it stands, drops it (`project/release_shape.py` `releasing_owners`)."""
        if self.ctx.classes.get(node.name.value) is not node:
            return  # a nested class: the index does not know who holds it
        if release_methods(self.ctx, node):
            return
        names = tuple(n for n in self.ctx.settings.release_methods if n != FINALIZER)
        qualified = f"{self.ctx.module_name}.{node.name.value}"
        index = self.ctx.index
        # first what the index tells (as the prefilter does), then the class itself
        if not index.is_heavy_class(qualified) or not index.ask(may_release_parts, (qualified, names)):
            return
        if any(self.ctx.release.lookup(node, n) is not None for n in names):
            return
        heavy = _heavy_attributes(self.ctx, node, self.ctx.methods(node))
        if not heavy or _is_module_class(self.ctx, node):
            return
        kept = [h for h in heavy.values() if _substantial(self.ctx, h, node)]
        if not any(_is_model(self.ctx, h) for h in kept) or is_ray_actor(self.ctx, node):
            return
        owners = index.ask(releasing_owners, (qualified, names))
        if not owners:
            return
        owner, path, line, column, attr, method, others = owners[0]
        where = f"{owner.rsplit('.', 1)[1]}.{method}()"
        parts = ", ".join(f"`self.{o}`" for o in others[:3]) + (" ..." if len(others) > 3 else "")
        message = (
            f"`{node.name.value}` holds {self._listed(kept)} and has no release method: `{where}` "
            f"releases its other parts ({parts}) but cannot release `self.{attr}`, so what "
            f"`{node.name.value}` holds stays allocated as long as its owner keeps it; give "
            f"`{node.name.value}` a release method that frees it and call it from `{where}`"
        )
        position = Position(line, column)
        related = [Related(f"`{where}` releases its other parts here", display_path(path, os.getcwd()),
                           position, position)]
        related += [RelatedNode(f"`self.{h.attr}` is assigned a heavy object here", h.value) for h in kept]
        attrs = [f"`self.{h.attr}`" for h in kept[:3]] + ([f"{len(kept) - 3} more"] if len(kept) > 3 else [])
        held = ", ".join(attrs[:-1]) + (" and " if len(attrs) > 1 else "") + attrs[-1]
        owner_name = owner.rsplit(".", 1)[1]
        self.report(node.name, message, related=related, statement=node,
                    consequence=Consequence(f"the `{node.name.value}` and its heavy {held}",
                                            f"`self.{attr}` of `{owner_name}`",
                                            f"as long as the `{owner_name}` instance, after `{method}()`"))

    def _listed(self, kept: list[_Heavy]) -> str:
        def describe(h: _Heavy) -> str:
            return f"`self.{h.attr}` (`{brief(self.ctx.code(h.origin.func))}(...)` in `{h.fn.name.value}()`)"

        listed = [describe(h) for h in kept[:5]]
        if len(kept) > 5:
            listed.append(f"{len(kept) - 5} more")
        return ", ".join(listed[:-1]) + (" and " if len(listed) > 1 else "") + listed[-1]
