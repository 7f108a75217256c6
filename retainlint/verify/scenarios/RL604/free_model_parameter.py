"""RL604: a release helper deletes its own parameter.

A server frees its model at shutdown through a helper that moves nothing and deletes
its parameter before collecting: `del model` only unbinds the helper's name, and the
server's `self.model` keeps the weights.
"""
import gc

import torch.nn as nn


def free_model(model: nn.Module) -> None:
    del model
    gc.collect()


class Server:
    def __init__(self, model: nn.Module):
        self.model = model

    def handle(self, run) -> None:
        run(self.model)

    def shutdown(self) -> None:
        free_model(self.model)


def lifecycle(ctx):
    server = Server(ctx.build_model())
    ctx.expect_freed(server.model, "model")
    server.handle(ctx.exercise)
    server.shutdown()
    ctx.keep(server)  # the process keeps the (shut down) server handle
