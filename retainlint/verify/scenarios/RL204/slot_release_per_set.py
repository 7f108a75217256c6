"""RL204: a finalizer registered as the default of `setdefault`, on every call.

An engine's model slot is a descriptor: setting it registers, once per (engine, slot), a
finalizer whose callback logs the slot's model when the engine is collected. The registration is
written as the default of `setdefault`, which Python evaluates on every call: each load
registers one more finalizer, and each callback's closure holds the model of its call for as
long as the engine lives - after the engine unloaded it.
"""
import logging
import weakref

logger = logging.getLogger("engine")
_release_logs: dict = {}


class ModelSlot:
    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, engine, owner=None):
        return self if engine is None else engine.__dict__.get(self.name)

    def __set__(self, engine, model) -> None:
        engine.__dict__[self.name] = model
        key = (id(engine), self.name)
        _release_logs.setdefault(key, weakref.finalize(
            engine, lambda: logger.debug("engine collected: %s held %s", key, type(model).__name__)))


class Engine:
    model = ModelSlot()

    def __init__(self):
        self.model = None  # nothing loaded yet

    def step(self, run) -> None:
        run(self.model)


def lifecycle(ctx):
    engine = Engine()
    ctx.keep(engine)  # the server keeps its engine
    engine.model = ctx.build_model()
    ctx.expect_freed(engine.model, "model")
    engine.step(ctx.exercise)
    engine.model = None  # the engine unloads its model
