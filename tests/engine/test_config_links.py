"""A configuration file that is a symlink leading out of the checked tree is never read
(it could be any file of the machine: its contents would reach error messages)."""

import sys

import pytest

from conftest import BUGGY, check_here, run_cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symlinks")


@pytest.mark.parametrize("name", ["pyproject.toml", "sub/retainlint.toml", "sub/.retainlint.toml"])
def test_a_configuration_linked_out_of_the_tree_is_a_one_line_error(tmp_path, name):
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "m.py").write_text(BUGGY)
    secret = tmp_path / "secret.toml"
    secret.write_text('[tool.retainlint]\n"TOKEN=hunter2" = 1\nselect = []\n')
    (work / name).symlink_to(secret)
    r = run_cli("check", ".", "--no-cache", cwd=work)
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"retainlint: error: {work / name}: ") and "symlink" in line, line
    assert "hunter2" not in r.stdout + r.stderr


def test_a_configuration_linked_inside_the_tree_is_read(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "rl.toml").write_text('ignore = ["RL501"]\n')
    (tmp_path / "retainlint.toml").symlink_to("configs/rl.toml")
    (tmp_path / "m.py").write_text(BUGGY)
    r = run_cli("check", ".", "--no-cache", cwd=tmp_path)
    assert r.returncode == 0 and "All checks passed!" in r.stdout, r.stdout + r.stderr


def test_a_process_that_checks_another_project_next_reads_its_linked_configuration(tmp_path):
    """One process, two projects one after the other (a language server, an editor's
    workspace of several folders): the second is confined to its own folder, not to
    the folder of the run before it."""
    first = tmp_path / "first"
    first.mkdir()
    (first / "m.py").write_text(BUGGY)
    assert check_here("check", ".", "--no-cache", cwd=first).returncode == 1
    second = tmp_path / "second"
    (second / "configs").mkdir(parents=True)
    (second / "configs" / "rl.toml").write_text('ignore = ["RL501"]\n')
    (second / "retainlint.toml").symlink_to("configs/rl.toml")
    (second / "m.py").write_text(BUGGY)
    r = check_here("check", ".", "--no-cache", cwd=second)
    assert r.returncode == 0 and "All checks passed!" in r.stdout, r.stdout + r.stderr
