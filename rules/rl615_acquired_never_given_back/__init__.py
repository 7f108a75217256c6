"""RL615 acquired-never-given-back: a part the class builds acquires a resource of its own
in place (`self.model.load()`) and nothing gives it back. What counts as acquiring and
giving back is in `acquired.py`."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.exit_stacks import _closed_by_subclasses_elsewhere
from retainlint.analysis.owned_parts import _built_parts, is_ray_actor
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.release_parts_scan import ACQUIRES
from retainlint.rules.prefilters.rl615 import AcquiredNeverGivenBackPrefilter
from retainlint.rules.rl615_acquired_never_given_back.acquired import (
    _SYNC_PRIMITIVES, _acquired_in_place, _given_back, _has_inverse,
)


class AcquiredNeverGivenBack(Rule):
    prefilter = AcquiredNeverGivenBackPrefilter
    name = "acquired-never-given-back"
    summary = ("A part the class builds acquires a resource in place (`self.model.load()`) and nothing "
               "gives it back (`unload()`), nor drops the part")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports, at the class, a part the class builds (`self.model = Model.from_config(config)`)
that a method makes acquire a resource of its own - `self.model.load()`, `.open()`,
`.connect()`, `.acquire()`, `.allocate()` as a statement, with no positional argument -
when nothing gives it back: no method of the class, nothing in the file
(`wrapper.model.unload()`, also through a name bound to the attribute) and no project
subclass in another file calls the inverse (`unload()`; `close()`; `disconnect()`/`close()`;
`release()`; `free()`/`deallocate()`/`release()`) on an attribute of that name, nor drops
the part (`self.model = None`, `del self.model`). Not an item handed in (`allocate(seq)`,
`connect(address)`, `load(weights)`: per-call work, not the part's own resource), a part
handed in by the caller (`self.model = model`), a lock or semaphore, nor a project class
that defines no inverse. `start()` (threads) and `init()`/`setup()` (configuration) are
not counted as acquiring.

Split from RL602 (release-keeps-heavy-attribute), which still selects and silences it.

## Why it leaks
A library that loaded a model's weights onto the GPU (and keeps them registered) or
opened a connection gives them back when asked (`unload()`, `close()`); a wrapper that
never asks, and whose owner has no method to call, keeps them after "unload model" has
dropped everything else.

## Example
```python
class Wrapper:  # RL615: `self.model.unload()` is never called
    def __init__(self, model_dir):
        self.model = Model.from_config(Config.from_directory(model_dir))
        self.model.load(progressbar=True)
```

## Fix
None automatic: add a release method that calls the inverse, and call it from the
owner's release path.
"""

    valid = [
        # the wrapper unloads the model it loaded
        """
from exlib import Model

class Wrapper:
    def __init__(self, model_dir):
        self.model = Model.from_directory(model_dir)
        self.model.load(progressbar=True)

    def unload(self):
        self.model.unload()
        self.model = None
""",
        # a semaphore taken as a gate holds no memory and nothing to give back
        """
import threading

class Pairing:
    def __init__(self):
        self.pairs = {}

    def pair_of(self, rank, world):
        if not self.pairs:
            self.pairs = {r: world - 1 - r for r in range(world)}
            self.turn = threading.Semaphore(1)
            self.turn.acquire()
        return self.pairs[rank]
""",
    ]

    invalid = [
        Example(
            """
from exlib import Model

class Wrapper:
    def __init__(self, model_dir):
        self.model = Model.from_directory(model_dir)
        self.model.load(progressbar=True)

    def __call__(self, ids):
        return self.model.forward(ids)
""",
            lines=[4],
        ),
    ]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """What a part acquired (weights a library loaded, a connection) is given back
        only if and when the part is collected, and a library that registers it keeps it
        for good."""
        if self.ctx.classes.get(node.name.value) is not node:
            return  # a nested class: its subclasses and holders are not known
        acquired = _acquired_in_place(node)
        if not acquired:
            return
        built = _built_parts(self.ctx, node)
        given = _given_back(self.ctx.module, {a: ACQUIRES[v] for a, (v, _) in acquired.items()})
        kept = [a for a in acquired if a in built and a not in given
                and self.ctx.qualname(built[a].func) not in _SYNC_PRIMITIVES
                and _has_inverse(self.ctx, built[a], acquired[a][0])]
        if not kept:
            return
        elsewhere = _closed_by_subclasses_elsewhere(
            self.ctx, node, set(kept), frozenset().union(*(ACQUIRES[acquired[a][0]] for a in kept)))
        kept = [a for a in kept if a not in elsewhere]
        if not kept or is_ray_actor(self.ctx, node):
            return

        def inverse(attr: str) -> str:
            first, *others = sorted(ACQUIRES[acquired[attr][0]])
            return f"`self.{attr}.{first}()`" + "".join(f" (or `.{o}()`)" for o in others)

        names = " nor ".join(f"{inverse(a)} after `self.{a}.{acquired[a][0]}()`" for a in kept[:3])
        message = (
            f"`{node.name.value}` never calls {names}, nor drops the part: what "
            f"{'it acquired stays' if len(kept) == 1 else 'they acquired stay'} held as long as the "
            f"`{node.name.value}` lives, and an owner has no method to call to give it back; add "
            f"a release method that does it"
        )
        related = [RelatedNode(f"`self.{a}` acquires it here", acquired[a][1]) for a in kept]
        calls = [f"`self.{a}.{acquired[a][0]}()`" for a in kept[:3]] + ([f"{len(kept) - 3} more"] if len(kept) > 3 else [])
        parts = [f"`self.{a}`" for a in kept[:3]] + ([f"{len(kept) - 3} more"] if len(kept) > 3 else [])
        self.report(node.name, message, related=related, statement=node,
                    consequence=Consequence(f"what {_joined(calls)} acquired", _joined(parts),
                                            f"as long as the `{node.name.value}` instance"))


def _joined(names: list[str]) -> str:
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]
