"""RL606: a release method rebinds a container another object still holds.

A worker hands its dict of loaded models to its model runner; `shutdown()` rebinds
`self.models` to a new dict, and the runner keeps the old one, with the model in it.
"""


class ModelRunner:
    def __init__(self, models: dict):
        self.models = models

    def execute(self, name: str, run) -> None:
        run(self.models[name])


class Worker:
    def __init__(self):
        self.models = {}
        self.runner = ModelRunner(self.models)

    def load(self, name: str, model) -> None:
        self.models[name] = model

    def shutdown(self) -> None:
        self.models = {}


def lifecycle(ctx):
    worker = Worker()
    worker.load("main", ctx.build_model())
    ctx.expect_freed(worker.models["main"], "model")
    worker.runner.execute("main", ctx.exercise)
    worker.shutdown()
    ctx.keep(worker)  # the executor keeps the (shut down) worker
