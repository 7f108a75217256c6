"""RL307: a server's table of jobs that only grows.

The server lives for the process and files each job under its id; running a job leaves
it in the table, so every finished job - and the model it ran - stays alive with the
server.
"""
import torch.nn as nn


class Job:
    def __init__(self, model: nn.Module, run):
        self.model = model
        self.run = run


class JobServer:
    def __init__(self):
        self._jobs: dict = {}

    def submit(self, job_id, job: Job) -> None:
        self._jobs[job_id] = job

    def run(self, job_id) -> None:
        job = self._jobs[job_id]
        job.run(job.model)


def serve() -> JobServer:
    return JobServer()  # the entry point makes the one server the process keeps


def lifecycle(ctx):
    server = serve()
    ctx.keep(server)  # the process keeps its server
    model = ctx.build_model()
    ctx.expect_freed(model, "model")
    server.submit("job-1", Job(model, ctx.exercise))
    del model
    server.run("job-1")
