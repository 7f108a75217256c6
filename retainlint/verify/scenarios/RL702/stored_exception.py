"""RL702: an exception stored with its traceback.

A worker records the last failure for its status endpoint. The exception's traceback holds
the frames it passed through, and their locals - here the model the failing step ran -
so the worker keeps the model after the engine dropped it.
"""
from typing import Optional

import torch.nn as nn


class Worker:
    def __init__(self, max_batch_size: int):
        self.max_batch_size = max_batch_size
        self.last_error: Optional[BaseException] = None

    def execute_model(self, model: nn.Module, run, batch_size: int) -> None:
        try:
            self._run_checked(model, run, batch_size)
        except ValueError as e:
            self.last_error = e

    def _run_checked(self, model: nn.Module, run, batch_size: int) -> None:
        run(model)
        if batch_size > self.max_batch_size:
            raise ValueError(f"batch of {batch_size} exceeds {self.max_batch_size}")


def lifecycle(ctx):
    worker = Worker(max_batch_size=4)
    model = ctx.build_model()
    ctx.expect_freed(model, "model")
    worker.execute_model(model, ctx.exercise, batch_size=8)
    del model  # the engine drops its model
    ctx.keep(worker)  # the server keeps the worker (and its last error)
