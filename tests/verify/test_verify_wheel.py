"""`retainlint verify` from a built wheel installed in a fresh venv, away from this checkout:
the scenarios ship inside the package (a source checkout is not needed)."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the runtime verifier needs torch: pip install -e '.[verify]'")

ROOT = Path(__file__).resolve().parents[2]
MLP_BYTES = 4 * (2048 * 2048 + 2048) * 4


def test_verify_runs_from_an_installed_wheel(tmp_path):
    source = tmp_path / "src"  # build from a copy: setuptools leaves build/ behind
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache"))
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "-w", str(dist), f"{source}{os.sep}"], check=True, capture_output=True, timeout=300)
    [wheel] = dist.glob("retainlint-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "retainlint/verify/scenarios/RL201/llm_engine_finalizer.py" in names
    assert "retainlint/verify/scenarios/RL202/executor_finalizer.fixed.py" in names

    # A fresh venv with pip (for the console script); the wheel itself installed by pip, its
    # dependencies (torch included) taken from this environment through a .pth, which adds
    # the folder but runs none of its .pth files: this checkout's editable install stays out.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, timeout=300)
    site = subprocess.run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NO_COLOR"] = "1"
    proc = subprocess.run([venv / "bin" / "retainlint", "verify", "--rule", "RL201", "--output-format", "json"],
                          cwd=work, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [row] = json.loads(proc.stdout)
    assert (row["rule"], row["scenario"], row["fix"], row["verdict"]) == (
        "RL201", "llm_engine_finalizer", "autofix", "freed")
    assert row["before"]["retained_bytes"] == MLP_BYTES and row["after"]["retained_bytes"] == 0
    assert row["holder_rule"] == "RL201"
    # The code that ran is the wheel's, not this checkout's.
    where = subprocess.run([venv / "bin" / "python", "-c", "import retainlint.verify.discovery as d; print(d.DEFAULT_ROOT)"],
                           cwd=work, capture_output=True, text=True, env=env)
    assert where.stdout.strip() == str(Path(site, "retainlint", "verify", "scenarios")), where.stdout + where.stderr
