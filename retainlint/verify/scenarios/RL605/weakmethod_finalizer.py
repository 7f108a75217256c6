"""RL605: a finalizer whose callback is a `weakref.WeakMethod`.

A model handle unregisters its model from the process's model registry when it is
collected - it means to: calling a `WeakMethod` only returns the method (or None), so
`unload()` never runs and the registry keeps the model after the handle is gone.
"""
import weakref

import torch.nn as nn

_loaded_models: dict[str, nn.Module] = {}


class ModelHandle:
    def __init__(self, name: str, model: nn.Module):
        self.name = name
        _loaded_models[name] = model
        self._finalizer = weakref.finalize(self, weakref.WeakMethod(self.unload))

    @property
    def model(self) -> nn.Module:
        return _loaded_models[self.name]

    def unload(self) -> None:
        _loaded_models.pop(self.name, None)


def lifecycle(ctx):
    handle = ModelHandle("mlp", ctx.build_model())
    ctx.expect_freed(handle.model, "model")
    ctx.exercise(handle.model)
    # The caller drops the handle and relies on its finalizer to unload the model.
