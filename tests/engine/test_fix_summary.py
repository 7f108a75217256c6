"""The summary line of a real `--fix` run over several files counts what was fixed."""

from pathlib import Path

from conftest import BUGGY_SAFE_FIX, SAFE_FIX_LINE, run_cli

ROOT = Path(__file__).resolve().parents[2]
RL610 = (ROOT / "fixtures" / "RL610" / "holds_buffers.py").read_text()  # one warning, unsafe fix


def _copies(root, text, n=3):
    for i in range(n):
        (root / f"m{i}.py").write_text(text)


def test_fix_over_three_files_says_three_fixed(tmp_path):
    _copies(tmp_path, BUGGY_SAFE_FIX)
    r = run_cli("check", ".", "--no-cache", "--fix", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "Found 3 findings (3 fixed, 0 remaining)."
    assert all(SAFE_FIX_LINE in (tmp_path / f"m{i}.py").read_text() for i in range(3))


def test_fixes_below_the_severity_floor_are_left_alone(tmp_path):
    """--fix changes only what the run shows: with --min-severity error the three warnings
    are neither shown nor fixed, and the run says how many it left out."""
    _copies(tmp_path, RL610)
    r = run_cli("check", ".", "--no-cache", "--fix", "--unsafe-fixes", "--min-severity", "error",
                cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert all((tmp_path / f"m{i}.py").read_text() == RL610 for i in range(3))
    assert r.stdout.strip().splitlines()[-1] == "All checks passed!"
    assert r.stderr.strip().splitlines()[-1] == \
        "note: 3 warning findings not shown (--min-severity warning shows them)"


def test_fix_through_standard_input_counts_its_fix(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.retainlint]\n")
    r = run_cli("check", "--no-cache", "--fix", "--stdin-filename", "m.py", "-", cwd=tmp_path,
                input=BUGGY_SAFE_FIX)
    assert SAFE_FIX_LINE in r.stdout
    assert r.stderr.strip().splitlines()[-1] == "Found 1 finding (1 fixed, 0 remaining).", r.stderr
