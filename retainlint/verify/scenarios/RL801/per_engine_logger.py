"""RL801: a logger per engine instance, with a filter bound to the engine.

Each engine makes its own named logger (`engine.0`, `engine.1`, ...) and adds a filter that
stamps records with its state. The logging manager keeps every logger ever created for the
life of the process; the filter is a bound method, so each logger keeps its engine - and
the engine's model - after `shutdown()`.
"""
import itertools
import logging

import torch.nn as nn

_engine_ids = itertools.count()


class Engine:
    def __init__(self, model: nn.Module):
        self.model = model
        self.steps = 0
        self.logger = logging.getLogger(f"engine.{next(_engine_ids)}")
        self.logger.addFilter(self._add_context)

    def _add_context(self, record: logging.LogRecord) -> bool:
        record.steps = self.steps
        return True

    def step(self, run) -> None:
        self.steps += 1
        run(self.model)
        self.logger.debug("step done")

    def shutdown(self) -> None:
        self.logger.debug("shutting down")


def lifecycle(ctx):
    engine = Engine(ctx.build_model())
    ctx.expect_freed(engine.model, "model")
    engine.step(ctx.exercise)
    engine.shutdown()
    # The caller drops the engine.
