# HAND-WRITTEN FIX: RL901 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: reset the attribute in a `finally` around the work.
"""RL901: the last job kept on a private attribute only an error report reads.

An executor takes jobs off its queue and keeps the current one on `self._job` so that a
failure can say which job broke. Nothing resets it: after the last job ran, the executor -
which the server keeps for the life of the process - still holds that job, and the job
holds the model it ran.
"""
import torch.nn as nn


class Job:
    def __init__(self, model: nn.Module, run):
        self.model = model
        self.run = run

    def __call__(self) -> None:
        self.run(self.model)


class Executor:
    def __init__(self):
        self._queue: list = []

    def submit(self, job: Job) -> None:
        self._queue.append(job)

    def run_next(self) -> None:
        self._job = job = self._queue.pop(0)
        try:
            job()
        except Exception as e:
            raise RuntimeError(f"job failed: {self._job!r}") from e
        finally:
            self._job = None


def lifecycle(ctx):
    executor = Executor()
    ctx.keep(executor)  # the server keeps its executor
    model = ctx.build_model()
    ctx.expect_freed(model, "model")
    executor.submit(Job(model, ctx.exercise))
    del model  # the caller drops its model once the job is submitted
    executor.run_next()
