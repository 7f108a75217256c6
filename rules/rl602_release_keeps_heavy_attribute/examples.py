"""The code samples of RL602 release-keeps-heavy-attribute that the test suite runs:
`VALID` (nothing to report) and `INVALID` (what it reports, and the source after its fixes)."""

from retainlint.analysis.rule import Example

VALID = [
    # a semaphore taken as a gate holds no memory and nothing to give back
    """
import threading

class Pairing:
    def __init__(self):
        self.pairs = {}

    def pair_of(self, rank, world):
        if not self.pairs:
            self.pairs = {r: world - 1 - r for r in range(world)}
            self.turn = threading.Semaphore(1)
            self.turn.acquire()
        return self.pairs[rank]
""",
    # the storage is shrunk to nothing in place (alloc() grows it again)
    """
import torch

class Arena:
    def __init__(self, n):
        self.slab = torch.empty(n)
        self.index = torch.zeros(n)

    def alloc(self):
        for t in (self.slab, self.index):
            t.untyped_storage().resize_(t.numel() * t.element_size())

    def release(self):
        self.slab.untyped_storage().resize_(0)
        for t in [self.index]:
            t.storage().resize_(0)
""",
    # the class drops its store, then closes as its base does
    """
class Store:
    def close(self):
        self._closed = True

class _Node:
    def __init__(self):
        self._children = {}

    def set_child(self, name, node):
        self._children[name] = node

class MemoryStore(Store):
    def __init__(self):
        self.root = _Node()

    def close(self):
        self.root = None
        super().close()
""",
    # the wrapper unloads the model it loaded
    """
from exlib import Model

class Wrapper:
    def __init__(self, model_dir):
        self.model = Model.from_directory(model_dir)
        self.model.load(progressbar=True)

    def unload(self):
        self.model.unload()
        self.model = None
""",
    # the adapter's free is registered on the stack close() unwinds
    """
import contextlib
import native

class Llama:
    def __init__(self, path, lora_path):
        self._stack = contextlib.ExitStack()
        self._model = self._stack.enter_context(native.open_model(path))
        self._lora = native.lora_adapter_init(self._model, lora_path)
        self._stack.callback(self._free_lora)

    def _free_lora(self):
        native.lora_adapter_free(self._lora)
        self._lora = None

    def close(self):
        self._stack.close()

    def __del__(self):
        self.close()
""",
    # the handler's stack is unwound by its release method
    """
from contextlib import ExitStack
import native

class ChatHandler:
    def __init__(self, clip_path):
        self.clip_path = clip_path
        self._exit_stack = ExitStack()

    def load(self, model):
        self.ctx = native.clip_init(self.clip_path, model)
        self._exit_stack.callback(native.clip_free, self.ctx)

    def close(self):
        self._exit_stack.close()
""",
    # the stored exception is dropped with the rest
    """
class Manager:
    def __init__(self):
        self.socket = None

    def fail(self, exc: Exception):
        self.error = exc

    def cleanup(self):
        self.socket = None
        self.error = None
""",
    # dropped in a helper the release method calls
    """
import torch.nn as nn

class Runner:
    def __init__(self):
        self.model = nn.Linear(4, 4)

    def shutdown(self):
        self._free()

    def _free(self):
        del self.model
""",
    # the model belongs to the caller
    """
import torch.nn as nn

class Trainer:
    def __init__(self, model: nn.Module):
        self.model = model

    def close(self):
        pass
""",
    # process-exit cleanup: close() runs only from __del__; and a weightless layer
    """
import torch
import torch.nn as nn

class Communicator:
    def __init__(self, size):
        self.buffer = torch.empty(size, dtype=torch.uint8, device="cuda")
        self.act = nn.ReLU()

    def close(self):
        self._handle = None

    def __del__(self):
        self.close()
""",
    # the attribute's own release method, through a walrus
    """
import torch

class Worker:
    def load(self):
        self.cache = torch.empty(1 << 20)

    def shutdown(self):
        if cache := getattr(self, "cache", None):
            cache.release()
""",
]

INVALID = [
    # a store kept by a close() inherited from a base that only marks it closed
    Example(
        """
class Store:
    def close(self):
        self._closed = True

class _Node:
    def __init__(self):
        self._children = {}

    def set_child(self, name, node):
        self._children[name] = node

class MemoryStore(Store):
    def __init__(self):
        self.root = _Node()

    def write(self, name, node):
        self.root.set_child(name, node)
""",
        lines=[13],
    ),
    # a model loaded in place that nothing unloads
    Example(
        """
from exlib import Model

class Wrapper:
    def __init__(self, model_dir):
        self.model = Model.from_directory(model_dir)
        self.model.load(progressbar=True)

    def __call__(self, ids):
        return self.model.forward(ids)
""",
        lines=[4],
    ),
    # a viewer only render() closes, kept by close()
    Example(
        """
import native

class Env:
    def __init__(self, rom):
        self.viewer = None
        self.emulator = native.Emulator(rom)

    def render(self, close=False):
        if close and self.viewer is not None:
            self.viewer.close()
        elif self.viewer is None:
            self.viewer = native.Window()

    def close(self):
        del self.emulator
""",
        lines=[15],
    ),
    # a part only __del__ frees, kept by close()
    Example(
        """
import contextlib
import native

class Llama:
    def __init__(self, path, lora_path):
        self._stack = contextlib.ExitStack()
        self._model = self._stack.enter_context(native.open_model(path))
        self._lora = native.lora_adapter_init(self._model, lora_path)

    def close(self):
        self._stack.close()

    def __del__(self):
        native.lora_adapter_free(self._lora)
        self.close()
""",
        lines=[11],
    ),
    # cleanup registered on an ExitStack nothing closes
    Example(
        """
from contextlib import ExitStack
import native

class ChatHandler:
    def __init__(self, clip_path):
        self.clip_path = clip_path
        self._exit_stack = ExitStack()

    def load(self, model):
        self.ctx = native.clip_init(self.clip_path, model)
        self._exit_stack.callback(native.clip_free, self.ctx)
""",
        lines=[12],
    ),
    # an exception handed in and kept after close()
    Example(
        """
class Protocol:
    def __init__(self):
        self.transport = None

    def set_exception(self, exc):
        self._exception = exc

    def close(self):
        self.transport = None
""",
        lines=[9],
        fixed="""
class Protocol:
    def __init__(self):
        self.transport = None

    def set_exception(self, exc):
        self._exception = exc

    def close(self):
        self.transport = None
        self._exception = None
""",
    ),
    # a part with no release method, whose owner releases its other parts
    Example(
        """
import torch

class Drafter:
    def __init__(self):
        self.model = torch.nn.Linear(4096, 4096)
        self.kv_caches = torch.empty(64, 4096, 4096)

class Runner:
    def __init__(self):
        self.drafter = Drafter()
        self.graphs = GraphPool()

    def shutdown(self):
        self.graphs.release()
""",
        lines=[4, 14],
        fixed="""
import torch

class Drafter:
    def __init__(self):
        self.model = torch.nn.Linear(4096, 4096)
        self.kv_caches = torch.empty(64, 4096, 4096)

class Runner:
    def __init__(self):
        self.drafter = Drafter()
        self.graphs = GraphPool()

    def shutdown(self):
        self.graphs.release()
        self.drafter = None
""",
    ),
    Example(
        """
import torch
import torch.nn as nn

class Engine:
    def __init__(self):
        self.model = nn.Linear(8, 8)
        self.kv_cache = torch.empty(4096, 4096)

    def close(self):
        self.closed = True
""",
        lines=[10],
        fixed="""
import torch
import torch.nn as nn

class Engine:
    def __init__(self):
        self.model = nn.Linear(8, 8)
        self.kv_cache = torch.empty(4096, 4096)

    def close(self):
        self.closed = True
        self.model = None
        self.kv_cache = None
""",
    ),
    # the attribute's class has a release method of its own: call it
    Example(
        """
import torch.nn as nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def shutdown(self):
        pass

class Worker:
    def init_device(self):
        self.model_runner = Runner()

    def shutdown(self):
        return
""",
        lines=[16],
        fixed="""
import torch.nn as nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def shutdown(self):
        pass

class Worker:
    def init_device(self):
        self.model_runner = Runner()

    def shutdown(self):
        if getattr(self, "model_runner", None) is not None:
            self.model_runner.shutdown()
        return
""",
    ),
]
