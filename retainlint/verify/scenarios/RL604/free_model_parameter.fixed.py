# HAND-WRITTEN FIX: RL604 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: the reference is dropped where it is held (`self.model = None`).
"""RL604: a release helper deletes its own parameter.

A server frees its model at shutdown through a helper that moves nothing and deletes
its parameter before collecting: `del model` only unbinds the helper's name, and the
server's `self.model` keeps the weights.
"""
import gc

import torch.nn as nn


class Server:
    def __init__(self, model: nn.Module):
        self.model = model

    def handle(self, run) -> None:
        run(self.model)

    def shutdown(self) -> None:
        self.model = None
        gc.collect()


def lifecycle(ctx):
    server = Server(ctx.build_model())
    ctx.expect_freed(server.model, "model")
    server.handle(ctx.exercise)
    server.shutdown()
    ctx.keep(server)  # the process keeps the (shut down) server handle
