"""RL305: a registry keyed by `id(self)` whose value is the object itself.

Engines register themselves so that a signal handler can find every live engine. The
`id()` key looks harmless, but the value is the engine, and `shutdown()` never removes it:
every engine (and its model) stays registered for the life of the process.
"""
import torch.nn as nn

_live_engines: dict[int, "Engine"] = {}


class Engine:
    def __init__(self, model: nn.Module):
        self.model = model
        self.running = True
        _live_engines[id(self)] = self

    def step(self, run) -> None:
        run(self.model)

    def shutdown(self) -> None:
        self.running = False


def lifecycle(ctx):
    engine = Engine(ctx.build_model())
    ctx.expect_freed(engine.model, "model")
    engine.step(ctx.exercise)
    engine.shutdown()
    # The caller drops the engine after shutdown().
