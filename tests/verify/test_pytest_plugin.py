"""The pytest plugin (entry point `pytest11`): a real pytest run of a small test project that
uses the `assert_released` fixture (found through the installed entry point: no `-p`, no
conftest) fails with the holder chain on a leaking engine and passes on the fixed one; the
failure points at the user's test line, not at the plugin's own frames."""

import importlib.util
import os
import subprocess
import sys

import pytest

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="the runtime verifier needs torch: pip install -e '.[verify]'")

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


def _run_pytest(tmp_path, test_file, *options):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, test_file],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)


def _pytest(tmp_path, release):
    (tmp_path / "engine.py").write_text(ENGINE.format(cache="_engines_by_model = {}", release=release))
    (tmp_path / "test_engine.py").write_text(TEST)
    return _run_pytest(tmp_path, "test_engine.py")


KEPT = '''\
_kept = []


class Engine:
    pass


def test_shutdown_frees_the_engine(assert_released):
    engine = Engine()
    _kept.append(engine)
    with assert_released(_kept[0]):
        del engine
'''


# How each traceback style shows the failing line, the error right below it: nothing of
# the plugin's own code between them.
USER_LINE = {
    "auto": ">       with assert_released(_kept[0]):\nE       retainlint.verify.api.RetainedError: "
            "not released after the block:\n",
    "short": "test_kept.py:11: in test_shutdown_frees_the_engine\n    with assert_released(_kept[0]):\n"
             "E   retainlint.verify.api.RetainedError: not released after the block:\n",
}


@pytest.mark.parametrize("tb", sorted(USER_LINE))
def test_the_failure_points_at_the_users_line_not_the_plugin(tmp_path, tb):
    (tmp_path / "test_kept.py").write_text(KEPT)
    proc = _run_pytest(tmp_path, "test_kept.py", f"--tb={tb}")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert USER_LINE[tb] in out, out
    assert "held by: module test_kept global _kept -> list(len=1)[0] -> Engine  [RL303]" in out
    # none of the plugin's own frames or source lines
    assert "retainlint/verify" not in out and "retainlint\\verify" not in out, out
    assert "self.check(" not in out and "problems.append" not in out, out


@needs_torch
def test_fails_with_the_chain_on_a_leaking_engine(tmp_path):
    proc = _pytest(tmp_path, release="pass")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed" in proc.stdout
    assert "RetainedError: not released after the block:" in proc.stdout
    assert "Linear (nn.Module) (0.3 MiB of tensors still alive)" in proc.stdout
    assert ("held by: module engine global _engines_by_model -> dict(len=1) key -> Linear (nn.Module)  [RL301]"
            in proc.stdout)


@needs_torch
def test_passes_on_the_fixed_engine(tmp_path):
    proc = _pytest(tmp_path, release="_engines_by_model.pop(self.model, None)")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
