"""The pytest plugin (entry point `pytest11`): a real pytest run of a small test project that
uses the `assert_released` fixture (found through the installed entry point: no `-p`, no
conftest) fails with the holder chain on a leaking engine and passes on the fixed one."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="the runtime verifier needs torch: pip install -e '.[verify]'")

ENGINE = '''\
import torch.nn as nn

{cache}


class Engine:
    def __init__(self):
        self.model = nn.Linear(256, 256)
        _engines_by_model[self.model] = "engine"

    def shutdown(self):
        {release}
        self.model = None
'''
TEST = '''\
from engine import Engine


def test_shutdown_frees_the_model(assert_released):
    engine = Engine()
    with assert_released(engine.model):
        engine.shutdown()
'''


def _pytest(tmp_path, release):
    (tmp_path / "engine.py").write_text(ENGINE.format(cache="_engines_by_model = {}", release=release))
    (tmp_path / "test_engine.py").write_text(TEST)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_engine.py"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)


def test_fails_with_the_chain_on_a_leaking_engine(tmp_path):
    proc = _pytest(tmp_path, release="pass")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed" in proc.stdout
    assert "RetainedError: not released after the block:" in proc.stdout
    assert "Linear (nn.Module) (0.3 MiB of tensors still alive)" in proc.stdout
    assert ("held by: module engine global _engines_by_model -> dict(len=1) key -> Linear (nn.Module)  [RL301]"
            in proc.stdout)


def test_passes_on_the_fixed_engine(tmp_path):
    proc = _pytest(tmp_path, release="_engines_by_model.pop(self.model, None)")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
