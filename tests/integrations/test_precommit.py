"""The pre-commit hooks, run for real: `pre-commit try-repo` against a copy of this
checkout (pre-commit pip-installs it into a fresh hook environment, from PyPI)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUGGY, BUGGY_SAFE_FIX, CLEAN, SAFE_FIX_LINE

ROOT = Path(__file__).resolve().parents[2]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false",
       "-c", "init.defaultBranch=main"]


def git(cwd, *args):
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """This checkout, working-tree state included, committed into a throwaway repo
    (try-repo needs a repository with a commit and ignores untracked files)."""
    repo = tmp_path_factory.mktemp("hookrepo") / "retainlint"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".venv", "venv"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "snapshot")
    return repo


def try_repo(hook_repo, cwd, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GIT_"))}
    env.update(NO_COLOR="1", PRE_COMMIT_COLOR="never", PRE_COMMIT_HOME=str(cwd.parent / "pc-home"))
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), *args, "--color", "never"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )


def test_manifest_is_valid():
    r = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest",
                        str(ROOT / ".pre-commit-hooks.yaml")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_check_hook_fails_on_buggy_passes_on_clean_and_fix_hook_rewrites(hook_repo, tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    git(work, "init", "-q")
    (work / "buggy.py").write_text(BUGGY)
    (work / "clean.py").write_text(CLEAN)
    (work / "pyproject.toml").write_text('[tool.retainlint]\nexclude = ["vendored"]\n')
    (work / "vendored").mkdir()
    (work / "vendored" / "third_party.py").write_text(BUGGY)
    # Each try-repo builds a fresh hook environment (pip install of the checkout), so
    # both hooks run in one call per case: with no hook id, try-repo runs every hook
    # of the manifest, in order.

    # A clean file, and an excluded one (skipped thanks to --force-exclude): both pass.
    r = try_repo(hook_repo, work, "--files", "clean.py", "vendored/third_party.py")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert hook_status(out, "retainlint") == "Passed", out
    assert hook_status(out, "retainlint (apply safe fixes)") == "Passed", out
    assert (work / "vendored" / "third_party.py").read_text() == BUGGY

    # The buggy files, staged (pre-commit notices rewrites through git): the check hook
    # fails and names the findings; the fix hook rewrites the file whose fix is safe and
    # leaves the one whose fix is unsafe (RL501's) as it was.
    (work / "weak.py").write_text(BUGGY_SAFE_FIX)
    git(work, "add", "buggy.py", "weak.py")
    r = try_repo(hook_repo, work, "--files", "buggy.py", "weak.py")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert hook_status(out, "retainlint") == "Failed", out
    check_part = out.split("- hook id: retainlint-fix")[0]
    assert "- exit code: 1" in check_part and "buggy.py:7:9: RL501" in check_part, out
    assert hook_status(out, "retainlint (apply safe fixes)") == "Failed", out
    assert "files were modified by this hook" in out.split("- hook id: retainlint-fix")[1], out
    assert SAFE_FIX_LINE in (work / "weak.py").read_text()
    assert (work / "buggy.py").read_text() == BUGGY


def hook_status(output, name):
    """The status of hook `name` from pre-commit's `name.....Passed` line."""
    for line in output.splitlines():
        line = line.rstrip()
        if line.startswith(name + ".") and line.endswith(("Passed", "Failed", "Skipped")):
            return line.rsplit(".", 1)[-1]
    return None


def test_cache_files_committed_to_the_checked_repo_never_run(hook_repo, tmp_path):
    """A pull request that force-adds pickles where the cache used to live (beside the
    configuration) gets nothing run by the hook, and its findings are still reported."""
    import pickle

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'pwned'}",))

    work = tmp_path / "project"
    planted = work / ".retainlint_cache"
    planted.mkdir(parents=True)
    git(work, "init", "-q")
    (work / "pyproject.toml").write_text("[tool.retainlint]\n")
    (work / "buggy.py").write_text(BUGGY)
    for name in ("run-0.1.0-3.pickle", "index-0.1.0-3.pickle", "findings-0.1.0-3.pickle",
                 "run-0.1.0-4.bin"):
        (planted / name).write_bytes(pickle.dumps(Payload()))
    git(work, "add", "-f", ".")
    r = try_repo(hook_repo, work, "retainlint", "--files", "buggy.py")
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "buggy.py:7:9: RL501" in out, out
    assert not (tmp_path / "pwned").exists()
