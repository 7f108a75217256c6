"""RL905 cycle-keeps-every-item: `itertools.cycle(loader)` saves every batch of its first
pass over a data loader or dataset, so the whole dataset stays alive while it cycles."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.heavy import find_param
from retainlint.analysis.rule import Example, Rule
from retainlint.analysis.severity import Facts, level
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.names import name_words
from retainlint.rules.prefilters.rl905 import CycleKeepsEveryItemPrefilter

# Library types whose iteration makes new items each pass (a batch is loaded, collated
# and returned; nothing else holds it once the step is done).
_STREAM_TYPES = (
    "torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
    "torch.utils.data.Dataset", "torch.utils.data.IterableDataset",
    "torch.utils.data.dataset.Dataset", "torch.utils.data.dataset.IterableDataset",
)
# Words a name of such a stream has (`train_loader`, `dataloader`, `eval_dataset`).
_STREAM_WORDS = frozenset({"loader", "dataloader", "dataset"})


class CycleKeepsEveryItem(Rule):
    prefilter = CycleKeepsEveryItemPrefilter
    name = "cycle-keeps-every-item"
    summary = ("`itertools.cycle(loader)` over a data loader or dataset saves every batch of its "
               "first pass to replay it: the whole dataset stays alive while the cycle does")
    severity = Severity.ERROR
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports `itertools.cycle(x)` where `x` makes new items each time it is iterated: a
PyTorch `DataLoader` or `Dataset` (by its type, or a name such as `train_loader`,
`dataloader`, `eval_dataset`). A cycle over a list, a tuple, a dict's keys or an array is
not reported: its items are already held by the container.

Severity: an error - every batch of the first pass stays alive, one more per step, and
each was meant to go when its step was done.

## Why it leaks
`itertools.cycle` saves each item of its first pass over the iterable in a list of its
own, so that it can replay them once the iterable is exhausted. Over a data loader those
items are batches: input and target tensors, made fresh for each step. The cycle keeps
every one of them for as long as it lives, so the memory of a training loop grows with
the dataset instead of staying at one batch, and later passes replay the first pass's
batches instead of new (reshuffled, re-augmented) ones.

## Example
```python
from itertools import cycle

def train(model, loader, steps):
    batches = cycle(loader)  # RL905: keeps every batch of the first pass
    for _ in range(steps):
        model(next(batches))
```

## Fix
None automatic: a generator that starts the loader again keeps one batch at a time
(and reshuffles each pass, which a cycle did not):

```python
def forever(loader):
    while True:
        yield from loader
```
"""

    valid = [
        # a cycle over values a list already holds
        "from itertools import cycle\n\ncolors = cycle(['red', 'green'])\n",
        # a cycle over a dict's keys, named for loaders
        """
from itertools import cycle

def names(loaders):
    return cycle(loaders.keys())
""",
    ]
    invalid = [
        Example("""
import itertools

def train(model, train_loader, steps):
    batches = itertools.cycle(train_loader)
    for _ in range(steps):
        model(next(batches))
""", lines=[5]),
        Example("""
from itertools import cycle

class Cycler:
    def __init__(self, loaders):
        self.loaders = loaders

    def __iter__(self):
        cycles = [cycle(loader) for loader in self.loaders.values()]
        return zip(*cycles)
""", lines=[9]),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) != "itertools.cycle" or len(node.args) != 1:
            return
        arg = node.args[0].value
        stream = self._stream(arg)
        if stream is None:
            return
        text = self.ctx.code(arg)
        self.report(
            node,
            f"`cycle({text})` saves every item of its first pass over {stream} to replay them: each "
            "batch stays alive, one more per step, for as long as the cycle does; start the loader "
            "again instead (`while True: yield from loader`)",
            severity=level(Facts(heavy=True, grows=True, meant_to_go=True)),
            consequence=Consequence(f"every batch of `{text}`'s first pass", "the `itertools.cycle` object",
                                    "as long as the cycle lives", growth="one batch per step"),
        )

    def _stream(self, arg: cst.BaseExpression) -> Optional[str]:
        """How `arg` is known to make new items each pass: "the data loader `x`", or None."""
        if isinstance(arg, cst.Call):
            return f"a new `{self.ctx.qualname(arg.func)}`" if self._is_stream_type(arg.func) else None
        if isinstance(arg, cst.Attribute):
            name = arg.attr.value
        elif isinstance(arg, cst.Name):
            name = arg.value
            if self._typed_as_stream(name):
                return f"the data loader `{name}`"
        else:
            return None
        if name_words(name) & _STREAM_WORDS:
            return f"`{name}`"
        return None

    def _is_stream_type(self, expr: cst.BaseExpression) -> bool:
        qualified = self.ctx.qualname(expr)
        return bool(qualified) and (self.ctx.absolute(qualified) or qualified) in _STREAM_TYPES

    def _typed_as_stream(self, name: str) -> bool:
        """A parameter annotated with a loader type, or a local made by calling one."""
        fn = self.ctx.scope.function
        if fn is None:
            return False
        param = find_param(fn, name)
        if param is not None:
            ann = param.annotation
            return ann is not None and self._is_stream_type(ann.annotation)
        for value, _ in self.ctx.heavy.local_assignments(fn).get(name, ()):
            if isinstance(value, cst.Call) and self._is_stream_type(value.func):
                return True
        return False
