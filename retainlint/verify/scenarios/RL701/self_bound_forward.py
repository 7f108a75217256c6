"""RL701: a heavy object that stores its own bound method on itself.

A compiled-model wrapper picks its forward implementation once and keeps it as
`self._run = self._eager_forward`: the wrapper now sits in a reference cycle, so dropping
it frees nothing - its model waits for the cycle collector (which a serving process often
delays, or freezes away). The scenario asks for the model to be freed promptly, by
reference counting alone.
"""
import torch.nn as nn


class CompiledModel(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self._run = self._eager_forward

    def _eager_forward(self, run) -> None:
        run(self.model)

    def step(self, run) -> None:
        self._run(run)


def lifecycle(ctx):
    compiled = CompiledModel(ctx.build_model())
    ctx.expect_freed(compiled.model, "model", promptly=True)
    compiled.step(ctx.exercise)
    # The engine drops the wrapper.
