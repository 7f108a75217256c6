"""Fixed twins run, not only parsed: the code `--fix --unsafe-fixes` writes for a fixture
(`fixtures/<CODE>/<case>.fixed.py`, our own code) is imported in a fresh interpreter and
exercised the way callers use it - the release frees what the finding was about, and the
object still behaves."""

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

pytest.importorskip("torch")


def run_twin(tmp_path: Path, twin: str, script: str) -> subprocess.CompletedProcess:
    shutil.copyfile(FIXTURES / twin, tmp_path / "twin.py")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_rl610_fixed_close_frees_the_model_and_the_cache(tmp_path):
    done = run_twin(tmp_path, "RL610/drops_nothing.fixed.py", """\
        import gc, weakref
        import twin

        class Config:
            hidden = 8

        engine = twin.Engine(Config())
        model, cache = weakref.ref(engine.model), weakref.ref(engine.kv_cache)
        engine.close()
        gc.collect()
        assert model() is None and cache() is None, "close() left them allocated"
        assert engine.name == "engine"  # the rest of the object is untouched
    """)
    assert done.returncode == 0, done.stderr


_FAILED_SEND = """\
    import gc, weakref
    import twin

    class Payload:
        pass

    class Broken:
        def write(self, payload):
            raise OSError("connection reset")

    conn = twin.Connection(Broken())
    payload = Payload()
    alive = weakref.ref(payload)
    conn.send(payload)
    del payload
    conn.close()
    gc.collect()
    print("kept" if alive() is not None else "freed")
"""


def test_rl611_fixed_close_lets_go_of_the_failed_request(tmp_path):
    done = run_twin(tmp_path, "RL611/exception_kept_by_close.fixed.py", _FAILED_SEND)
    assert (done.returncode, done.stdout.strip()) == (0, "freed"), done.stderr
    # the reported code: the kept exception's traceback holds the frame with the payload
    broken = run_twin(tmp_path, "RL611/exception_kept_by_close.py", _FAILED_SEND)
    assert (broken.returncode, broken.stdout.strip()) == (0, "kept"), broken.stderr


def test_rl203_fixed_stop_leaves_nothing_for_exit(tmp_path):
    done = run_twin(tmp_path, "RL203/kv_connector.fixed.py", """\
        import gc, weakref
        import twin

        p = twin.Prefetcher()
        p.start()
        p.stop()
        alive = weakref.ref(p)
        del p
        gc.collect()
        assert alive() is None, "atexit still holds the stopped prefetcher"
    """)
    assert done.returncode == 0, done.stderr


def test_rl502_fixed_shutdown_removes_the_hooks(tmp_path):
    done = run_twin(tmp_path, "RL502/recorder_never_removed.fixed.py", """\
        import gc, weakref
        import torch
        import twin

        model = torch.nn.Linear(4, 4)
        cache = twin.ActivationCache(model, {""})
        model(torch.ones(1, 4))
        assert len(cache.outputs) == 1  # the hook records while the cache lives
        cache.shutdown()
        alive = weakref.ref(cache)
        del cache
        gc.collect()
        assert alive() is None, "the model's hooks still hold the cache"
        assert not model._forward_hooks and not model.weight._backward_hooks
        model(torch.ones(1, 4)).sum().backward()  # the model still runs, unhooked
    """)
    assert done.returncode == 0, done.stderr


# A stand-in for what the model runner's module imports from the serving engine: a loader
# building a real (small) module, a model state built from it. `torch.accelerator` calls
# are no-ops on a CPU-only run.
_RUNNER = """\
    import gc, logging, types, weakref
    import torch
    torch.accelerator.synchronize = lambda *a, **k: None
    torch.accelerator.empty_cache = lambda *a, **k: None
    import twin

    class State:
        def __init__(self, model):
            self.model = model

    class Loader:
        def load_model(self, vllm_config):
            model = torch.nn.Linear(64, 64)
            model.layers = [model]
            model.make_empty_intermediate_tensors = lambda n: None
            return model

    twin.get_model_loader = lambda config: Loader()
    twin.init_model_state = lambda config, model, encoder_cache, device: State(model)
    twin.supports_multimodal = lambda model: False
    twin.bind_capturer = lambda model, capturer: None
    twin.Capturer = object
    twin.logger = logging.getLogger("twin")
    config = types.SimpleNamespace(speculative_config=None, load_config=None, max_num_tokens=8)
    runner = twin.GPUModelRunner(config, "cpu")
    runner.load_model()
    runner.initialize_kv_cache()
    weights = weakref.ref(runner.model.weight)
    runner.shutdown()
    gc.collect()
    assert weights() is None, "shutdown() left the model's weights allocated"
    assert runner.vllm_config is config  # the rest of the runner is untouched
"""


def test_rl601_fixed_shutdown_frees_the_model_weights(tmp_path):
    done = run_twin(tmp_path, "RL601/model_runner_v033.fixed.py", _RUNNER)
    assert done.returncode == 0, done.stderr
    # the same script on the reported code: the ubatch runner keeps the weights
    kept = run_twin(tmp_path, "RL601/model_runner_v033.py", _RUNNER)
    assert "left the model's weights allocated" in kept.stderr, kept.stderr


_FINALIZERS = """\
    import gc, weakref
    import twin

    class Sock:
        closed = False
        def close(self):
            Sock.closed = True

    class Pool:
        stopped = False
        def shutdown(self, wait=True):
            Pool.stopped = True

    client = twin.Client(Sock(), Pool())
    alive = weakref.ref(client)
    del client
    gc.collect()
    assert alive() is None, "the client is kept"
    assert Sock.closed and Pool.stopped, "collecting the client closed nothing"

    class Core:
        def unload(self):
            print("unloaded at exit")

    kept = twin.Device(Core())  # lives until exit: its cleanup runs then
    dropped = twin.Device(Core())
    gone = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert gone() is None, "atexit keeps the device"
"""


def test_rl605_fixed_callbacks_still_run_and_free(tmp_path):
    done = run_twin(tmp_path, "RL605/weakmethod_callbacks.fixed.py", _FINALIZERS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("unloaded at exit") == 1, done.stdout  # the live device only
    # the reported code: the finalizer calls a dead WeakMethod, which closes nothing
    broken = run_twin(tmp_path, "RL605/weakmethod_callbacks.py", _FINALIZERS)
    assert "collecting the client closed nothing" in broken.stderr, broken.stderr


def test_rl302_fixed_cache_shares_layers_and_lets_them_go(tmp_path):
    script = """\
        import gc, weakref
        import twin

        layer = twin.get_rope(64, 4096, 10000.0)
        assert twin.get_rope(64, 4096, 10000.0) is layer  # still shared while in use
        buffer = weakref.ref(layer.cos_sin_cache)
        del layer
        gc.collect()
        assert buffer() is None, "the cache keeps the layer's buffer"
        assert len(twin._ROPE_DICT) == 0
        assert twin.get_rope(64, 4096, 10000.0) is not None  # built again on demand
    """
    done = run_twin(tmp_path, "RL302/rope_cache.fixed.py", script)
    assert done.returncode == 0, done.stderr
    kept = run_twin(tmp_path, "RL302/rope_cache.py", script)
    assert "the cache keeps the layer's buffer" in kept.stderr, kept.stderr


def test_rl201_fixed_finalizer_no_longer_keeps_the_cache(tmp_path):
    script = """\
        import gc, weakref
        import torch
        import twin

        model, cache = torch.nn.Linear(4, 4), torch.zeros(1 << 16)
        holder = twin.Holder(model, cache)
        weights = weakref.ref(cache)
        del cache
        gc.collect()
        assert weights() is None, "the finalizer keeps the cache while its owner lives"
        assert holder.model is model  # the owner is untouched
        alive = weakref.ref(holder)
        del holder
        gc.collect()
        assert alive() is None  # its finalizers ran, on a cache already gone
    """
    done = run_twin(tmp_path, "RL201/aliased_import.fixed.py", script)
    assert done.returncode == 0, done.stderr
    kept = run_twin(tmp_path, "RL201/aliased_import.py", script)
    assert "the finalizer keeps the cache while its owner lives" in kept.stderr, kept.stderr


def test_rl501_fixed_close_removes_the_hook(tmp_path):
    script = """\
        import gc, weakref
        import torch
        import twin

        model = torch.nn.Linear(4, 4)
        probe = twin.ActivationProbe(model)
        model(torch.ones(1, 4))
        assert len(probe.outputs) == 1  # the hook records while the probe is open
        probe.close()
        alive = weakref.ref(probe)
        del probe
        gc.collect()
        assert alive() is None, "the model's hook keeps the closed probe"
        model(torch.ones(1, 4))  # the model still runs, unhooked
        assert not model._forward_hooks
    """
    done = run_twin(tmp_path, "RL501/hook_on_passed_in_model.fixed.py", script)
    assert done.returncode == 0, done.stderr
    kept = run_twin(tmp_path, "RL501/hook_on_passed_in_model.py", script)
    assert "the model's hook keeps the closed probe" in kept.stderr, kept.stderr


def test_rl101_fixed_cache_lets_the_model_go(tmp_path):
    # the fixed twin holds the files the fix changed, laid over the project it fixes
    shutil.copytree(FIXTURES / "RL101" / "cross_file", tmp_path / "project")
    shutil.copytree(FIXTURES / "RL101" / "cross_file.fixed", tmp_path / "project", dirs_exist_ok=True)
    script = """\
        import gc, weakref
        import torch
        from app.runner import ModelRunner

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.zeros(1 << 16))

            def forward(self, x, positions=None):
                return x

        model = Model()
        runner = ModelRunner(model)
        assert runner.uses_positions and not runner.uses_cache  # same answers as before
        weights = weakref.ref(model.weight)
        del model, runner
        gc.collect()
        assert weights() is None, "the cache keeps the model through its bound method"
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=tmp_path / "project",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_rl301_fixed_memo_still_counts_and_lets_models_go(tmp_path):
    done = run_twin(tmp_path, "RL301/instance_memo_fixable.fixed.py", """\
        import gc, weakref
        import torch
        import twin

        profiler = twin.Profiler()
        model = torch.nn.Linear(256, 256)
        assert profiler.count(model) == 256 * 256 + 256
        assert profiler.count(model) == 256 * 256 + 256  # answered from the memo
        weights = weakref.ref(model.weight)
        del model
        gc.collect()
        assert weights() is None, "the profiler's memo keeps every model it counted"
    """)
    assert done.returncode == 0, done.stderr


def test_rl401_fixed_close_unfreezes(tmp_path):
    done = run_twin(tmp_path, "RL401/entry_points.fixed.py", """\
        import gc, sys, types
        sys.modules["ray"] = types.SimpleNamespace(remote=lambda cls: cls)  # only its decorator is used
        import twin

        gc.unfreeze()
        engine = twin.AliasedEngine()
        assert gc.get_freeze_count() > 0  # frozen while the engine runs
        engine.close()
        assert gc.get_freeze_count() == 0, "close() leaves the heap frozen"
    """)
    assert done.returncode == 0, done.stderr


_TRAIN = """\
    import torch
    import twin

    class Output:
        def __init__(self, loss):
            self.loss = loss

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 1)

        def forward(self, x):
            return Output(self.linear(x).pow(2).mean())

    torch.manual_seed(0)
    model = Model()
    trainer = twin.Trainer(model)
    trainer.fit([{"x": torch.randn(2, 4)} for _ in range(3)], torch.optim.SGD(model.parameters(), lr=0.1))
    kept = [h.grad_fn is not None for h in trainer.history] + [trainer.smoothed.grad_fn is not None]
    print(any(kept), [round(h.item(), 6) for h in trainer.history], round(trainer.smoothed.item(), 6))
    net = torch.nn.Linear(4, 3)
    batches = [(torch.randn(2, 4), torch.tensor([0, 2])) for _ in range(2)]
    twin.train_epoch(net, batches, torch.optim.SGD(net.parameters(), lr=0.1), "cpu")
"""


def test_rl906_fixed_training_keeps_the_numbers_not_the_graphs(tmp_path):
    done = run_twin(tmp_path, "RL906/epoch_total.fixed.py", _TRAIN)
    assert done.returncode == 0, done.stderr
    broken = run_twin(tmp_path, "RL906/epoch_total.py", _TRAIN)
    assert broken.returncode == 0, broken.stderr
    fixed_first, broken_first = done.stdout.splitlines()[0], broken.stdout.splitlines()[0]
    assert fixed_first.startswith("False ") and broken_first.startswith("True "), (fixed_first, broken_first)
    assert fixed_first[len("False "):] == broken_first[len("True "):]  # the same losses, no graphs
    assert done.stdout.splitlines()[1:] == broken.stdout.splitlines()[1:]  # the epochs print as before


def test_every_fixable_rule_has_a_twin_that_is_run():
    from retainlint.core.finding import Applicability
    from retainlint.engine.registry import all_rules

    fixable = {r.code for r in all_rules() if r.fix_applicability is not Applicability.NONE}
    run = {name.split("_")[1].upper() for name in globals() if re.match(r"test_rl\d{3}_fixed_", name)}
    assert fixable - run == set(), "fixable rules whose fixed twin is never run"
