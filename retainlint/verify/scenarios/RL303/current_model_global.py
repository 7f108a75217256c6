"""RL303: a module-level singleton assigned the model and never reset.

Shaped after a "current model" / workspace-manager global: the engine publishes its model
for helpers elsewhere to find, and nothing ever sets the global back to None, so the model
survives the engine's `shutdown()`.
"""
from typing import Optional

import torch.nn as nn

_current_model: Optional[nn.Module] = None


def set_current_model(model: nn.Module) -> None:
    global _current_model
    _current_model = model


class Engine:
    def __init__(self, model: nn.Module):
        self.model = model
        set_current_model(model)

    def step(self, run) -> None:
        run(self.model)

    def shutdown(self) -> None:
        self.model = None


def lifecycle(ctx):
    engine = Engine(ctx.build_model())
    ctx.expect_freed(engine.model, "model")
    engine.step(ctx.exercise)
    engine.shutdown()
    ctx.keep(engine)
