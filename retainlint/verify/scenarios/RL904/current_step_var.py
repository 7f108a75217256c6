"""RL904: a ContextVar created per instance, set and never reset.

Each session publishes its current step (the model and the step number) to helper code
through its own `ContextVar`. The server runs a connection's requests in the connection's
`Context`, as asyncio runs a task in its own. The variable is made per session and set
without a reset: the Context maps it to the last step it was set to, and keeps both for
as long as the Context lives - here the connection, which outlives the session and its
model.
"""
import contextvars
from contextvars import ContextVar

import torch.nn as nn


class Step:
    def __init__(self, model: nn.Module, number: int):
        self.model = model
        self.number = number


class Session:
    def __init__(self, model: nn.Module):
        self.model = model
        self.steps = 0
        self._step = ContextVar("current_step", default=None)

    def current_step(self):
        return self._step.get()

    def step(self, run) -> None:
        self.steps += 1
        self._step.set(Step(self.model, self.steps))
        run(self.current_step().model)


def lifecycle(ctx):
    session = Session(ctx.build_model())
    ctx.expect_freed(session.model, "model")
    connection = contextvars.copy_context()
    ctx.keep(connection)  # the server keeps the connection's Context
    connection.run(session.step, ctx.exercise)
    # The caller drops the session.
