# HAND-WRITTEN FIX: RL304 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: the value keeps a weakref.ref to its key, not the key.
"""RL304: a WeakKeyDictionary whose value holds its key.

A compile cache keyed weakly by the model, so it looks safe; but each value, a wrapper,
keeps the model itself, and a weak key whose value reaches it never dies: the entry (and
the model) stays after the engine shut down.
"""
import weakref

import torch.nn as nn


class CompiledWrapper:
    def __init__(self, model: nn.Module):
        self._model_ref = weakref.ref(model)
        self.calls = 0

    def __call__(self, run) -> None:
        self.calls += 1
        run(self._model_ref())


_wrappers: "weakref.WeakKeyDictionary[nn.Module, CompiledWrapper]" = weakref.WeakKeyDictionary()


def compiled(model: nn.Module) -> CompiledWrapper:
    wrapper = _wrappers.get(model)
    if wrapper is None:
        wrapper = _wrappers[model] = CompiledWrapper(model)
    return wrapper


class Engine:
    def __init__(self, model: nn.Module):
        self.model = model

    def step(self, run) -> None:
        compiled(self.model)(run)

    def shutdown(self) -> None:
        self.model = None


def lifecycle(ctx):
    engine = Engine(ctx.build_model())
    ctx.expect_freed(engine.model, "model")
    engine.step(ctx.exercise)
    engine.shutdown()
    ctx.keep(engine)
