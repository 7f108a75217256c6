"""The shared definitions of the levels (retainlint/analysis/severity.py): what a rule knows
about a finding's cost decides its severity, the same way for every rule."""

import json

import pytest

from conftest import check_here
from retainlint.analysis.severity import Facts, level
from retainlint.core.finding import Severity


@pytest.mark.parametrize("facts, expected", [
    # heavy or growing, and meant to go away: the defeated release of a model, a cache per request
    (Facts(heavy=True, meant_to_go=True), Severity.ERROR),
    (Facts(heavy=False, grows=True, meant_to_go=True), Severity.ERROR),
    # a cost, but nothing shows the object was meant to go (or the reverse): bounded or unproven
    (Facts(heavy=True), Severity.WARNING),
    (Facts(grows=True), Severity.WARNING),
    (Facts(meant_to_go=True), Severity.WARNING),
    (Facts(), Severity.WARNING),
    # negligible: light and bounded, kept no longer than it lives anyway, or collected in time
    (Facts(heavy=False, grows=False, meant_to_go=True), Severity.INFO),
    (Facts(heavy=True, grows=True, meant_to_go=False), Severity.INFO),
    (Facts(heavy=True, collected=True), Severity.INFO),
    (Facts(heavy=False, meant_to_go=True, collected=True), Severity.INFO),
    # a cycle through a model its owner drops to free it: it waits for a collection, which
    # the bytes it pins do not trigger
    (Facts(heavy=True, meant_to_go=True, collected=True), Severity.WARNING),
])
def test_level_follows_the_consequence(facts, expected):
    assert level(facts) is expected


def _levels(root, code: str) -> list[tuple[int, str]]:
    """(line, severity) of each `code` finding on `m.py`, at every level, through the CLI."""
    done = check_here("check", "m.py", "--no-cache", "--select", code, "--min-severity", "info",
                   "--output-format", "json", "--exit-zero", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    return [(f["location"]["row"], f["severity"]) for f in json.loads(done.stdout)]


def test_a_method_cache_is_light_only_when_the_instance_keeps_nothing_it_was_handed(tree):
    """A bounded `lru_cache` on a method of a class without weights is info only when the
    instances hold nothing from their callers: zeno's backend kept its DataFrame, darker's
    frozen dataclass its fields - both fixes merged upstream."""
    root = tree({"m.py": (
        "from dataclasses import dataclass\n"
        "from functools import lru_cache\n\n\n"
        "class Backend:\n"
        "    def __init__(self, df):\n"
        "        self.df = df\n\n"
        "    @lru_cache(maxsize=8)\n"
        "    def projection(self, model):\n"
        "        return self.df[model]\n\n\n"
        "@dataclass(frozen=True)\n"
        "class Differ:\n"
        "    root: str\n\n"
        "    @lru_cache(maxsize=1)\n"
        "    def compare(self, path):\n"
        "        return self.root + path\n\n\n"
        "class Platform:\n"
        "    @lru_cache(maxsize=1)\n"
        "    def is_cuda(self):\n"
        "        return False\n\n\n"
        "class Rotary:\n"
        "    def __init__(self, dim: int, axes: list[int], theta=10000.0):\n"
        "        self.dim = dim\n"
        "        self.axes = axes\n"
        "        self.theta = theta\n\n"
        "    @lru_cache(maxsize=16)\n"
        "    def table(self, n):\n"
        "        return [self.theta] * n\n")})
    assert _levels(root, "RL102") == [(9, "warning"), (18, "warning"), (24, "info"), (35, "info")]


def test_an_exception_added_to_a_buffer_per_failure_is_shown(tree):
    """celery's dispatcher appended `(event, routing_key, exc)` to its offline buffer on
    every failed publish (fixed upstream): one more exception, with its frames, per failure -
    a warning. One exception kept on an attribute, replaced by the next, stays info."""
    root = tree({"m.py": (
        "from collections import deque\n\n\n"
        "class Dispatcher:\n"
        "    def __init__(self, producer):\n"
        "        self.producer = producer\n"
        "        self._buffer = deque()\n"
        "        self.last_error = None\n\n"
        "    def publish(self, event):\n"
        "        try:\n"
        "            self.producer.publish(event)\n"
        "        except Exception as exc:\n"
        "            self._buffer.append((event, exc))\n\n"
        "    def ping(self):\n"
        "        try:\n"
        "            self.producer.ping()\n"
        "        except Exception as exc:\n"
        "            self.last_error = exc\n")})
    assert _levels(root, "RL702") == [(14, "warning"), (20, "info")]


def test_a_weightless_torch_module_behind_a_bounded_cache_is_light(tree):
    """sglang's rotary embeddings: `nn.Module`s whose `__init__` keeps sizes and no weights,
    behind `lru_cache(maxsize=16)`. What a module weighs is its parameters and buffers; a
    plain class keeping the same arguments stays a warning (it may be handed anything)."""
    root = tree({"m.py": (
        "from functools import lru_cache\n\n"
        "import torch\n\n\n"
        "class Rotary(torch.nn.Module):\n"
        "    def __init__(self, dims, theta):\n"
        "        super().__init__()\n"
        "        self.dims = dims\n"
        "        self.theta = theta\n\n"
        "    @lru_cache(maxsize=16)\n"
        "    def table(self, n):\n"
        "        return torch.arange(n) * self.theta\n\n\n"
        "class Frame:\n"
        "    def __init__(self, dims, theta):\n"
        "        self.dims = dims\n"
        "        self.theta = theta\n\n"
        "    @lru_cache(maxsize=16)\n"
        "    def table(self, n):\n"
        "        return [self.theta] * n\n")})
    assert _levels(root, "RL102") == [(12, "info"), (22, "warning")]


def test_a_one_entry_cache_on_a_part_of_a_model_keeps_one_part(tree):
    """DETR's learned position embedding and SAM 3's decoder: `maxsize=1` caches on modules
    another module builds in its `__init__` and keeps. The cache holds that one part of the
    last model that ran, until any model of that class runs again: info. The same cache on
    a model nothing in the project builds as a part (a pipeline's DiT, loaded and released
    whole) keeps the whole last model: a warning."""
    root = tree({"m.py": (
        "from functools import lru_cache\n\n"
        "import torch\n\n\n"
        "class PositionEmbedding(torch.nn.Module):\n"
        "    def __init__(self, dim):\n"
        "        super().__init__()\n"
        "        self.rows = torch.nn.Embedding(50, dim)\n\n"
        "    @lru_cache(maxsize=1)\n"
        "    def forward(self, shape):\n"
        "        return self.rows.weight[: shape[0]]\n\n\n"
        "class Detector(torch.nn.Module):\n"
        "    def __init__(self, dim):\n"
        "        super().__init__()\n"
        "        self.position_embedding = PositionEmbedding(dim)\n\n\n"
        "class Transformer(torch.nn.Module):\n"
        "    def __init__(self, dim):\n"
        "        super().__init__()\n"
        "        self.proj = torch.nn.Linear(dim, dim)\n\n"
        "    @lru_cache(maxsize=1)\n"
        "    def rope(self, n):\n"
        "        return torch.arange(n) * self.proj.weight.shape[0]\n")})
    assert _levels(root, "RL102") == [(11, "info"), (27, "warning")]


def test_patching_a_caller_model_is_shown_a_graph_module_or_an_optimizer_is_info(tree):
    """torchao's pt2e export utilities patch `train`/`eval` on a `torch.fx.GraphModule`,
    which references itself through its graph anyway; the same patch on a caller's
    `nn.Module` (fairscale #412) is a warning."""
    root = tree({"m.py": (
        "import types\n\n"
        "import torch\n"
        "from torch.fx import GraphModule\n\n\n"
        "def allow_train_eval(model: GraphModule):\n"
        "    def _train(self, mode=True):\n"
        "        return self\n\n"
        "    model.train = types.MethodType(_train, model)\n"
        "    return model\n\n\n"
        "def patch(model: torch.nn.Module):\n"
        "    def _train(self, mode=True):\n"
        "        return self\n\n"
        "    model.train = types.MethodType(_train, model)\n"
        "    return model\n\n\n"
        "class ShardedOptimizer:\n"
        "    def __init__(self, size):\n"
        "        self.state = torch.zeros(size)\n\n\n"
        "def overlap(optimizer: \"ShardedOptimizer\"):\n"
        "    optimizer.step = lambda closure=None: optimizer.state.add_(1)\n")})
    # an optimizer handed in (DeepSpeed's ZenFlow patches ZeRO-3's): built once per run
    assert _levels(root, "RL701") == [(11, "info"), (19, "warning"), (29, "info")]


def test_deleting_a_tensor_parameter_is_a_warning_a_model_parameter_an_error(tree):
    """torchtune's PPO step `del advantages` (one [b, T] tensor the caller keeps until the
    next step): what one tensor weighs is unknown. A model handed in and `del`eted to free it
    is heavy whatever its size."""
    root = tree({"m.py": (
        "import gc\n\n"
        "import torch\n\n\n"
        "def cleanup_after_step(advantages: torch.Tensor):\n"
        "    total = advantages.sum()\n"
        "    del advantages\n"
        "    gc.collect()\n"
        "    return total\n\n\n"
        "def unload(advantages: torch.Tensor, model: torch.nn.Module):\n"
        "    total = advantages.sum() + sum(p.sum() for p in model.parameters())\n"
        "    del advantages\n"
        "    del model\n"
        "    gc.collect()\n"
        "    return total\n")})
    # one finding per function, at its first `del`: an error when any deleted name is heavy
    assert _levels(root, "RL604") == [(8, "warning"), (15, "error")]


def test_a_bounded_cache_keyed_by_tensors_is_a_warning(tree):
    """transformers' EfficientLoFTR: `compute_embeddings(self.inv_freq, h, w)` behind
    `lru_cache(maxsize=32)` keeps at most 32 small tensors - a tensor does not reference its
    module. Unbounded, or keyed by a model, it stays an error."""
    root = tree({"m.py": (
        "import functools\n\n"
        "import torch\n\n\n"
        "@functools.lru_cache(maxsize=32)\n"
        "def embeddings(inv_freq: torch.Tensor, h: int) -> torch.Tensor:\n"
        "    return inv_freq.repeat(h)\n\n\n"
        "@functools.lru_cache(maxsize=None)\n"
        "def grid(inv_freq: torch.Tensor, h: int) -> torch.Tensor:\n"
        "    return inv_freq.repeat(h)\n\n\n"
        "@functools.lru_cache(maxsize=32)\n"
        "def device_of(model: torch.nn.Module):\n"
        "    return next(model.parameters()).device\n\n\n"
        "class Rope(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.inv_freq = torch.ones(4)\n\n"
        "    def forward(self, x):\n"
        "        return embeddings(self.inv_freq, x.shape[0]) + grid(self.inv_freq, 2)\n")})
    assert _levels(root, "RL101") == [(7, "warning"), (12, "error"), (17, "error"),
                                      (27, "warning"), (27, "error")]


def test_an_exit_handler_level_follows_how_many_instances_are_made(tree):
    """`atexit.register(self.close)` keeps one instance per instance made: an error when a
    model is made per request, a warning when how many are made is unknown (a connector built
    by a factory, vLLM's hf3fs); the one the project makes at start-up is not reported. A
    module list of listeners keeping every instance grows whoever makes them."""
    root = tree({"m.py": (
        "import atexit\n\n"
        "import torch\n\n"
        "_LISTENERS = []\n\n\n"
        "class PerRequest(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        atexit.register(self.close)\n\n"
        "    def close(self):\n"
        "        pass\n\n\n"
        "class Service(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        atexit.register(self.close)\n\n"
        "    def close(self):\n"
        "        pass\n\n\n"
        "class Connector(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        atexit.register(self.close)\n\n"
        "    def close(self):\n"
        "        pass\n\n\n"
        "class Tracked(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        _LISTENERS.append(self.on_event)\n\n"
        "    def on_event(self, event):\n"
        "        pass\n\n\n"
        "SERVICE = Service()\n\n\n"
        "def events(e):\n"
        "    for listener in _LISTENERS:\n"
        "        listener(e)\n\n\n"
        "def handle(requests):\n"
        "    for r in requests:\n"
        "        PerRequest()(r)\n\n\n"
        "def build(kind):\n"
        "    return {'c': Connector}[kind]()\n")})
    assert _levels(root, "RL203") == [(11, "error"), (29, "warning"), (38, "error")]


def test_a_finalizer_that_keeps_its_owner_is_an_error_only_for_heavy_instances_made_per_request(tree):
    """`weakref.finalize(self, self.close)` keeps each instance until exit. vLLM's executors
    (built by a factory, once per engine, released by the engine's own shutdown) are a
    warning; a model made per request an error; the one service made at start-up info."""
    root = tree({"m.py": (
        "import weakref\n\n"
        "import torch\n\n\n"
        "class PerRequest(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        weakref.finalize(self, self.close)\n\n"
        "    def close(self):\n"
        "        pass\n\n\n"
        "class Service(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        weakref.finalize(self, self.close)\n\n"
        "    def close(self):\n"
        "        pass\n\n\n"
        "class Executor:\n"
        "    def __init__(self):\n"
        "        self._finalizer = weakref.finalize(self, self.shutdown)\n\n"
        "    def shutdown(self):\n"
        "        pass\n\n\n"
        "SERVICE = Service()\n\n\n"
        "def handle(requests):\n"
        "    for r in requests:\n"
        "        PerRequest()(r)\n\n\n"
        "def build(kind):\n"
        "    return {'e': Executor}[kind]()\n")})
    assert _levels(root, "RL202") == [(9, "error"), (18, "info"), (26, "warning")]


def test_a_dict_of_models_keyed_by_the_deployment_is_a_warning(tree):
    """vLLM's `_workspace_cache[(rank, world_size, comm_size, pg_id)]`: one value per rank
    and slot size, for the process, is bounded. Keyed by a request, every request leaves a
    model behind."""
    root = tree({"m.py": (
        "import torch\n\n"
        "_workspaces = {}\n"
        "_per_request = {}\n\n\n"
        "def workspace(rank: int, world_size: int, group) -> torch.nn.Module:\n"
        "    key = (rank, world_size, id(group))\n"
        "    if key not in _workspaces:\n"
        "        _workspaces[key] = torch.nn.Linear(world_size, world_size)\n"
        "    return _workspaces[key]\n\n\n"
        "def serve(request_id: str, model: torch.nn.Module):\n"
        "    _per_request[request_id] = model\n")})
    assert _levels(root, "RL302") == [(3, "warning"), (4, "error")]


def test_a_signal_handler_keeps_only_the_latest_light_instance(tree):
    """`signal.signal(SIGTERM, lambda *a: self.close())` replaces the previous handler: the
    table keeps the latest instance, not every one (sglang's HiCache 3FS backend, a client
    without weights). A handler that keeps the one it replaced chains them all."""
    root = tree({"m.py": (
        "import signal\n\n\n"
        "class Backend:\n"
        "    def __init__(self):\n"
        "        signal.signal(signal.SIGTERM, lambda *a: self.close())\n\n"
        "    def close(self):\n"
        "        pass\n\n\n"
        "class Chained:\n"
        "    def __init__(self):\n"
        "        previous = signal.getsignal(signal.SIGINT)\n"
        "        signal.signal(signal.SIGINT, lambda *a: (self.close(), previous(*a)))\n\n"
        "    def close(self):\n"
        "        pass\n")})
    assert _levels(root, "RL203") == [(6, "info"), (15, "warning")]


def test_a_hook_left_on_a_handed_model_is_info_when_it_keeps_a_light_instance_that_stays_the_same(tree):
    """A profiling helper's bound-method hook on the caller's model keeps the helper, a
    few names, as long as the model: negligible (vLLM's and sglang's NVTX hooks). A hook
    that adds to the instance on every forward keeps more each step (timm's activation
    statistics); a helper holding tensors of its own keeps them (an offloading optimizer)."""
    root = tree({"m.py": (
        "import torch\n\n\n"
        "class Ranges:\n"
        "    def __init__(self, model):\n"
        "        self.names = {}\n"
        "        for name, module in model.named_modules():\n"
        "            self.names[module] = name\n"
        "            module.register_forward_pre_hook(self.push)\n\n"
        "    def push(self, module, args):\n"
        "        torch.cuda.nvtx.range_push(self.names[module])\n\n\n"
        "class Stats:\n"
        "    def __init__(self, model):\n"
        "        self.stats = []\n"
        "        for module in model.modules():\n"
        "            module.register_forward_hook(self._make())\n\n"
        "    def _make(self):\n"
        "        def record(module, args, output):\n"
        "            self.stats.append(output.mean())\n"
        "        return record\n\n\n"
        "class Offload:\n"
        "    def __init__(self, params):\n"
        "        self.host = [torch.empty_like(p, device='cpu') for p in params]\n"
        "        for p in params:\n"
        "            p.register_post_accumulate_grad_hook(self.copy)\n\n"
        "    def copy(self, p):\n"
        "        self.host[0].copy_(p.grad)\n\n\n"
        "class Frames:\n"
        "    def __init__(self, model):\n"
        "        self.frames = []\n"
        "        model.register_forward_hook(self.hook)\n\n"
        "    def hook(self, module, args, output):\n"
        "        self.keep(output)\n\n"
        "    def keep(self, output):\n"
        "        self.frames.append(output)\n")})
    assert _levels(root, "RL501") == [(9, "info"), (19, "warning"), (31, "warning"), (40, "warning")]


def test_an_exit_handler_that_is_the_instance_own_release_keeps_a_closed_shell(tree):
    """`atexit.register(self.close)` keeps every instance until exit, but after `close()`
    what it keeps is what `close()` left: plain values and closed handles (lmdeploy's
    event-loop thread, its ZMQ engine front end). When the release leaves something the
    project built - a manager with a tokenizer - the instance is no shell (sglang's Engine)."""
    root = tree({"m.py": (
        "import atexit\n"
        "import socket\n\n\n"
        "class Manager:\n"
        "    def __init__(self):\n"
        "        self.tokenizer = object()\n\n\n"
        "class Client:\n"
        "    def __init__(self, url: str):\n"
        "        self.url = url\n"
        "        self.sock = socket.socket()\n"
        "        atexit.register(self.close)\n\n"
        "    def close(self):\n"
        "        self.sock.close()\n\n\n"
        "class Engine:\n"
        "    def __init__(self):\n"
        "        self.manager = Manager()\n"
        "        self.sock = socket.socket()\n"
        "        atexit.register(self.shutdown)\n\n"
        "    def shutdown(self):\n"
        "        self.sock.close()\n")})
    assert _levels(root, "RL203") == [(14, "info"), (24, "warning")]


def test_a_callback_kept_by_an_object_of_an_unseen_library_is_not_taken_as_collected(tree):
    """tornado's curl client (07983e35): bound methods handed to a `pycurl.CurlMulti`, which
    the release method closes but keeps. Whether the collector can traverse an object of
    a library the project does not show (a C type, here) is unknown: shown. The same cycle
    through a standard-library executor or the project's own class is a plain Python cycle
    the collector frees: info."""
    root = tree({"m.py": (
        "from concurrent.futures import ThreadPoolExecutor\n\n"
        "import pycurl\n\n\n"
        "class Role:\n"
        "    def __init__(self, send):\n"
        "        self.send = send\n\n\n"
        "class Client:\n"
        "    def initialize(self):\n"
        "        self._multi = pycurl.CurlMulti()\n"
        "        self._multi.setopt(pycurl.M_TIMERFUNCTION, self._set_timeout)\n"
        "        self._pool = ThreadPoolExecutor(initializer=self._bind)\n"
        "        self._role = Role(send=self._send)\n\n"
        "    def close(self):\n"
        "        self._multi.close()\n"
        "        self._pool.shutdown()\n"
        "        self._role.send(None)\n\n"
        "    def _set_timeout(self, msecs):\n"
        "        pass\n\n"
        "    def _bind(self):\n"
        "        pass\n\n"
        "    def _send(self, data):\n"
        "        pass\n")})
    assert _levels(root, "RL701") == [(14, "warning"), (15, "info"), (16, "info")]


def test_a_method_cache_counts_what_a_base_class_of_the_file_keeps(tree):
    """crossfit's `ArrayBundle` (0.0.4) inherits `__init__` from `FrameBackend`, which keeps
    the columns it is handed: a bounded `lru_cache` on `ArrayBundle.__len__` keeps the last
    128 bundles with their arrays, not light. A subclass of a base that keeps nothing it
    was handed stays info."""
    root = tree({"m.py": (
        "from functools import lru_cache\n\n\n"
        "class FrameBackend:\n"
        "    def __init__(self, data):\n"
        "        self.__data = data\n\n\n"
        "class ArrayBundle(FrameBackend):\n"
        "    @lru_cache\n"
        "    def __len__(self):\n"
        "        return 0\n\n\n"
        "class Base:\n"
        "    def __init__(self, n: int):\n"
        "        self.n = n\n\n\n"
        "class Counter(Base):\n"
        "    @lru_cache(maxsize=8)\n"
        "    def double(self):\n"
        "        return self.n * 2\n")})
    assert _levels(root, "RL102") == [(10, "warning"), (21, "info")]


def test_a_light_instance_made_per_call_in_a_cycle_through_its_own_helper_is_collected(tree):
    """vLLM's P2P session (0.33.0): a session per peer keeps `ClientRole(send=self._send)`,
    which `close()` uses but keeps. The session holds nothing heavy and nothing turns the
    collector off: the cycle is plain Python objects whose own allocations trigger the
    collection that frees them, however many sessions come and go - info. The same session
    in a project that calls `gc.disable()` is never freed in time: a warning."""
    session = (
        "class Role:\n"
        "    def __init__(self, send):\n"
        "        self.send = send\n\n"
        "    def stop(self):\n"
        "        pass\n\n\n"
        "class PeerSession:\n"
        "    def __init__(self, peer):\n"
        "        self.peer = peer\n"
        "        self._role = Role(send=self._send)\n\n"
        "    def _send(self, data):\n"
        "        pass\n\n"
        "    def close(self):\n"
        "        self._role.stop()\n\n\n"
        "def handle_request(peer):\n"
        "    s = PeerSession(peer)\n"
        "    s.close()\n")
    root = tree({"m.py": session})
    assert _levels(root, "RL701") == [(12, "info")]
    root = tree({"m.py": "import gc\n\n\n" + session + "\n\ndef main():\n    gc.disable()\n"})
    assert _levels(root, "RL701") == [(15, "warning")]


def test_a_hook_a_marker_on_the_hooked_object_guards_is_one_per_object(tree):
    """transformers 5.23.0's `Trainer._sync_replicated_trainable_params`: `if not
    getattr(param, "_replicated_grad_hook_registered", False):` registers the hook and sets
    that marker, so running it again adds nothing: the consequence names the marker and no
    growth. The same registration without the guard adds one hook per pass and call."""
    root = tree({"m.py": (
        "import torch\n\n\n"
        "class Trainer:\n"
        "    def __init__(self, model: torch.nn.Module):\n"
        "        self.model = model\n"
        "        self.state = torch.zeros(1024)\n\n"
        "    def sync(self, model: torch.nn.Module):\n"
        "        def average(param):\n"
        "            self.state += 1\n\n"
        "        for param in model.parameters():\n"
        "            if not getattr(param, \"_sync_hook\", False):\n"
        "                param.register_post_accumulate_grad_hook(average)\n"
        "                param._sync_hook = True\n"
        "            param.register_post_accumulate_grad_hook(average)\n")})
    done = check_here("check", "m.py", "--no-cache", "--select", "RL501", "--min-severity", "info",
                      "--output-format", "json", "--exit-zero", cwd=root)
    found = [(f["location"]["row"], f["consequence"]["growth"], "marker `param._sync_hook`" in f["message"])
             for f in json.loads(done.stdout)]
    assert found == [(15, "", True), (17, "one hook per pass of the loop, per `sync()` call", False)]


def test_a_table_keyed_by_the_id_field_of_each_message_sent_is_an_error(tree):
    """`self._pending[packet["request_id"]] = future`: the key is a field of the message the
    call builds and sends, as `request.request_id` is an attribute of it - one entry per
    request, never the same key twice, and nothing removes one (vyked's registry client). A
    field of the instance's own configuration names one of a few things: growth not proven."""
    root = tree({"m.py": (
        "import asyncio\n"
        "import uuid\n\n\n"
        "class Client:\n"
        "    def __init__(self):\n"
        "        self._pending = {}\n"
        "        self._by_route = {}\n"
        "        self.config = {'route': 'lookup'}\n\n"
        "    def handle_lookup(self, name):\n"
        "        packet = {'request_id': str(uuid.uuid4()), 'name': name}\n"
        "        future = asyncio.Future()\n"
        "        self._pending[packet['request_id']] = future\n"
        "        self._by_route[self.config['route']] = future\n"
        "        return future\n")})
    assert _levels(root, "RL307") == [(14, "error")]


def test_a_constant_added_to_a_class_list_per_instance_is_info(tree):
    """transformers' CodeGen tokenizer appends `"token_type_ids"` to its class's
    `model_input_names` in every `__init__`: one slot per tokenizer made, sharing one
    string - no object piles up. Adding the instance's own value keeps one per instance."""
    root = tree({"m.py": (
        "class Tokenizer:\n"
        "    model_input_names = ['input_ids']\n"
        "    vocabularies = []\n\n"
        "    def __init__(self, vocabulary, with_types=False):\n"
        "        if with_types:\n"
        "            self.model_input_names.append('token_type_ids')\n"
        "        self.vocabularies.append(vocabulary)\n")})
    assert _levels(root, "RL306") == [(7, "info"), (8, "warning")]

