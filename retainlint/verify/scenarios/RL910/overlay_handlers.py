"""RL910: an overlay on a long-lived renderer takes its handlers off only in `__del__`.

Shaped after fastplotlib's selectors (v0.1.0a16), which added bound methods to the plot
area's renderer and removed them in `__del__`: the renderer keeps each bound method, so
the overlay - and the model it draws from - is never freed and `__del__` never runs.
"""


class Renderer:
    """Lives as long as the window: dispatches pointer events to its handlers."""

    def __init__(self):
        self.handlers = {}

    def add_event_handler(self, handler, kind):
        self.handlers.setdefault(kind, []).append(handler)

    def remove_event_handler(self, handler, kind):
        self.handlers[kind].remove(handler)

    def dispatch(self, kind, event):
        for handler in list(self.handlers.get(kind, ())):
            handler(event)


class Overlay:
    def __init__(self, model):
        self.model = model
        self.renderer = None

    def attach(self, renderer):
        self.renderer = renderer
        self.renderer.add_event_handler(self._move, "pointer_move")

    def _move(self, event):
        return self.model(event)

    def __del__(self):
        self.renderer.remove_event_handler(self._move, "pointer_move")


def lifecycle(ctx):
    renderer = Renderer()
    overlay = Overlay(ctx.build_model())
    overlay.attach(renderer)
    ctx.expect_freed(overlay.model, "model")
    ctx.exercise(overlay.model)
    overlay = None  # the user closes the overlay; the window (and its renderer) stays
    ctx.keep(renderer)
