# HAND-WRITTEN FIX: RL703 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: look the method up when it is needed instead of storing it.
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

    def finish(self) -> None:
        pass

    def serve(self) -> None:
        self.run(self.inputs)
        self.finish()


def handle(model, run) -> None:
    session = Session(model, run)
    session.serve()


def lifecycle(ctx):
    model = ctx.build_model()
    ctx.expect_freed(model, "model", promptly=True)
    handle(model, ctx.exercise)
    del model
