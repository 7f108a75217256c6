# HAND-WRITTEN FIX: RL905 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: a generator that starts the loader again instead of `cycle`.
"""RL905: `itertools.cycle` over a data loader saves every item of its first pass.

A round-robin evaluator scores checkpoints in turn, for as many rounds as it is asked,
drawing them from `cycle(loader)`: each item is a model the dataset loads when it is read
(`batch_size=None` hands items over as they are). The cycle saves each item it yields in a
list of its own, to replay it once the loader is exhausted: every model of the first pass
stays alive for as long as the evaluator keeps the cycle - here the evaluator lives on
between rounds, as a long-lived worker's does.
"""

from torch.utils.data import DataLoader, Dataset


class Checkpoints(Dataset):
    """Each item is a model loaded from its checkpoint when it is read."""

    def __init__(self, load, count):
        self.load = load
        self.count = count

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        return self.load()


def forever(loader):
    while True:
        yield from loader


class RoundRobin:
    def __init__(self, loader):
        self.models = forever(loader)

    def step(self, exercise):
        model = next(self.models)
        exercise(model)
        return model


def lifecycle(ctx):
    evaluator = RoundRobin(DataLoader(Checkpoints(ctx.build_model, 2), batch_size=None))
    ctx.keep(evaluator)  # the worker keeps its evaluator between rounds
    first = evaluator.step(ctx.exercise)
    ctx.expect_freed(first, "model")
    del first
    evaluator.step(ctx.exercise)  # the next checkpoint: the first one is done with
