"""RL611: a release method keeps an exception a method was handed.

A request handler records the exception of a failed request; `close()` lets go of the
transport and the model, but the recorded exception's traceback keeps the frame of the
failed call, whose locals hold the model.
"""
import torch.nn as nn


class Handler:
    def __init__(self, model: nn.Module):
        self.model = model
        self.transport = object()

    def serve(self, run) -> None:
        try:
            _forward(self.model, run)
        except RuntimeError as exc:
            self.set_exception(exc)

    def set_exception(self, exc):
        self._exception = exc

    def close(self) -> None:
        self.transport = None
        self.model = None


def _forward(model: nn.Module, run) -> None:
    run(model)
    raise RuntimeError("the request failed after the forward pass")


def lifecycle(ctx):
    handler = Handler(ctx.build_model())
    ctx.expect_freed(handler.model, "model")
    handler.serve(ctx.exercise)
    handler.close()
    ctx.keep(handler)  # the server keeps the (closed) handler
