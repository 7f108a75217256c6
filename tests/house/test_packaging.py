"""The built wheel carries the rules inside the retainlint namespace and works from a
fresh venv, away from this checkout."""

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from conftest import BUGGY

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_installs_rules_and_runs_from_a_fresh_venv(tmp_path):
    dist = tmp_path / "dist"
    source = tmp_path / "src"  # build from a copy: setuptools leaves build/ behind
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--quiet", "-w", str(dist), str(source)],
        check=True, capture_output=True, timeout=300,
    )
    [wheel] = dist.glob("retainlint-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "retainlint/rules/rl501_discarded_hook_handle.py" in names
    assert "retainlint/rules/prefilters/rl501.py" in names
    assert not any(n.startswith("rules/") for n in names), "rules must not be a top-level package"

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # The wheel's own files, unpacked as pip would; the dependencies come from this
    # environment's site-packages through a .pth (no network needed).
    zipfile.ZipFile(wheel).extractall(site)
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    work = tmp_path / "work"
    work.mkdir()
    (work / "a.py").write_text(BUGGY)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NO_COLOR"] = "1"
    where = subprocess.run([py, "-c", "import retainlint.rules as r; print(r.__file__)"],
                           cwd=work, capture_output=True, text=True, env=env)
    assert where.stdout.strip().startswith(site), where.stdout + where.stderr
    r = subprocess.run([py, "-m", "retainlint", "check", ".", "--output-format", "concise"],
                       cwd=work, capture_output=True, text=True, env=env)
    assert r.returncode == 1, r.stderr
    assert "a.py:7:9: RL501" in r.stdout
    # every rule, a rule that is a folder of modules too, is in the wheel and loads there
    loaded = subprocess.run(
        [py, "-c", "from retainlint.engine.registry import all_rules; "
                   "print(' '.join(r.code for r in all_rules()))"],
        cwd=work, capture_output=True, text=True, env=env)
    from retainlint.engine.registry import all_rules
    assert loaded.stdout.split() == [r.code for r in all_rules()], loaded.stderr
