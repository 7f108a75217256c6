"""RL203: an engine registers its own `close` with `atexit` and never unregisters it.

Shaped after a KV-cache storage connector: `atexit.register(self.close)` keeps the bound
method - and so the engine and its model - in the interpreter's exit list until the process
ends, even after `close()` ran and the caller dropped the engine.
"""
import atexit

import torch.nn as nn


class StorageConnector:
    def __init__(self, model: nn.Module):
        self.model = model
        self.pending: list[int] = []
        atexit.register(self.close)

    def save(self, run) -> None:
        self.pending.append(1)
        run(self.model)

    def close(self) -> None:
        """Flush what is pending."""
        self.pending.clear()


def lifecycle(ctx):
    connector = StorageConnector(ctx.build_model())
    ctx.expect_freed(connector.model, "model")
    connector.save(ctx.exercise)
    connector.close()
    # The caller drops the connector after close().
