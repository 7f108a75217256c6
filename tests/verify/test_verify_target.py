"""`retainlint verify --target pkg.module:factory`: the user's own engine, imported from the
working directory in a fresh subprocess, released, dropped, and checked."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="the runtime verifier needs torch: pip install -e '.[verify]'")

ENGINE = '''\
import torch.nn as nn

{cache}


def count_layers(model: nn.Module) -> int:
    if model not in _layers_by_model:
        _layers_by_model[model] = len(list(model.children()))
    return _layers_by_model[model]


class LLMEngine:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 512))
        self.num_layers = count_layers(self.model)

    def shutdown(self):
        self.model = None


def make_engine():
    return LLMEngine()
'''
LEAKING = "_layers_by_model: dict[nn.Module, int] = {}"
FIXED = "import weakref\n\n_layers_by_model: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()"
MODEL_BYTES = 2 * (512 * 512 + 512) * 4


def _project(tmp_path, cache):
    (tmp_path / "enginepkg").mkdir(exist_ok=True)
    (tmp_path / "enginepkg" / "__init__.py").write_text("")
    (tmp_path / "enginepkg" / "engine.py").write_text(ENGINE.format(cache=cache))
    return tmp_path


def _verify(cwd, *args, **extra_env):
    env = {**os.environ, "NO_COLOR": "1", **extra_env}
    return subprocess.run([sys.executable, "-m", "retainlint", "verify", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=600)


def test_a_leaking_engine_is_reported_with_its_chain_and_rule_then_freed_once_fixed(tmp_path):
    project = _project(tmp_path, LEAKING)
    proc = _verify(project, "--target", "enginepkg.engine:make_engine", "--release", "shutdown",
                   "--output-format", "json")
    assert proc.returncode == 1, proc.stderr
    [row] = json.loads(proc.stdout)
    assert (row["object"], row["verdict"], row["alive"]) == ("LLMEngine", "retained", False)
    assert row["target_bytes"] == row["retained_bytes"] == row["scan_bytes"] == MODEL_BYTES
    assert row["holder"] == ("module enginepkg.engine global _layers_by_model -> dict(len=1) key"
                             " -> Sequential (nn.Module)._modules -> dict(len=2)['0'] -> Linear (nn.Module)"
                             "._parameters -> dict(len=2)['weight'] -> Parameter(512, 512)")
    assert (row["holder_rule"], row["holder_finding"]) == ("RL301", "engine.py:3")

    _project(tmp_path, FIXED)  # the user's fix
    proc = _verify(project, "--target", "enginepkg.engine:make_engine", "--release", "shutdown",
                   "--repeat", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == ("enginepkg.engine:make_engine: freed after shutdown(): LLMEngine on cpu,"
                                   " 2.0 MiB of tensors; 0.0 MiB left (tensor storage) (2/2 runs identical)")


def test_a_bad_target_is_one_line(tmp_path):
    proc = _verify(tmp_path, "--target", "not a target")
    assert proc.returncode == 2
    assert proc.stderr == ("retainlint: error: --target 'not a target': expected PKG.MODULE:FACTORY (a module"
                           " importable from the working directory, and a callable in it)\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = _verify(tmp_path, "--target", "nopkg.engine:make", "--output-format", "json", TMPDIR=str(scratch))
    assert proc.returncode == 1
    [row] = json.loads(proc.stdout)
    assert row["verdict"] == "error" and "No module named 'nopkg'" in row["error"]
    assert list(scratch.iterdir()) == []  # its work folder is removed
