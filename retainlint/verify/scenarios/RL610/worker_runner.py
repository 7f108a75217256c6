"""RL610: a release method that leaves a heavy attribute alive.

Shaped after a GPU worker: `shutdown()` stops the profiler but never releases the model
runner, which loaded and holds the weights; the engine keeps the worker handle, and the
model stays.
"""
import torch.nn as nn


def load_model(build) -> nn.Module:
    return build()


class ModelRunner:
    def __init__(self, build):
        self.model = load_model(build)

    def execute_model(self, run) -> None:
        run(self.model)

    def shutdown(self) -> None:
        self.model = None


class Profiler:
    def __init__(self):
        self.running = True

    def stop(self) -> None:
        self.running = False


class Worker:
    def __init__(self, build):
        self.model_runner = ModelRunner(build)
        self.profiler = Profiler()

    def shutdown(self) -> None:
        self.profiler.stop()


def lifecycle(ctx):
    worker = Worker(ctx.build_model)
    ctx.expect_freed(worker.model_runner.model, "model")
    worker.model_runner.execute_model(ctx.exercise)  # the engine drives the runner directly
    worker.shutdown()
    ctx.keep(worker)  # the executor keeps the (shut down) worker handle
