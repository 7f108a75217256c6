"""RL601's documentation and the code samples the test suite runs: `DOCS` (what it does,
why it leaks, the incident, the severity, the fix), `VALID` (not reported) and `INVALID`
(reported, with the lines and fixed source)."""

from retainlint.analysis.rule import Example

DOCS = """
## What it does
Reports a release method (`shutdown`, `close`, `cleanup`, `release`, `teardown`, `free`,
`stop`, `__exit__`, `__aexit__`; configurable) that drops an attribute `self.a`
(`del self.a`, `self.a = None`, `self.a.clear()`, also under a guard such as
`if hasattr(self, "a"):`) while another attribute `self.b` still references the same
object and is not dropped on the release path: by that method, the methods it calls on
`self` or through `super()`, in this class or a project base class in any file. `self.b`
references it when, anywhere in the class, it was

- assigned from an expression that holds `self.a`: `self.b = State(self.a)`,
  `self.b = self.a.forward`, `self.b = [self.a]`, `self.b = self.a`;
- assigned from the same local value: `m = load(); self.a = m; self.b = Wrapper(m)`;
- handed `self.a`: `self.b.load_model(self.a)`, `self.b.model = self.a`.

Values only derived from it (`len(self.a)`, `str(self.a)`, `os.path.join(self.a, "x")`,
`self.a.config`, `self.a.compute(x)`) do not count. A `.clear()` release is only reported for
attributes built from the container (a clear empties the shared object itself).

Not release methods (the shared judgement of `analysis/release.py`): `__del__` (what
still references `self.a` dies with the object), methods that free one item per call
(`stop(self, action_name)`, `free(self, idx=None)` returning when given nothing),
abstract ones and stubs that raise. Nor is anything reported when the release path drops
attributes it cannot name (`vars(self)`, `self.__dict__`) or hands `self` to other code,
for an attribute that only ever holds a number, text, bytes or a path, for an object the
release path ends first (`ray.kill(self.x)`, `self.x.close()`), or for a sink the caller
handed in whose method is judged only by its name.

## Why it leaks
`del self.model` frees nothing while `self.model_state` still references the model: the
weights stay allocated until the whole owner goes away, which after a "shutdown" in the
same process may be never.

## Incident
A GPU model runner's new `shutdown()` deleted `self.model`, the KV caches and the config,
but `self.model_state` (built from the model) and `self.speculator` (which had been
handed the model) kept the weights alive. A follow-up added `del self.model_state` and
`self.speculator = None`.

## Example
```python
class Runner:
    def load_model(self):
        self.model = load()
        self.model_state = ModelState(self.model)

    def shutdown(self):
        if hasattr(self, "model"):
            del self.model  # RL601: `self.model_state` still references it
```

## Severity
An error when what stays is heavy - annotated or built as a model or tensor, returned by an
accessor as one (`def get_model(self) -> nn.Module`), or built from such an attribute
(`init_model_state(config, self.model)`) - so the release is defeated; a warning otherwise
(a task group, a poller, a small dict: real, but it costs little).

## Fix (safe for a private name nothing else reads)
Offered only for an error: nulling the other holders of something light frees nothing that
matters. `self.b = None` is inserted right after the release of `self.a`, inside the same guard
when the release is guarded - for every holder the finding names, or for none. No fix is
offered when something may read `self.b` after the release: the release method (or a
method it calls afterwards) past that point, any other method of the class, its bases or
its subclasses (properties and re-entry such as `load()` after `shutdown()` included) that
reads it without assigning it first, a `hasattr`/`getattr` guard on it, or a class
attribute of that name that `None` would hide; nor when `b` is a property, nor when
another attribute holds `self.a`'s object or its parts too (`self.optimizer` built from
`self.model.parameters()`): the message names it. The fix is unsafe, its help line saying
what changes, when `b` is a public name (code outside the project may read it), when
another module reads `.b`, or when the release method reads `self.b` (a second call sees
`None`).
"""

VALID = [
    # the alias is dropped too (in a method the release method calls)
    """
class Runner:
    def load(self, m):
        self.model = m
        self.state = State(self.model)

    def shutdown(self):
        del self.model
        self._drop_state()

    def _drop_state(self):
        self.state = None
""",
    # plain values derived from the model
    """
class Runner:
    def load(self):
        self.model = build()
        self.n_layers = len(self.model)
        self.name = str(self.model)
        self.out = self.model.compute(1)
        self.cfg = self.model.config

    def close(self):
        self.model = None
""",
    # clearing a shared list empties it for every holder
    """
class Cache:
    def __init__(self):
        self.kv_caches = []
        self.view = self.kv_caches
        self.binder.bind(self.kv_caches)

    def cleanup(self):
        self.kv_caches.clear()
""",
    # the actor's process is ended first: what still refers to it holds a dead handle
    """
import ray


class Pool:
    def __init__(self, factory):
        self.worker = factory.remote()
        self.client = Client(self.worker)

    def stop(self):
        ray.kill(self.worker)
        self.worker = None
""",
    # dynamic deletes: cannot tell what is left
    """
class Runner:
    def __init__(self, m):
        self.model = m
        self.wrapped = Wrap(m)

    def close(self):
        del self.model
        for name in list(vars(self)):
            delattr(self, name)
""",
]

INVALID = [
    Example(
        """
class Runner:
    def load_model(self):
        self.model = load()
        self.model_state = init_model_state(self.config, self.model)
        self.speculator.load_model(self.model)

    def shutdown(self):
        if hasattr(self, "model"):
            del self.model
""",
        # no fix: `load_model()` reads `self.speculator` again after `shutdown()`
        lines=[10],
    ),
    # nothing reads the holder after the release: fixed (unsafe: a public name)
    Example(
        """
import torch.nn as nn


class Runner:
    def load_model(self):
        self.model: nn.Module = load()
        self.model_state = init_model_state(self.config, self.model)

    def shutdown(self):
        if hasattr(self, "model"):
            del self.model
""",
        lines=[12],
        fixed="""
import torch.nn as nn


class Runner:
    def load_model(self):
        self.model: nn.Module = load()
        self.model_state = init_model_state(self.config, self.model)

    def shutdown(self):
        if hasattr(self, "model"):
            del self.model
            self.model_state = None
""",
    ),
    # the same local value; a bound method
    Example(
        """
import torch.nn as nn


class Engine:
    def __init__(self, model: nn.Module):
        self.model = model
        self.wrapper = Wrapper(model)
        self.fn = self.model.forward

    def close(self):
        self.model = None  # release
        self.fn = None
""",
        lines=[12],
        fixed="""
import torch.nn as nn


class Engine:
    def __init__(self, model: nn.Module):
        self.model = model
        self.wrapper = Wrapper(model)
        self.fn = self.model.forward

    def close(self):
        self.model = None  # release
        self.wrapper = None
        self.fn = None
""",
    ),
    # still used later in the release method: reported, no fix
    Example(
        """
class Engine:
    def __init__(self, model):
        self.model = model
        self.graphs = GraphPool(self.model)

    def close(self):
        del self.model
        self.graphs.reset()
""",
        lines=[8],
    ),
]
