"""RL703: a per-request session that keeps a bound method of itself.

Each request gets a session holding what it works on (here, the model); the session
stores its own `finish` method as its completion callback. The bound method references
the session, so the session is part of a cycle: when the request ends, reference counting
cannot free it, and what it holds waits for the cyclic collector.
"""


class Session:
    def __init__(self, inputs, run):
        self.inputs = inputs
        self.run = run
        self._on_done = self.finish

    def finish(self) -> None:
        pass

    def serve(self) -> None:
        self.run(self.inputs)
        self._on_done()


def handle(model, run) -> None:
    session = Session(model, run)
    session.serve()


def lifecycle(ctx):
    model = ctx.build_model()
    ctx.expect_freed(model, "model", promptly=True)
    handle(model, ctx.exercise)
    del model
