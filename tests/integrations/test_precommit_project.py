"""pre-commit names only the files a commit touches; the cross-file rules must still see
the whole project (its index covers every file of the git work tree, excludes honoured),
and report only in the files named."""

import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from test_precommit import git, hook_repo, hook_status, try_repo  # noqa: F401 - the fixture

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "RL101" / "cross_file"


@pytest.fixture
def project(tmp_path):
    """RL101 across files: app/runner.py passes bound methods to a function cached in
    pkg/utils/introspect.py. Committed, as pre-commit sees a repository."""
    work = tmp_path / "project"
    shutil.copytree(FIXTURE, work)
    (work / "vendored").mkdir()
    (work / "vendored" / "runner_copy.py").write_text((work / "app" / "runner.py").read_text())
    (work / "pyproject.toml").write_text('[tool.retainlint]\nexclude = ["vendored"]\n')
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "start")
    return work


def test_one_named_file_is_checked_against_the_whole_project(project):
    r = run_cli("check", "--output-format", "concise", "app/runner.py", cwd=project)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = [line for line in r.stdout.splitlines() if " RL" in line]
    assert [line.split(" ")[0] for line in lines] == ["app/runner.py:9:39:", "app/runner.py:10:43:"]
    # The definition's finding needs the callers: named alone, it is still found.
    r = run_cli("check", "--output-format", "concise", "pkg/utils/introspect.py", cwd=project)
    assert r.returncode == 1 and "pkg/utils/introspect.py:6:5: RL101" in r.stdout, r.stdout


def test_excluded_and_ignored_files_do_not_feed_the_index(project):
    # The only caller is excluded (configuration) or ignored by git: the cached function
    # has no bound-method callers left.
    shutil.rmtree(project / "app")
    (project / "vendored" / "__init__.py").write_text("")
    r = run_cli("check", "pkg/utils/introspect.py", cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    (project / "pyproject.toml").write_text("[tool.retainlint]\n")
    r = run_cli("check", "pkg/utils/introspect.py", cwd=project)
    assert r.returncode == 1, r.stdout + r.stderr
    (project / ".gitignore").write_text("vendored/\n")
    git(project, "rm", "-rq", "--cached", "vendored")
    r = run_cli("check", "pkg/utils/introspect.py", cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr


def test_warm_named_run_agrees_with_a_cold_one(project):
    cold = run_cli("check", "--no-cache", "--output-format", "concise", "app/runner.py", cwd=project)
    run_cli("check", ".", cwd=project)  # a full run leaves its record in the cache
    warm = run_cli("check", "--output-format", "concise", "app/runner.py", cwd=project)
    assert warm.stdout == cold.stdout and warm.returncode == cold.returncode == 1
    # An edit to the other file (the callers) is seen by a named run of the definition.
    runner = project / "app" / "runner.py"
    runner.write_text(runner.read_text().replace("model.forward", "model"))
    r = run_cli("check", "--output-format", "concise", "pkg/utils/introspect.py", cwd=project)
    assert r.returncode == 0, r.stdout


def test_precommit_hook_sees_the_cross_file_bug(hook_repo, project):  # noqa: F811
    r = try_repo(hook_repo, project, "retainlint", "--files", "app/runner.py")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert hook_status(out, "retainlint") == "Failed", out
    assert "app/runner.py:9:39: RL101" in out and "app/runner.py:10:43: RL101" in out, out
    assert "pkg/utils/introspect.py:6" in out  # the note naming the cached function
    assert "introspect.py:6:5: RL101" not in out  # not named: not reported


def test_outside_git_and_without_configuration_the_named_files_are_the_project(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "p")
    r = run_cli("check", "app/runner.py", cwd=tmp_path / "p")
    assert r.returncode == 0 and "All checks passed!" in r.stdout, r.stdout + r.stderr
    # With a configuration file, its directory is the project.
    (tmp_path / "p" / "retainlint.toml").write_text("")
    r = run_cli("check", "app/runner.py", cwd=tmp_path / "p")
    assert r.returncode == 1 and "app/runner.py:9:39: RL101" in r.stdout, r.stdout + r.stderr


def test_no_project_checks_the_named_files_alone(project):
    # Examples checked one by one (the incident fixtures): nothing else feeds the index.
    r = run_cli("check", "--no-project", "app/runner.py", cwd=project)
    assert r.returncode == 0 and "All checks passed!" in r.stdout, r.stdout + r.stderr


def test_precommit_hook_checks_a_committed_notebook(hook_repo, tmp_path):  # noqa: F811
    """pre-commit passes notebooks to the hook (types_or includes jupyter)."""
    work = tmp_path / "nb"
    work.mkdir()
    notebook = Path(__file__).resolve().parents[2] / "fixtures" / "notebooks" / "class_cache.ipynb"
    shutil.copy(notebook, work / "class_cache.ipynb")
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "start")
    r = try_repo(hook_repo, work, "retainlint", "--files", "class_cache.ipynb")
    out = r.stdout + r.stderr
    assert r.returncode == 1 and hook_status(out, "retainlint") == "Failed", out
    assert "class_cache.ipynb:cell 2:2:5: RL301" in out, out
