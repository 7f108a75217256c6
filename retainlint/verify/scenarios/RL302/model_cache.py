"""RL302: a module-level dict whose values are models, never pruned.

Shaped after a rotary-embedding / layer cache (`_ROPE_DICT`): the loader memoises each
model it builds by name, so every model built in the process stays alive after the engine
that used it shut down.
"""
import torch.nn as nn

_model_cache: dict[str, nn.Module] = {}


def get_model(name: str, build) -> nn.Module:
    model = _model_cache.get(name)
    if model is None:
        model = build()
        _model_cache[name] = model
    return model


class Engine:
    def __init__(self, model: nn.Module):
        self.model = model

    def step(self, run) -> None:
        run(self.model)

    def shutdown(self) -> None:
        self.model = None


def lifecycle(ctx):
    engine = Engine(get_model("mlp", ctx.build_model))
    ctx.expect_freed(engine.model, "model")
    engine.step(ctx.exercise)
    engine.shutdown()
    ctx.keep(engine)
