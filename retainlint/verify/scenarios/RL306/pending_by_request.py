"""RL306: a module-level table of pending requests that nothing empties.

The engine files each request's job under its id until the job has run. Running it never
removes the entry: the table, which lives as long as the process, keeps every finished
job, and each job keeps the model it ran.
"""
import torch.nn as nn

_pending: dict = {}


class Job:
    def __init__(self, model: nn.Module, run):
        self.model = model
        self.run = run


def submit(request_id, job: Job) -> None:
    _pending[request_id] = job


def run(request_id) -> None:
    job = _pending[request_id]
    job.run(job.model)


def lifecycle(ctx):
    model = ctx.build_model()
    ctx.expect_freed(model, "model")
    submit("request-1", Job(model, ctx.exercise))
    del model  # the caller is done with its model once the request is submitted
    run("request-1")
