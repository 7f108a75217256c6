"""RL913: a model wrapper subscribes to the process's event manager and never unsubscribes.

Shaped after OctoPrint's timelapse (before 1.0.0), whose objects subscribed bound methods
to the `eventManager()` singleton and were replaced on every configuration change: the
manager keeps each bound method, so each replaced object - and the model it holds - stays.
"""

_manager = None


def event_manager():
    global _manager
    if _manager is None:
        _manager = EventManager()
    return _manager


class EventManager:
    """Lives for the process: dispatches events to its listeners."""

    def __init__(self):
        self._listeners = {}

    def subscribe(self, event, callback):
        self._listeners.setdefault(event, []).append(callback)

    def unsubscribe(self, event, callback):
        self._listeners[event].remove(callback)

    def fire(self, event, payload=None):
        for callback in list(self._listeners.get(event, ())):
            callback(event, payload)


class Predictor:
    def __init__(self, model):
        self.model = model
        event_manager().subscribe("job-done", self.on_job_done)

    def on_job_done(self, event, payload):
        return self.model


def lifecycle(ctx):
    predictor = Predictor(ctx.build_model())
    ctx.expect_freed(predictor.model, "model")
    ctx.exercise(predictor.model)
    event_manager().fire("job-done")
    predictor = None  # the configuration changes: the old predictor is dropped
