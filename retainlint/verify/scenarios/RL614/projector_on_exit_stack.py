"""RL614: cleanup registered on an `ExitStack` nothing closes.

Shaped after llama-cpp-python's multimodal chat handler: loading a projector registers
its release on the handler's `ExitStack` (which keeps it for that callback), but no method
unwinds the stack, so the projector's weights stay while the handler lives.
"""
from contextlib import ExitStack

import torch.nn as nn


def load_model(build) -> nn.Module:
    return build()


def _free_projector(projector: nn.Module) -> None:
    projector.to("meta")  # gives the weights' memory back, as the native free does


class ChatHandler:
    def __init__(self):
        self._exit_stack = ExitStack()
        self.running = True

    def load(self, build) -> nn.Module:
        projector = load_model(build)
        self._exit_stack.callback(_free_projector, projector)
        return projector

    def shutdown(self) -> None:
        self.running = False


def lifecycle(ctx):
    handler = ChatHandler()
    projector = handler.load(ctx.build_model)
    ctx.expect_freed(projector, "model")
    ctx.exercise(projector)
    del projector
    handler.shutdown()
    ctx.keep(handler)  # the server keeps its (shut down) chat handler
