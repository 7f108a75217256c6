# HAND-WRITTEN FIX: RL609 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: the holder of the returned object drops the old model (the loader
# remembers the pipeline it handed out and empties it before the reload).
"""RL609: a reload lets go of the model it handed out last time.

Shaped after ComfyUI-nunchaku's loader node: `load()` drops `self.model` and collects
before building the new one, but the `Pipeline` it returned last time - kept by the
caller's list of loaded pipelines - still holds the old model.
"""
import gc

import torch.nn as nn


def _small_model() -> nn.Module:
    return nn.Linear(4, 4)


class Pipeline:
    def __init__(self, model):
        self.model = model


class Loader:
    def __init__(self, build):
        self.build = build
        self.model = None
        self.handed_out = None

    def load(self):
        if self.handed_out is not None:
            self.handed_out.model = None
        self.model = None
        gc.collect()
        self.model = self.build()
        self.handed_out = Pipeline(self.model)
        return self.handed_out


def lifecycle(ctx):
    loader = Loader(ctx.build_model)
    loaded = [loader.load()]
    ctx.expect_freed(loaded[0].model, "model")
    ctx.exercise(loaded[0].model)
    loader.build = _small_model  # a reload with other settings
    loaded.append(loader.load())
    ctx.keep(loader)
    ctx.keep(loaded)  # the caller keeps the pipelines it was handed
