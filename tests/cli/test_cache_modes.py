"""The result cache through the real CLI: results under other settings are kept side by
side (switching back is warm), the output format is no part of the key, and --fix and
--diff parse only the files whose cached findings have a fix to apply. `-v` says how
many files a run summarized and linted afresh."""

from __future__ import annotations

import json
import re
import shutil

from conftest import BUGGY, BUGGY_SAFE_FIX, CLEAN, SAFE_FIX_LINE, run_cli

TALLY = re.compile(r"retainlint: (\d+) files: (\d+) summarized, (\d+) parsed and linted")
# A run more than the racy window (2 s) after the files were written finds their stats
# unchanged and reads none of them: nothing summarized or linted either.
UNCHANGED = re.compile(r"retainlint: (\d+) files: none changed since the last run")


def _project(root):
    """safe.py: RL301 (safe fix); hook.py: RL501 (unsafe fix); the rest clean."""
    root.mkdir()
    (root / "safe.py").write_text(BUGGY_SAFE_FIX)
    (root / "hook.py").write_text(BUGGY)
    for i in range(4):
        (root / f"clean{i}.py").write_text(CLEAN + f"y{i} = x + {i}\n")
    return root


def _check(root, cache, *args):
    done = run_cli("check", "-v", "--cache-dir", str(cache), *args, ".", cwd=root)
    assert done.returncode in (0, 1), done.stderr
    tally = TALLY.search(done.stderr)
    if tally is None:
        unchanged = UNCHANGED.search(done.stderr)
        assert unchanged, done.stderr
        return done, int(unchanged.group(1)), 0, 0
    files, summarized, linted = map(int, tally.groups())
    return done, files, summarized, linted


def test_another_select_then_the_first_again_is_answered_from_the_cache(tmp_path):
    root = _project(tmp_path / "p")
    cache = tmp_path / "cache"
    first, files, _, linted = _check(root, cache, "--output-format", "concise")
    assert files == 6 and linted >= 2
    assert "safe.py:3:1: RL301" in first.stdout and "hook.py:7:9: RL501" in first.stdout
    other = _check(root, cache, "--output-format", "concise", "--select", "RL301")[0]
    assert "RL301" in other.stdout and "RL501" not in other.stdout
    again, files, summarized, linted = _check(root, cache, "--output-format", "concise")
    assert (files, summarized, linted) == (6, 0, 0)
    assert again.stdout == first.stdout
    # ... and the other selection stays warm too
    back, _, summarized, linted = _check(root, cache, "--output-format", "concise",
                                         "--select", "RL301")
    assert (summarized, linted) == (0, 0) and back.stdout == other.stdout


def test_json_then_text_stays_warm(tmp_path):
    root = _project(tmp_path / "p")
    cache = tmp_path / "cache"
    text = _check(root, cache)[0]
    as_json, _, summarized, linted = _check(root, cache, "--output-format", "json")
    assert (summarized, linted) == (0, 0)
    found = {f["code"]: f for f in json.loads(as_json.stdout)}
    # the fixes' line edits come from the cache too
    assert [e["content"] for e in found["RL301"]["fix"]["edits"]
            if SAFE_FIX_LINE in e["content"]]
    again, _, summarized, linted = _check(root, cache)
    assert (summarized, linted) == (0, 0) and again.stdout == text.stdout


def test_diff_on_a_warm_tree_parses_only_the_files_with_a_fix_to_apply(tmp_path):
    root = _project(tmp_path / "p")
    cache = tmp_path / "cache"
    _check(root, cache)
    diff, _, summarized, linted = _check(root, cache, "--diff")
    assert (summarized, linted) == (0, 1)  # safe.py alone: hook.py's fix is unsafe
    assert f"+{SAFE_FIX_LINE}" in diff.stdout and "hook.py" not in diff.stdout
    assert diff.returncode == 1 and "Would fix 1 finding." in diff.stderr
    assert diff.stdout == run_cli("check", "--no-cache", "--diff", ".", cwd=root).stdout
    unsafe, _, summarized, linted = _check(root, cache, "--diff", "--unsafe-fixes")
    assert (summarized, linted) == (0, 2) and "+++ hook.py" in unsafe.stdout
    assert (root / "safe.py").read_text() == BUGGY_SAFE_FIX  # --diff writes nothing


def test_fix_on_a_warm_tree_parses_the_fixed_file_and_reports_what_remains(tmp_path):
    root = _project(tmp_path / "p")
    cache = tmp_path / "cache"
    _check(root, cache)
    fixed, _, summarized, linted = _check(root, cache, "--fix", "--output-format", "concise")
    # safe.py fixed, then checked again as fixed (no other file consulted it)
    assert (summarized, linted) == (1, 2)
    assert SAFE_FIX_LINE in (root / "safe.py").read_text()
    assert "hook.py:7:9: RL501" in fixed.stdout and "safe.py" not in fixed.stdout
    assert "Found 2 findings (1 fixed, 1 remaining)." in fixed.stdout
    warm, _, summarized, linted = _check(root, cache, "--output-format", "concise")
    assert (summarized, linted) == (0, 0)
    assert warm.stdout.splitlines()[:-1] == fixed.stdout.splitlines()[:-1]

    # The same tree fixed without the cache ends the same
    shutil.copyfile(root / "safe.py", tmp_path / "fixed_safe.py")
    (root / "safe.py").write_text(BUGGY_SAFE_FIX)
    cold = run_cli("check", "--no-cache", "--fix", "--output-format", "concise", ".", cwd=root)
    assert cold.stdout == fixed.stdout
    assert (root / "safe.py").read_text() == (tmp_path / "fixed_safe.py").read_text()
