"""git against a tree someone else wrote: a folder of a pull request that git would take
for a bare repository of its own (HEAD, objects/, refs/, a config whose fsmonitor runs a
command) never gets that command run, whichever way retainlint is started, and its files
are still checked as part of the real repository around them."""

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from conftest import BUGGY, run_cli
from test_action import pr_checkout, run_script
from test_lsp import opened, session

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false",
       "-c", "init.defaultBranch=main"]


def git(cwd, *args):
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def fake_repository(marker: Path) -> dict:
    """The files of a folder git discovers as a bare repository whose work tree is the
    folder itself, and whose fsmonitor hook creates `marker`; with a configuration, so
    the folder is a project root, and a file with a finding (line 7)."""
    return {
        "evil/HEAD": "ref: refs/heads/main\n",
        "evil/objects/placeholder": "",
        "evil/refs/placeholder": "",
        "evil/config": ("[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n"
                        f"\tfsmonitor = touch '{marker}'\n"),
        "evil/retainlint.toml": "",
        "evil/x.py": BUGGY,
    }


def write(root: Path, files: dict) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture
def hostile(tmp_path):
    """A repository whose main has one clean file, then a commit adding the fake
    repository folder: (work tree, marker path)."""
    marker = tmp_path / "ran"
    root = tmp_path / "work"
    root.mkdir()
    write(root, {"main.py": "x = 1\n"})
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    write(root, fake_repository(marker))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "PR")
    return root, marker


def test_the_fake_repository_runs_its_command_under_plain_git(hostile):
    """The attack is real: plain git in the folder runs the command (else every test
    below proves nothing)."""
    root, marker = hostile
    subprocess.run(["git", "ls-files"], cwd=root / "evil", capture_output=True)
    assert marker.exists()


def findings(result):
    return sorted((f["filename"], f["location"]["row"], f["code"]) for f in json.loads(result.stdout))


def test_check_of_the_whole_tree(hostile):
    root, marker = hostile
    r = run_cli("check", "--no-cache", "--output-format", "json", ".", cwd=root)
    assert not marker.exists()
    assert r.returncode == 1, r.stderr
    assert findings(r) == [("evil/x.py", 7, "RL501")]


def test_check_of_a_file_in_the_folder(hostile):
    root, marker = hostile
    r = run_cli("check", "--no-cache", "--output-format", "json", "evil/x.py", cwd=root)
    assert not marker.exists()
    assert findings(r) == [("evil/x.py", 7, "RL501")], r.stderr


def test_check_run_inside_the_folder(hostile):
    root, marker = hostile
    r = run_cli("check", "--no-cache", "--output-format", "json", ".", cwd=root / "evil")
    assert not marker.exists()
    assert findings(r) == [("x.py", 7, "RL501")], r.stderr


def test_check_of_standard_input_named_in_the_folder(hostile):
    root, marker = hostile
    r = run_cli("check", "--no-cache", "--output-format", "json", "--stdin-filename", "evil/x.py", "-",
                cwd=root, input=BUGGY)
    assert not marker.exists()
    assert findings(r) == [("evil/x.py", 7, "RL501")], r.stderr


def test_changed_since_from_the_root_and_from_the_folder(hostile):
    root, marker = hostile
    r = run_cli("check", "--no-cache", "--output-format", "json", "--changed-since", "HEAD~1", ".", cwd=root)
    assert not marker.exists()
    assert findings(r) == [("evil/x.py", 7, "RL501")], r.stderr
    r = run_cli("check", "--no-cache", "--output-format", "json", "--changed-since", "HEAD~1", ".",
                cwd=root / "evil")
    assert not marker.exists()
    assert findings(r) == [("x.py", 7, "RL501")], r.stderr


def test_the_action_on_a_pull_request_adding_the_folder(tmp_path):
    marker = tmp_path / "ran"
    run = pr_checkout(tmp_path, {"main.py": "x = 1\n"}, fake_repository(marker))
    r = run_script(run["env"])
    assert not marker.exists()
    assert r.returncode == 1, r.stdout + r.stderr
    assert [line.split(",")[:2] for line in r.stdout.splitlines() if line.startswith("::error")] == [
        ["::error file=evil/x.py", "line=7"]], r.stdout


def test_the_language_server_on_a_file_of_the_folder(hostile):
    root, marker = hostile
    path = root / "evil" / "x.py"

    async def steps(client, published):
        opened(client, path, BUGGY)
        return await asyncio.wait_for(published.get(), 120)

    published = asyncio.run(session(root, steps))
    assert not marker.exists()
    assert [(d.code, d.range.start.line + 1) for d in published.diagnostics] == [("RL501", 7)]
    assert published.diagnostics[0].severity == types.DiagnosticSeverity.Error


@pytest.mark.slow
def test_the_pre_commit_hook_on_a_file_of_the_folder(hostile):
    """`pre-commit run` of the hook as a project's .pre-commit-config.yaml names it (a
    local copy of this checkout, installed by pre-commit into its own environment)."""
    root, marker = hostile
    hook_repo = root.parent / "hook"
    shutil.copytree(Path(__file__).resolve().parents[2], hook_repo, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".venv", "venv"))
    git(hook_repo, "init", "-q")
    git(hook_repo, "add", "-A")
    git(hook_repo, "commit", "-q", "-m", "snapshot")
    rev = git(hook_repo, "rev-parse", "HEAD").strip()
    (root / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hook_repo}\n  rev: {rev}\n  hooks:\n  - id: retainlint\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GIT_"))}
    env.update(NO_COLOR="1", PRE_COMMIT_COLOR="never", PRE_COMMIT_HOME=str(root.parent / "pc-home"))
    r = subprocess.run([sys.executable, "-m", "pre_commit", "run", "retainlint", "--files", "evil/x.py",
                        "main.py", "--color", "never"], cwd=root, env=env, capture_output=True, text=True,
                       timeout=600)
    assert not marker.exists(), r.stdout + r.stderr
    assert r.returncode == 1 and "evil/x.py:7:9: RL501" in r.stdout, r.stdout + r.stderr
