"""RL905: `itertools.cycle` over a data loader saves every batch of its first pass.

A trainer draws its batches from `cycle(loader)` so that it can run any number of steps
without counting epochs. The cycle saves each batch it yields in a list of its own, to
replay it once the loader is exhausted: every batch of the first pass stays alive for as
long as the trainer keeps the cycle - here the trainer lives on between runs, as a
long-lived worker's does.
"""
from itertools import cycle

import torch
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    """Each item is made when it is read (decoded, augmented), as real datasets do."""

    def __len__(self):
        return 8

    def __getitem__(self, index):
        return torch.randn(256, 1024)


class Trainer:
    def __init__(self, model, loader):
        self.model = model
        self.batches = cycle(loader)

    def run(self, steps, exercise):
        first = None
        for _ in range(steps):
            batch = next(self.batches)
            first = batch if first is None else first
            exercise(self.model)
        return first


def lifecycle(ctx):
    trainer = Trainer(ctx.build_model(), DataLoader(Features(), batch_size=2))
    ctx.keep(trainer)  # the worker keeps its trainer between runs
    first = trainer.run(3, ctx.exercise)
    ctx.expect_freed(first, "first batch")
    del first
