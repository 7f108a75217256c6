"""Files the CLI writes where the user says (-o/--output-file, --write-baseline): never
through a symlink the checked tree holds, and with the mode any new file gets."""

import os
import stat
import subprocess
import sys

import pytest

from conftest import BUGGY, run_cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symlinks and umask")


@pytest.fixture
def checkout(tmp_path):
    """A tree with one finding, and a file outside it that a committed link points at."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "m.py").write_text(BUGGY)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("precious\n")
    return work, outside, victim


@pytest.mark.parametrize("option", ["-o", "--output-file", "--write-baseline"])
def test_a_link_at_the_named_file_is_refused(checkout, option):
    work, _, victim = checkout
    (work / "report.txt").symlink_to(victim)
    r = run_cli("check", ".", "--no-cache", option, "report.txt", cwd=work)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("retainlint: error: report.txt: ") and "symbolic link" in lines[0], r.stderr
    assert victim.read_text() == "precious\n"
    assert os.path.islink(work / "report.txt")


@pytest.mark.parametrize("option", ["-o", "--write-baseline"])
def test_a_linked_folder_leading_out_of_the_tree_is_refused(checkout, option):
    work, outside, _ = checkout
    (work / "reports").symlink_to(outside)
    r = run_cli("check", ".", "--no-cache", option, "reports/r.txt", cwd=work)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("retainlint: error: reports/r.txt: "), r.stderr
    assert sorted(os.listdir(outside)) == ["victim.txt"]


def test_report_and_baseline_written_normally_with_the_umask_mode(checkout, tmp_path):
    work, _, _ = checkout
    (work / "kept.txt").write_text("old\n")
    os.chmod(work / "kept.txt", 0o640)
    # a folder outside the tree, named as it is, is the user's own choice
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "NO_COLOR": "1"}
    for args in (["-o", "kept.txt"], ["-o", str(elsewhere / "r.txt")], ["--write-baseline", "b.json"]):
        r = subprocess.run([sys.executable, "-m", "retainlint", "check", ".", "--no-cache",
                            "--output-format", "concise", *args], cwd=work, env=env,
                           capture_output=True, text=True, timeout=120,
                           preexec_fn=lambda: os.umask(0o022))
        assert r.returncode in (0, 1), r.stdout + r.stderr
    assert "m.py:7:9: RL501" in (work / "kept.txt").read_text()
    assert stat.S_IMODE(os.stat(work / "kept.txt").st_mode) == 0o640  # a replaced file keeps its mode
    assert "m.py:7:9: RL501" in (elsewhere / "r.txt").read_text()
    assert stat.S_IMODE(os.stat(elsewhere / "r.txt").st_mode) == 0o644
    assert '"code": "RL501"' in (work / "b.json").read_text()
    assert stat.S_IMODE(os.stat(work / "b.json").st_mode) == 0o644
    assert not [n for n in os.listdir(work) if n.endswith(".tmp")]
