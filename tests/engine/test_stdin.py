"""`retainlint check --stdin-filename PATH -`, as an editor runs it: the buffer comes on
standard input, is checked as PATH within its project, and `--fix` writes the fixed
source to standard output without touching the file."""

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BUGGY, BUGGY_SAFE_FIX, CLEAN, SAFE_FIX_LINE, run_cli

CROSS = Path(__file__).resolve().parents[2] / "fixtures" / "RL101" / "cross_file"


@pytest.fixture
def project(tmp_path):
    work = tmp_path / "p"
    shutil.copytree(CROSS, work)
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    return work


def test_buffer_is_reported_as_the_named_file_with_the_project_around_it(project):
    source = (project / "app" / "runner.py").read_text()
    (project / "app" / "runner.py").write_text(CLEAN)  # the saved file is clean; the buffer is not
    r = run_cli("check", "--output-format", "concise", "--stdin-filename", "app/runner.py", "-",
                cwd=project, input=source)
    assert r.returncode == 1, r.stdout + r.stderr
    assert [line.split(" ")[0] for line in r.stdout.splitlines() if ": RL" in line] == [
        "app/runner.py:9:39:", "app/runner.py:10:43:"]
    # No `-`: --stdin-filename alone reads standard input too.
    r = run_cli("check", "--stdin-filename", "app/runner.py", cwd=project, input=CLEAN)
    assert r.returncode == 0 and "All checks passed!" in r.stdout


def test_fix_writes_the_fixed_source_to_stdout_and_nothing_to_disk(tree):
    root = tree({"mod.py": CLEAN})
    r = run_cli("check", "--fix", "--stdin-filename", "mod.py", "-", cwd=root, input=BUGGY_SAFE_FIX)
    assert r.returncode == 0, r.stderr
    assert SAFE_FIX_LINE in r.stdout.splitlines() and "import weakref" in r.stdout.splitlines()
    compile(r.stdout, "mod.py", "exec")  # the whole output is the source, nothing else
    assert "fixed" in r.stderr  # the report goes to stderr
    assert (root / "mod.py").read_text() == CLEAN
    r = run_cli("check", "--fix", "--stdin-filename", "mod.py", cwd=root, input=CLEAN)
    assert r.returncode == 0 and r.stdout == CLEAN


def test_excluded_name_with_force_exclude_passes_the_source_through(tree):
    root = tree({"retainlint.toml": 'extend-exclude = ["gen"]\n'})
    r = run_cli("check", "--force-exclude", "--fix", "--stdin-filename", "gen/x.py", cwd=root,
                input=BUGGY)
    assert r.returncode == 0 and r.stdout == BUGGY
    r = run_cli("check", "--stdin-filename", "gen/x.py", cwd=root, input=BUGGY)
    assert r.returncode == 1  # named without --force-exclude: checked


def test_stdin_with_other_paths_is_one_line_error(tree):
    root = tree({"a.py": CLEAN})
    r = run_cli("check", "--stdin-filename", "a.py", "a.py", cwd=root, input=CLEAN)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


CACHED_METHOD = """
class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4096, 4096)

    @functools.lru_cache(maxsize=None)
    def mask(self, size):
        return torch.ones(size)
"""


def frames(report):
    """{line number: text} of the code frames in a `full` report."""
    shown = {}
    for line in report.splitlines():
        number, bar, text = line.partition(" | ")
        if bar and number.strip().isdigit():
            shown[int(number)] = text
    return shown


def test_code_frames_show_the_buffer_and_after_fix_the_fixed_source(tree):
    # A fix (RL501) that adds a line above a finding no fix resolves (RL102).
    source = "import functools\n" + BUGGY + CACHED_METHOD
    root = tree({"mod.py": "# the saved file\n" * 60})
    r = run_cli("check", "--stdin-filename", "mod.py", "-", cwd=root, input=source)
    lines = source.splitlines()
    assert frames(r.stdout) and all(lines[n - 1] == text for n, text in frames(r.stdout).items()), \
        r.stdout
    fixed = run_cli("check", "--fix", "--unsafe-fixes", "--stdin-filename", "mod.py", "-",
                    cwd=root, input=source)
    assert fixed.returncode == 1 and "(1 fixed, 1 remaining)" in fixed.stderr, fixed.stderr
    fixed_lines = fixed.stdout.splitlines()
    assert len(fixed_lines) == len(lines) + 1  # the fix moved the finding left one line down
    shown = frames(fixed.stderr)
    assert shown and all(fixed_lines[n - 1] == text for n, text in shown.items()), fixed.stderr
    assert "    @functools.lru_cache(maxsize=None)" in shown.values()
