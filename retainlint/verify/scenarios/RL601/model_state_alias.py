"""RL601: a release method drops `self.model` while another attribute still holds it.

Shaped after vLLM's GPU model runner: `shutdown()` deletes `self.model`, but
`self.model_state`, built from the model, keeps the weights alive.
"""
import torch.nn as nn


class ModelState:
    def __init__(self, model: nn.Module):
        self.model = model
        self.num_layers = len(list(model.children()))


class GPUModelRunner:
    def __init__(self, model: nn.Module):
        self.model = model
        self.model_state = ModelState(self.model)

    def execute_model(self, run) -> None:
        run(self.model)

    def shutdown(self) -> None:
        """Release the weights."""
        del self.model


def lifecycle(ctx):
    runner = GPUModelRunner(ctx.build_model())
    ctx.expect_freed(runner.model, "model")
    runner.execute_model(ctx.exercise)
    runner.shutdown()
    ctx.keep(runner)  # the worker keeps the (shut down) runner handle
