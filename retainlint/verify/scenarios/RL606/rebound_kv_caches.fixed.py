# HAND-WRITTEN FIX: RL606 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: `self.kv_caches.clear()` empties the dict both objects share.
"""RL606: a release method rebinds a container another object still holds.

A worker hands its KV-cache dict to its model runner; `shutdown()` rebinds
`self.kv_caches` to a new dict, and the runner keeps the old one, full of cache tensors.
"""
import torch


class ModelRunner:
    def __init__(self, kv_caches: dict):
        self.kv_caches = kv_caches


class Worker:
    def __init__(self, model):
        self.model = model
        self.kv_caches = {}
        self.runner = ModelRunner(self.kv_caches)

    def allocate(self, run) -> None:
        run(self.model)
        weight = next(self.model.parameters())
        self.kv_caches["layer0"] = torch.zeros(2048, 8192, device=weight.device)

    def shutdown(self) -> None:
        self.model = None
        self.kv_caches.clear()


def lifecycle(ctx):
    worker = Worker(ctx.build_model())
    worker.allocate(ctx.exercise)
    ctx.expect_freed(worker.kv_caches["layer0"], "KV cache")
    worker.shutdown()
    ctx.keep(worker)  # the executor keeps the (shut down) worker
