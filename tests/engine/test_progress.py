"""A progress bar on a terminal for big runs, and never anywhere else."""

import os
import pty
import subprocess
import sys

from conftest import BUGGY

FILES = 320  # over the bar's threshold


def _big_tree(root):
    for i in range(FILES):
        (root / f"m{i:03}.py").write_text(BUGGY if i % 40 == 0 else f"VALUE = {i}\n")


def _run_with_terminal_stderr(cwd, *args):
    """retainlint with stderr on a pseudo-terminal, as in an interactive shell."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "retainlint", "check", "--no-cache", *args],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=follower,
                            env={**os.environ, "TERM": "xterm"})
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the follower side closed: the process is done
            break
        if not chunk:
            break
        seen += chunk
    out, _ = proc.communicate(timeout=120)
    os.close(leader)
    return proc.returncode, out.decode(), seen.decode("utf-8", "replace")


def test_bar_on_a_terminal_for_a_big_run(tmp_path):
    _big_tree(tmp_path)
    code, out, terminal = _run_with_terminal_stderr(tmp_path, "-j", "1")
    assert code == 1
    assert "Checking" in terminal and "Indexing" in terminal
    assert f"/{FILES}" in terminal or "/8" in terminal  # an M/N count
    assert "Found 8 findings" in out and "Checking" not in out


def test_no_bar_in_machine_formats_or_without_a_terminal(tmp_path):
    _big_tree(tmp_path)
    code, out, terminal = _run_with_terminal_stderr(tmp_path, "--output-format", "json")
    assert code == 1 and terminal == ""
    piped = subprocess.run([sys.executable, "-m", "retainlint", "check", "--no-cache"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 1 and piped.stderr == ""


def test_the_bar_names_each_phase_as_it_starts(tmp_path):
    # Between indexing and checking, the run reads installed packages and plans which
    # files to parse; the bar says so instead of standing at `Indexing N/N`.
    _big_tree(tmp_path)
    code, out, terminal = _run_with_terminal_stderr(tmp_path, "-j", "1")
    assert code == 1
    phases = ["Indexing", "Reading installed packages", "Planning", "Checking"]
    seen = [terminal.find(phase) for phase in phases]
    assert all(at >= 0 for at in seen) and seen == sorted(seen), (seen, terminal[-3000:])
