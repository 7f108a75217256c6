"""RL616: a store behind a release inherited that only marks the object closed.

Shaped after PyFilesystem2's `MemoryFS`: the base class's `close()` only sets a flag, and
the in-memory store keeps every entry it was given after `close()`, while the object is
referenced.
"""


class Store:
    def __init__(self):
        self._closed = False

    def close(self) -> None:
        self._closed = True


class _Node:
    def __init__(self):
        self._children = {}

    def set_child(self, name, value) -> None:
        self._children[name] = value


class MemoryStore(Store):
    def __init__(self):
        super().__init__()
        self.root = _Node()

    def put(self, name, value) -> None:
        self.root.set_child(name, value)


def lifecycle(ctx):
    store = MemoryStore()
    model = ctx.build_model()
    ctx.expect_freed(model, "model")
    ctx.exercise(model)
    store.put("checkpoint", model)
    del model
    store.close()
    ctx.keep(store)  # the application keeps the closed store
