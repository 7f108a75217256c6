"""RL613: a part only `__del__` frees, kept by the release method.

Shaped after llama-cpp-python's `Llama`: `close()` lets go of the base model, but the
LoRA adapter is freed only in `__del__`; a server keeps the closed object, so the
adapter's weights stay.
"""
import torch.nn as nn


def load_model(build) -> nn.Module:
    return build()


class Adapter:
    def __init__(self, weights: nn.Module):
        self.weights = weights

    def free(self) -> None:
        self.weights = None


class Llama:
    def __init__(self, build):
        self.model = object()
        self._lora = Adapter(load_model(build))

    def close(self) -> None:
        self.model = None

    def __del__(self):
        self._lora.free()


def lifecycle(ctx):
    llm = Llama(ctx.build_model)
    ctx.expect_freed(llm._lora.weights, "model")
    ctx.exercise(llm._lora.weights)
    llm.close()
    ctx.keep(llm)  # the server's model cache keeps the closed object
