import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

# The cache and its signing key live in the user cache directory: the tests (and every
# retainlint they start) get one of their own, never the user's, removed when they end.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="retainlint-test-cache-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)

BUGGY = textwrap.dedent(
    """\
    import torch


    class Wrapper:
        def __init__(self, model):
            self.model = model
            torch._dynamo.convert_frame.register_bytecode_hook(self.hook)

        def close(self):
            self.model = None
    """
)

# RL501 (above) has an unsafe fix: plain `--fix` leaves it, `--fix --unsafe-fixes` applies
# it. RL301's fix (the dict becomes a `weakref.WeakKeyDictionary`) is safe: plain `--fix`
# applies it, and the language server offers it as a quick fix.
BUGGY_SAFE_FIX = textwrap.dedent(
    """\
    import torch

    _compiled: dict[torch.nn.Module, int] = {}


    def compile_once(model: torch.nn.Module) -> int:
        if model not in _compiled:
            _compiled[model] = len(_compiled)
        return _compiled[model]
    """
)
SAFE_FIX_LINE = "_compiled: weakref.WeakKeyDictionary[torch.nn.Module, int] = weakref.WeakKeyDictionary()"

CLEAN = "import torch\n\nx = torch.zeros(3)\n"

# `pytest -m "not slow"` leaves these out (the edit-test loop): each runs for many seconds
# (pre-commit installs the hook from the package index; the verifier runs models; a run
# is stopped by a signal mid-file; many runs race over one cache; a watcher waits for edits).
SLOW_MODULES = {
    "test_precommit.py", "test_precommit_project.py", "test_verify_runtime.py",
    "test_verify_isolation.py", "test_verify_wheel.py", "test_verify_target.py", "test_fuzz.py",
    "test_corpus_fix.py", "test_packaging.py", "test_benchmark_smoke.py", "test_hostile_benchmark_smoke.py",
    "test_leak_mode.py", "test_leak_mode_options.py", "test_verify.py", "test_cache_security.py",
    "test_watch.py", "test_budgets.py", "test_fixed_twins_runtime.py", "test_signals.py",
    "test_no_lost_work.py", "test_pytest_plugin.py",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


def run_cli(*args, cwd=None, env=None, input=None):
    """retainlint as a user runs it: a real subprocess."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    full_env.pop("FORCE_COLOR", None) if env is None or "FORCE_COLOR" not in env else None
    return subprocess.run(
        [sys.executable, "-m", "retainlint", *args],
        cwd=cwd, env=full_env, capture_output=True, text=True, input=input, timeout=120,
    )


def check_here(*args, cwd=None, env=None, input=None):
    """The same command run in this process, for the rule and model tests: what a rule
    reports does not depend on how the interpreter started, and starting one per case
    is most of a case's time. The answer has `run_cli`'s shape."""
    from click.testing import CliRunner

    from retainlint.cli import main

    runner = CliRunner(env={"NO_COLOR": "1", "FORCE_COLOR": None, **(env or {})})
    with contextlib.chdir(cwd or os.getcwd()):
        result = runner.invoke(main, list(args), input=input, catch_exceptions=False)
    return subprocess.CompletedProcess(["retainlint", *args], result.exit_code,
                                       result.stdout, result.stderr)


def run_rules(root: Path, files: dict[str, str]) -> list:
    """Writes `files` (dedented) under `root` and runs every rule over the `.py` files
    there, in this process and with the project index: the findings, in report order."""
    from retainlint.core.config import Settings
    from retainlint.engine import runner
    from retainlint.engine.registry import all_rules

    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    result = runner.run(sorted(str(p) for p in root.rglob("*.py")), [r.code for r in all_rules()],
                        Settings(root=root), runner.Mode(), jobs=1)
    return result.findings


@pytest.fixture
def tree(tmp_path):
    def make(files: dict) -> Path:
        for name, content in files.items():
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        return tmp_path
    return make
