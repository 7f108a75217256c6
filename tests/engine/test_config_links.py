"""A configuration file that is a symlink leading out of the checked tree is never read
(it could be any file of the machine: its contents would reach error messages)."""

import sys

import pytest

from conftest import BUGGY, run_cli

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
