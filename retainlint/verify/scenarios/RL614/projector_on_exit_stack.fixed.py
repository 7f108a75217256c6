# HAND-WRITTEN FIX: RL614 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: the release method closes the stack, which runs the callbacks.
"""RL614: cleanup registered on an `ExitStack` nothing closes.

Shaped after llama-cpp-python's multimodal chat handler: loading a projector registers
its release on the handler's `ExitStack`, but no method unwinds the stack, so the
projector's weights stay while the handler lives.
"""
from contextlib import ExitStack

import torch.nn as nn


def load_model(build) -> nn.Module:
    return build()


class ChatHandler:
    def __init__(self):
        self._exit_stack = ExitStack()
        self.projector = None
        self.running = True

    def load(self, build) -> None:
        self.projector = load_model(build)
        self._exit_stack.callback(self._free_projector)

    def _free_projector(self) -> None:
        self.projector = None

    def shutdown(self) -> None:
        self.running = False
        self._exit_stack.close()


def lifecycle(ctx):
    handler = ChatHandler()
    handler.load(ctx.build_model)
    ctx.expect_freed(handler.projector, "model")
    ctx.exercise(handler.projector)
    handler.shutdown()
    ctx.keep(handler)  # the server keeps its (shut down) chat handler
