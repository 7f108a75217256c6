# HAND-WRITTEN FIX: RL902 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: drop the back-reference once the child is attached.
"""RL902: a lazy child keeps the back-reference to the container it attached itself to.

An engine keeps its modules and state in an auto-vivifying tree (`state["modules"]["model"]
= model`): a missing key makes a child that attaches itself to its parent on the first write,
and keeps the reference to the parent afterwards. Parent and child then hold each other:
the tree - and the model kept in it - is freed only when the cyclic collector runs, not
when the engine drops it. The scenario asks for the model to be freed promptly, by
reference counting alone.
"""
import torch.nn as nn


class StateTree(dict):
    def __init__(self, *args, **kwargs):
        object.__setattr__(self, "_parent", kwargs.pop("_parent", None))
        object.__setattr__(self, "_key", kwargs.pop("_key", None))
        super().__init__(*args, **kwargs)

    def __setitem__(self, name, value):
        super().__setitem__(name, value)
        parent = object.__getattribute__(self, "_parent")
        if parent is not None:
            parent[object.__getattribute__(self, "_key")] = self
            object.__setattr__(self, "_parent", None)

    def __missing__(self, name):
        return StateTree(_parent=self, _key=name)


class Engine:
    def __init__(self, model: nn.Module):
        self.state = StateTree()
        self.state["modules"]["model"] = model

    def step(self, run) -> None:
        run(self.state["modules"]["model"])


def lifecycle(ctx):
    engine = Engine(ctx.build_model())
    ctx.expect_freed(engine.state["modules"]["model"], "model", promptly=True)
    engine.step(ctx.exercise)
    # The caller drops the engine.
