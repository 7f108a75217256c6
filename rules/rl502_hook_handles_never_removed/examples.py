"""RL502's documentation and examples: the `docs` text, and the `valid` and `invalid`
snippets its tests and generated docs are built from."""

from retainlint.analysis.rule import Example

DOCS = """
## What it does
Reports a class that keeps the removal handles of hooks it registers on other objects -
`self._h = model.register_forward_hook(...)`, `self._handles.append(p.register_hook(...))`,
`self._handles[name] = [pre, post]`, a local list of handles stored on `self`, or the result
of its own method that returns a handle - when none of its release methods (`shutdown`,
`close`, ... `__exit__`, `__del__`, a `@contextmanager` method), nor any method they call,
removes them (`.remove()` on the handle, on a loop variable over the container, or a
helper named like `remove_hooks(self._handles)`). A release method releases the whole
object: not a per-item `free(self, slot)`, nor an abstract stub that only raises. A class
with no release method at all is reported only when no method removes them.

Also reports (a warning) a handle kept in a local of a function, or in a local list, and
removed there (`h = layer.register_forward_hook(fn)` ... `h.remove()`; `hs.append(...)` ...
`for h in hs: h.remove()`) when the hooked object is one the caller handed in (a
parameter, an attribute, item or `.modules()` of one, a loop variable over those), the
hook keeps something (a closure over locals, a bound method), and no removal of that
handle is in a `finally:` or an `except` block, nor is the handle used as a context
manager: an exception between the two (the forward pass raising) skips `h.remove()` and
leaves the hook, with everything its closure saved, on the caller's object - one more per
failed call.

Also reports a discarded handle of a hook on a gradient accumulator - the `AccumulateGrad`
node reached as `p.expand_as(p).grad_fn.next_functions[0][0]` (or through
`get_gradient_edge`) - which lives as long as the parameter.

Not reported: hooks a class registers on itself (that is a cycle: RL701), hooks on
per-step tensors computed in the method (forward outputs, losses), handles removed
through a method reachable from a release method, by a same-file subclass, by a
project base class, or by the installed hook itself when it is a module-level function
that reaches the instance through the class (`t = Tracer.get_instance()` ...
`for h in t.hooks: h.remove()`). Nor a helper with no release method that hooks only the
modules handed to its `__init__`, when every instance belongs to a module that hands it
its own submodules (`self.taps = Taps(names, self.named_modules())`): owner, helper and
hooked submodules share one lifetime.

Severity: an error for process-wide registries, and when the class has a release method
that leaves the hook in place while the hook pins the registering object (a bound method,
a closure or `partial` over `self`) and that object is heavy or the hook sits on an
autograd object (kept in C++); a warning otherwise - in particular for a class with no
release method at all, which may well live exactly as long as the object it hooks.

## Why it leaks
The hooked object (a model, a parameter) usually outlives the object that registered the
hook, and the hook - usually a bound method or closure - pins that object and everything
it references (an optimizer, cached activations). Keeping the handle shows the intent to
remove the hook; forgetting to do it on release means the memory stays.

## Example
```python
class ActivationRecorder:
    def __init__(self, model):
        self.records = []
        self._handles = []
        for layer in model.layers:
            self._handles.append(layer.register_forward_hook(self.record))  # RL502

    def record(self, module, args, output):
        self.records.append(output)

    def close(self):
        self.records.clear()
```

## Fix (unsafe, where a release method exists)
Appends the removal to the class's release method: `self._h.remove()` for one handle,
a loop calling `handle.remove()` for a list (`.values()` for a dict), guarded by
`getattr(self, ..., None)` when the attribute may be missing or `None`; when a method of
the class already removes them (`remove_hooks()`), a call to it instead. Unsafe: the
hooks no longer run on the hooked objects after the release (and a called method does
whatever else it does), as the help line says. No fix when the release method's normal
path never reaches its end.
"""

VALID = [
    # removed in the release method
    """
class Recorder:
    def __init__(self, model):
        self._handles = []
        for m in model.modules():
            self._handles.append(m.register_forward_hook(self.record))

    def record(self, *args):
        pass

    def close(self):
        for h in self._handles:
            h.remove()
""",
    # removed through a helper the release method calls
    """
class Recorder:
    def __init__(self, model):
        self._hook = model.register_forward_hook(self.record)

    def record(self, *args):
        pass

    def _detach(self):
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def __del__(self):
        self._detach()
""",
    # no release method: removal in any method counts
    """
class Probe:
    def attach(self, model):
        self.handles = [model.register_forward_hook(self.hook)]

    def hook(self, *args):
        pass

    def detach(self):
        for handle in self.handles:
            handle.remove()
""",
    # hooks on a per-step tensor die with the tensor
    """
class Trainer:
    def step(self, model, batch):
        loss = model(batch).sum()
        self._loss_hook = loss.register_hook(self.on_grad)

    def on_grad(self, g):
        pass

    def close(self):
        pass
""",
    # a hook on the module itself is not another object's hook
    """
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self._h = self.register_forward_hook(Block._check)

    @staticmethod
    def _check(*args):
        pass

    def close(self):
        pass
""",
]

INVALID = [
    Example(
        """
class ActivationRecorder:
    def __init__(self, model):
        self.records = []
        self._handles = []
        for layer in model.layers:
            self._handles.append(layer.register_forward_hook(self.record))

    def record(self, module, args, output):
        self.records.append(output)

    def close(self):
        self.records.clear()
""",
        lines=[7],
        fixed="""
class ActivationRecorder:
    def __init__(self, model):
        self.records = []
        self._handles = []
        for layer in model.layers:
            self._handles.append(layer.register_forward_hook(self.record))

    def record(self, module, args, output):
        self.records.append(output)

    def close(self):
        self.records.clear()
        for handle in self._handles:
            handle.remove()
""",
    ),
    # one handle, registered conditionally; a removal method nobody calls on release
    Example(
        """
class Tracer:
    def __init__(self, model, enabled):
        if enabled:
            self._hook = model.register_forward_pre_hook(self.trace)

    def trace(self, *args):
        pass

    def shutdown(self):
        return
""",
        lines=[5],
        fixed="""
class Tracer:
    def __init__(self, model, enabled):
        if enabled:
            self._hook = model.register_forward_pre_hook(self.trace)

    def trace(self, *args):
        pass

    def shutdown(self):
        if getattr(self, "_hook", None) is not None:
            self._hook.remove()
        return
""",
    ),
    Example(
        """
class Watcher:
    def __init__(self, model):
        self._hooks = {}
        for name, p in model.named_parameters():
            self._hooks[name] = p.register_post_accumulate_grad_hook(self.on_grad)

    def on_grad(self, p):
        pass

    def remove_hooks(self):
        for h in self._hooks.values():
            h.remove()

    def close(self):
        pass
""",
        lines=[6],
        fixed="""
class Watcher:
    def __init__(self, model):
        self._hooks = {}
        for name, p in model.named_parameters():
            self._hooks[name] = p.register_post_accumulate_grad_hook(self.on_grad)

    def on_grad(self, p):
        pass

    def remove_hooks(self):
        for h in self._hooks.values():
            h.remove()

    def close(self):
        self.remove_hooks()
""",
    ),
    # no release method and no removal anywhere: reported, no fix
    Example(
        """
class Probe:
    def __init__(self, model):
        self.handle = model.register_forward_hook(lambda m, a, out: print(out.shape))
""",
        lines=[4],
    ),
    # removed only when the forward pass returns normally
    Example(
        """
def layer_outputs(model, layer, x):
    saved = []
    handle = layer.register_forward_hook(lambda m, a, out: saved.append(out))
    model(x)
    handle.remove()
    return saved
""",
        lines=[4],
    ),
    # a discarded handle on a gradient accumulator
    Example(
        """
def install(params, hook):
    for p in params:
        acc = p.expand_as(p).grad_fn.next_functions[0][0]
        acc.register_hook(hook)
""",
        lines=[5],
    ),
]
