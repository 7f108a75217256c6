"""`retainlint verify` run from a directory that holds hostile modules: its subprocesses
must not import them (`python -m` puts the working directory first on sys.path)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the runtime verifier needs torch: pip install -e '.[verify]'")

from retainlint.verify.discovery import DEFAULT_ROOT  # noqa: E402

MLP_BYTES = 4 * (2048 * 2048 + 2048) * 4
# Each planted module leaves a marker file beside itself when it is imported.
MARK = "open(__file__ + '.imported', 'w').close()\n"


def test_verify_children_ignore_modules_in_the_working_directory(tmp_path):
    cwd = tmp_path / "checkout"
    (cwd / "retainlint" / "verify").mkdir(parents=True)
    (cwd / "json.py").write_text(MARK)
    (cwd / "retainlint" / "__init__.py").write_text(MARK)
    (cwd / "retainlint" / "verify" / "__init__.py").write_text(MARK)
    (cwd / "retainlint" / "verify" / "child.py").write_text(MARK)
    # Scenarios given relative to that directory still load (by path).
    shutil.copytree(DEFAULT_ROOT / "RL301", cwd / "scenarios" / "RL301")
    # The console script: `python -m retainlint` would itself import the planted package.
    script = Path(sys.executable).with_name("retainlint")
    if not script.exists():
        pytest.skip("no `retainlint` console script beside this Python")

    proc = subprocess.run([str(script), "verify", "--model", "torch-mlp", "--output-format", "json",
                           "--scenarios", "scenarios"],
                          cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_COLOR": "1"})

    assert sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*.imported")) == []
    [row] = json.loads(proc.stdout)
    assert (row["rule"], row["verdict"], row["before"]["error"]) == ("RL301", "freed", None), row
    assert row["before"]["retained_bytes"] == MLP_BYTES and row["after"]["retained_bytes"] == 0
    assert proc.returncode == 0, proc.stderr
