"""RL701's documentation and its examples: the markdown of `SelfCycleCallback.docs`, and
the sources it must pass (`VALID`) and report on the given lines (`INVALID`)."""

from retainlint.analysis.rule import Example

DOCS = """
## What it does
Reports, in heavy classes (an `nn.Module`, a class holding tensors or models, a configured
heavy type), a callback that references the instance stored back on the instance or on an
object it reaches - a bound method (`self.fn = self.method`), a `functools.partial` of
`self` or of a bound method (`self.forward = partial(wrap, self.forward)`), a lambda or
nested function using `self` - whether assigned (`self.x = ...`, `self.sub.cb = ...`),
added to a container of `self` (`self._callbacks.append(self.save)`), registered as a hook
on `self` or on an object or parameter reached from it
(`self.sub.register_forward_hook(lambda *a: self.x)`,
`self._register_load_state_dict_pre_hook(partial(hook, self))`,
`p.register_hook(self.on_grad)` for `p` in `self.parameters()`), set with
`setattr(...)`, or handed to a `register_callback`-style method of such an object. Also a
bound method handed to a base class's method that stores it on the instance as it is
(`super().__init__(self.propose, ...)` where the base's `__init__` does `self.propose =
propose`; `super(C, obj).__init__(obj.propose)` alike). A subclass of a `torch.distributions`
distribution counts as heavy: it holds its parameters as tensors.

In any function, a model handed in as a parameter annotated as one (`module: nn.Module`,
a configured heavy type) that gets its own bound method stored on itself
(`module.forward = partial(fn, module.forward)`, `model.forward = MethodType(fn, model)`, a
lambda over `model`) is reported too, unless the function sets it back or deletes it.

Four shapes are reported in any class, heavy or not, because what they keep does not
depend on the class holding tensors:

- a per-instance cache around the instance's own method stored on it
  (`self.get_coord = lru_cache()(self.get_coord)`, `functools.cache(self.m)`): the cache
  holds the bound method, hence the instance, and every result it computed;
- a callback over `self` registered on the autograd node of a tensor made per call
  (`out.grad_fn.register_hook(closure)`) in a class that keeps values it is handed per
  call (`self.saved = output` in a hook method): the C++ node holds the instance, the
  instance holds tensors whose graph holds the node, and the collector sees none of it;
- a callback handed to a holder kept on `self` - built around it
  (`self._timer = PeriodicCallback(self._tick, 500)`) or given it through a setter
  (`self._multi.setopt(KEY, self._on_socket)`) - in a class whose release method uses that
  holder (stops, closes it) but keeps it: after release the instance stays in the cycle,
  for ever when the holder is a C object. A thread (`threading.Thread(target=self.run)`)
  drops its target once it has run and is not reported, nor is a holder of the file that
  drops the callback itself (it rebinds or deletes the attribute it stored it in, say
  `self.on_done = lambda: None` when its job ends); dropping the holder on release
  (`self._timer = None`) breaks the cycle;
- in a file that imports a Qt binding (qtpy, PyQt5/6, PySide2/6, pyqtgraph), a partial,
  lambda or closure over `self` connected to a signal of the instance or of a widget it
  owns (`self.box.valueChanged.connect(partial(self._changed, name="x"))`, or a local made
  with `self` as its Qt parent: `action = QAction("Run", self)`), unless the class
  disconnects that signal other than just before connecting it again in the same method (a
  re-arm leaves the last slot connected): Qt keeps a plain bound method weakly but any other
  slot strongly, in the C++ connection, so the collector never sees the cycle (an error).

Otherwise only classes whose instances hold something heavy themselves are reported: a tensor,
parameter or buffer, a layer with weights, an instance of a project class that holds one,
a model handed in (a parameter annotated as a model, or named `model`/`module`), or a
configured heavy type. A module with no state of its own (an activation, a sampler) in a
cycle keeps nothing worth freeing early.

Not reported: plain classes; `weakref.WeakMethod` / `weakref.ref` callbacks (a partial
of `type(module).forward` and `weakref.ref(module)`); staticmethods, classmethods and
properties, and methods behind a decorator of the file that binds through a weak reference
(`@weakmethod` returning `partial(fn, weakref.ref(self))`); a base-class method that only
calls what it is handed; stores undone by a release method
(`self.fn = None`, `del self.fn`, the hook handle removed); temporary patches the method
takes out again (`del self.fn` in a `finally:`, a patched function that restores the
original, the original set back on every way out: in `finally`, or in both `except` and
`else`); hooks for one call, whose handle the registering function removes on every way
out of it (in `finally`, after a `@contextmanager`'s `yield`, before each `return`,
`with handle:`, the handles of a list removed in a loop) or that remove their own handle
when they run (a one-shot hook); hooks whose handles, kept on `self`, another method the
class itself calls removes (registered at a step's start, removed at its end) - unless
the registering method removes the old ones only to register new ones; registries whose entries are popped or removed
somewhere in the class; hooks on per-step tensors.

Severity: an error when the cycle passes where the collector cannot see it - a
`register_post_accumulate_grad_hook` on a tensor or parameter the instance owns, a hook on
an autograd graph node (a `grad_fn`, a gradient accumulator), a Qt connection (the pattern
behind gpytorch's CUDA leak). A plain Python cycle - a `load_state_dict` / `state_dict` hook
holding the module, `register_hook` on a parameter (the tensor's hook dict is traversed by
the collector), a bound method stored on the instance or on a model handed in - is freed by
the cyclic collector: a warning when that comes too late (a finalizer or `weakref.finalize(self,
...)` waits on the instance's death; instances are values made per call, such as torch
distributions, which a disabled collector would never free; or the model was handed in by a
caller, who frees it by dropping it - fairscale's `checkpoint_wrapper` - and a collection
is triggered by the count of Python objects made, not by the GPU memory the model pins),
otherwise info (real but negligible, shown with `--min-severity info`): an object made once
keeps only itself, and so does an optimizer or engine handed in (built once per run) or a
`torch.fx.GraphModule` (cyclic through its graph already). A callback kept by an object of
a library that is neither the project's nor the standard library's (`pycurl.CurlMulti()`,
tornado's `PeriodicCallback`) is a warning: whether the collector can traverse it (a C type
cannot) is unknown. So is a per-instance cache around a method that builds numpy arrays or
torch tensors (`return np.indices(self.shape)`): it keeps one per argument it saw, made per
call, and their bytes do not count towards a collection (gammapy's geometries); a cache of
numbers, strings or the instance's own values is info, unless the instance itself weighs
something and instances come and go: an error for a collection of the data its caller hands
it (`self.data = data`, `__len__` returning `len(self.data)`) that its own methods make anew
(`split()` returning new ones: fastestimator's in-memory datasets), each one keeping all its
samples until a collection.

## Why it leaks
The object becomes part of a reference cycle, so reference counting can never free it:
its GPU memory is released only when the cyclic garbage collector happens to run (which
may be long after the model was dropped, while the next model is already loading) - and
never, when the cycle passes through C++ objects the collector cannot traverse.

## Example
```python
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self._register_load_state_dict_pre_hook(partial(_upgrade, self))  # RL701
        self.act = self.gelu  # RL701

    def gelu(self, x):
        return torch.nn.functional.gelu(x)
```

## Suggestion
Store `weakref.WeakMethod(self.method)` (or `weakref.ref(self)`) and dereference it at call
time, keep the callback off the object (a staticmethod or module function receiving what
it needs), or call the method directly. For state-dict hooks, register the plain
function with `register_load_state_dict_pre_hook(fn)` (or
`_register_load_state_dict_pre_hook(fn, with_module=True)`): PyTorch passes the module
itself and keeps only a weak reference to it.
"""

VALID = [
    # the model held weakly by the partial; a patch undone before returning
    """
import functools
import weakref

import torch.nn as nn

def checkpoint_wrapper(module: nn.Module) -> nn.Module:
    module.forward = functools.partial(run, type(module).forward, weakref.ref(module))
    return module

def traced(model: nn.Module, batch):
    original = model.forward
    model.forward = functools.partial(run, model.forward)
    try:
        return model(batch)
    finally:
        model.forward = original

def run(forward, *args):
    return forward(*args)
""",
    # a plain class: a collectable cycle of no weight
    """
class Handler:
    def __init__(self):
        self.fn = self.handle

    def handle(self):
        pass
""",
    # a timer dropped on close; a cache that does not hold `self`; a thread
    """
import functools
import threading
from tornado import ioloop

class Client:
    def start(self):
        self._timer = ioloop.PeriodicCallback(self._tick, 1000)
        self._parse = functools.lru_cache()(str.split)
        self._thread = threading.Thread(target=self._tick)

    def close(self):
        self._timer.stop()
        self._timer = None
        self._thread.join()

    def _tick(self):
        pass
""",
    # weak references and staticmethods do not make a cycle
    """
import weakref
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self._cb = weakref.WeakMethod(self.step)
        self.act = self.gelu
        self.register_load_state_dict_pre_hook(Block._upgrade)

    def step(self):
        pass

    @staticmethod
    def gelu(x):
        return x

    @staticmethod
    def _upgrade(module, state_dict, *args):
        pass
""",
    # undone on release
    """
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = self.step

    def step(self):
        pass

    def close(self):
        self.fn = None
""",
    # a hook on a per-step output, and data attributes
    """
import torch.nn as nn

class Block(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size
        self.width = self.size

    def forward(self, x):
        y = x * 2
        y.register_hook(self.on_grad)
        return y

    def on_grad(self, g):
        pass
""",
]

INVALID = [
    Example(
        """
from functools import partial

import torch
import torch.nn as nn

def _upgrade(module, state_dict, prefix, *args):
    pass

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self._register_load_state_dict_pre_hook(partial(_upgrade, self))
        self.act = self.gelu
        self.proj.register_forward_hook(lambda m, a, out: self.record(out))
        for p in self.parameters():
            p.register_post_accumulate_grad_hook(self.on_grad)

    def gelu(self, x):
        return torch.nn.functional.gelu(x)

    def record(self, out):
        pass

    def on_grad(self, p):
        pass
""",
        lines=[14, 15, 16, 18],
    ),
    Example(
        """
import torch.nn as nn

class Trainer:
    def __init__(self, model: nn.Module):
        self.model = model
        self.callbacks = []
        self.callbacks.append(self.save)

    def save(self):
        pass
""",
        lines=[8],
        settings={"heavy_types": ["example.Trainer"]},
    ),
    # a per-instance cache around the instance's own method, in any class
    Example(
        """
from functools import lru_cache

class Grid:
    def __init__(self, shape):
        self.shape = shape
        self.coords = lru_cache()(self.coords)

    def coords(self, mode="center"):
        return [[0.0] * self.shape[1] for _ in range(self.shape[0])]
""",
        lines=[7],
    ),
    # a timer built around a bound method, stopped on close but kept
    Example(
        """
from tornado import ioloop

class Client:
    def start(self):
        self._timer = ioloop.PeriodicCallback(self._tick, 1000)
        self._timer.start()

    def close(self):
        self._timer.stop()

    def _tick(self):
        pass
""",
        lines=[6],
    ),
    # a closure over `self` on a per-call tensor's grad_fn, in a class keeping activations
    Example(
        """
class Relevance:
    def pre_forward(self, module, inputs):
        def on_backward(grad_input, grad_output):
            return self.rule(grad_input, self.saved)

        out = inputs[0].clone()
        out.grad_fn.register_hook(on_backward)
        return (out,)

    def forward(self, module, inputs, output):
        self.saved = output

    def rule(self, grad, saved):
        return grad
""",
        lines=[8],
    ),
    # a closure over `self` on an object the instance reaches, the value on its own line
    Example(
        """
import torch.nn as nn

class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        method = self.proj.quant_method

        def pack(layer):
            self.packed = layer.weight.t()

        method.process_weights = (
            pack
        )
""",
        lines=[13],
    ),
    # a model's own bound method stored on it by a helper (fairscale's checkpoint
    # wrapper), and a bound method a base class keeps (pyro's rejection samplers)
    Example(
        """
import functools

import torch
import torch.nn as nn
from torch.distributions import Distribution

def checkpoint_wrapper(module: nn.Module) -> nn.Module:
    module.forward = functools.partial(torch.utils.checkpoint.checkpoint, module.forward)
    return module

class Rejector(Distribution):
    def __init__(self, propose):
        self.propose = propose

class Gamma(Rejector):
    def __init__(self, concentration):
        self.concentration = concentration
        super().__init__(self.draw)

    def draw(self, shape):
        return torch.randn(shape) * self.concentration
""",
        lines=[9, 19],
    ),
    # a partial over `self` connected to a Qt signal of an owned widget (mne-qt-browser)
    Example(
        """
from functools import partial

from qtpy.QtWidgets import QDialog, QSpinBox

class Settings(QDialog):
    def __init__(self):
        super().__init__()
        self.box = QSpinBox()
        self.box.valueChanged.connect(partial(self._changed, name="downsampling"))

    def _changed(self, value, name):
        pass
""",
        lines=[10],
    ),
]
