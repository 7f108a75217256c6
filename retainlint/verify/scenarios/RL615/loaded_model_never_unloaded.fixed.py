# HAND-WRITTEN FIX: RL615 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: the wrapper's release method calls the inverse, `unload()`.
"""RL615: a part acquires a resource in place and nothing gives it back.

Shaped after text-generation-webui's ExLlamaV3 wrapper: the wrapper builds a library
model and calls its `load()`, which puts the weights on the device and registers them
with the library; nothing ever calls `unload()`, so "unload model" drops the wrapper and
the library keeps the weights.
"""
import torch.nn as nn

_loaded: list = []  # the library's registry of loaded models


class LibraryModel:
    def __init__(self, build):
        self.build = build
        self.weights = None

    def load(self) -> None:
        self.weights = self.build()
        _loaded.append(self)

    def unload(self) -> None:
        self.weights = None
        _loaded.remove(self)


class Wrapper:
    def __init__(self, build):
        self.model = LibraryModel(build)
        self.model.load()
        self.closed = False

    def generate(self, run) -> None:
        run(self.model.weights)

    def close(self) -> None:
        self.model.unload()
        self.closed = True


def lifecycle(ctx):
    wrapper = Wrapper(ctx.build_model)
    weights: nn.Module = wrapper.model.weights
    ctx.expect_freed(weights, "model")
    del weights
    wrapper.generate(ctx.exercise)
    wrapper.close()
    # "Unload model": the application drops the wrapper.
