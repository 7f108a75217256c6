"""Fixed twins run, not only parsed: the code `--fix --unsafe-fixes` writes for a fixture
(`fixtures/<CODE>/<case>.fixed.py`, our own code) is imported in a fresh interpreter and
exercised the way callers use it - the release frees what the finding was about, and the
object still behaves."""

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


def test_rl602_fixed_close_frees_the_model_and_the_cache(tmp_path):
    done = run_twin(tmp_path, "RL602/drops_nothing.fixed.py", """\
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
