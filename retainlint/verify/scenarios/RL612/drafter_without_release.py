"""RL612: a part holding a model has no release method its owner could call.

Shaped after a speculative-decoding runner: `shutdown()` releases its graph pool, but its
drafter - which loaded a draft model - has no release method, so the runner keeps it and
the draft model's weights stay.
"""
import torch.nn as nn


def load_draft_model(build) -> nn.Sequential:
    return build()


class Drafter:
    def __init__(self, build):
        self.model = load_draft_model(build)

    def propose(self, run) -> None:
        run(self.model)


class GraphPool:
    def __init__(self):
        self.graphs = {}

    def release(self) -> None:
        self.graphs.clear()


class Runner:
    def __init__(self, build):
        self.drafter = Drafter(build)
        self.graphs = GraphPool()

    def shutdown(self) -> None:
        self.graphs.release()


def lifecycle(ctx):
    runner = Runner(ctx.build_model)
    ctx.expect_freed(runner.drafter.model, "model")
    runner.drafter.propose(ctx.exercise)
    runner.shutdown()
    ctx.keep(runner)  # the worker keeps the (shut down) runner
