"""RL101: an lru_cached helper called with a bound method of the model.

Shaped after vLLM's `supports_kw(callable, kw_name)`: the model runner asks whether the
model's `forward` takes a keyword, and the process-wide cache keeps `model.forward` - and
through its `__self__` the model - as a key, long after the runner's `shutdown()`.
"""
import functools
import inspect

import torch.nn as nn


@functools.lru_cache
def supports_kw(fn, kw_name: str) -> bool:
    return kw_name in inspect.signature(fn).parameters


class ModelRunner:
    def __init__(self, model: nn.Module):
        self.model = model
        self.pass_positions = supports_kw(model.forward, "positions")

    def execute_model(self, run) -> None:
        run(self.model)

    def shutdown(self) -> None:
        self.model = None


def lifecycle(ctx):
    runner = ModelRunner(ctx.build_model())
    ctx.expect_freed(runner.model, "model")
    runner.execute_model(ctx.exercise)
    runner.shutdown()
    ctx.keep(runner)  # the server keeps the (shut down) runner handle
