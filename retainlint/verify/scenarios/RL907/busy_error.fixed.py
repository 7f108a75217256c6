# HAND-WRITTEN FIX: RL907 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: a function makes a fresh instance for each raise.
"""RL907: an engine raises one module-level exception instance whenever it is busy.

Shaped after gpustack's authentication dependency (v2.1.2), which raised one
`UnauthorizedException` made at import on every failed login: each raise adds the raising
frames to the instance's traceback, and the frames keep their locals - here the
model the engine was about to run - after the engine lets it go.
"""


class EngineBusy(Exception):
    pass


def busy():
    return EngineBusy("the engine is busy; retry later")


class Engine:
    def __init__(self, model):
        self.model = model
        self.running = 1

    def submit(self, prompt):
        model = self.model
        if self.running:
            raise busy()
        return model(prompt)

    def unload(self):
        del self.model


def lifecycle(ctx):
    engine = Engine(ctx.build_model())
    ctx.expect_freed(engine.model, "model")
    ctx.exercise(engine.model)
    for _ in range(3):
        try:
            engine.submit("hello")
        except EngineBusy:
            pass  # the client retries later
    engine.unload()
    ctx.keep(engine)  # the engine object lives on, without its model
