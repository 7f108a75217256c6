"""RL102: `@lru_cache` on an instance method of an engine that owns the model.

Every call's key holds `self`, so the class-level cache keeps each engine - and its model -
alive after the engine is dropped.
"""
import functools

import torch.nn as nn


class Engine:
    def __init__(self, model: nn.Module):
        self.model = model

    @functools.lru_cache(maxsize=None)
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def generate(self, run) -> None:
        run(self.model)


def lifecycle(ctx):
    engine = Engine(ctx.build_model())
    ctx.expect_freed(engine.model, "model")
    engine.generate(ctx.exercise)
    engine.num_parameters()
    # The caller drops the engine.
