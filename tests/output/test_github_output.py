"""--output-format github: one workflow command per finding, escaped like actions/toolkit."""

import os
import subprocess
import sys

from conftest import BUGGY, CLEAN, run_cli
from retainlint.core.finding import Applicability, Finding, Fix, Position, Severity
from retainlint.output.github import gh_escape_data, gh_escape_prop, github_line


def _finding(path="a.py", start=(7, 9), end=(7, 61), severity=Severity.ERROR, message="msg", fix=None):
    return Finding("RL501", "discarded-hook-handle", message, path, Position(*start), Position(*end),
                   severity, fix=fix)


def test_escaping_matches_the_toolkit():
    assert gh_escape_data("100% done\r\nnext::x") == "100%25 done%0D%0Anext::x"
    assert gh_escape_prop("we,ird:name 50%.py") == "we%2Cird%3Aname 50%25.py"
    # % first, so an escape is never escaped twice
    assert gh_escape_prop("%3A") == "%253A"


def test_golden_line_with_awkward_message_and_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = _finding(path="src/we,ird:name 1.py", message="50% of it\nsecond line :: not a separator")
    assert github_line(f, str(tmp_path)) == (
        "::error file=src/we%2Cird%3Aname 1.py,line=7,endLine=7,col=9,endColumn=61,"
        "title=retainlint RL501 discarded-hook-handle::50%25 of it%0Asecond line :: not a separator"
    )


def test_columns_only_on_single_line_ranges_and_levels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    multi = github_line(_finding(start=(3, 5), end=(6, 2), severity=Severity.WARNING), str(tmp_path))
    assert multi.startswith("::warning file=a.py,line=3,endLine=6,title=")
    assert "col=" not in multi and "endColumn=" not in multi
    info = github_line(_finding(severity=Severity.INFO), str(tmp_path))
    assert info.startswith("::notice ")


def test_fix_help_goes_on_a_second_message_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = _finding(fix=Fix(Applicability.SAFE, "Keep the handle"))
    assert github_line(f, str(tmp_path)).endswith("::msg%0A  help (fix): Keep the handle")


def test_cli_paths_relative_to_git_root_from_a_subdirectory(tree):
    root = tree({"pkg/a.py": BUGGY, "pkg/clean.py": CLEAN})
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    r = run_cli("check", "a.py", "--output-format", "github", cwd=root / "pkg")
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "::error file=pkg/a.py,line=7,endLine=7,col=9,endColumn=70,"
        "title=retainlint RL501 discarded-hook-handle::handle returned by `register_bytecode_hook` "
        "is discarded: the global hook registry keeps the hook `self.hook` (and all it references) "
        "alive, and nothing can remove it — keeps the `Wrapper` instance and what it holds, through the "
        "hook `self.hook` for the process%0A  help (unsafe fix): Keep the handle as "
        "`self._bytecode_hook_handle` and remove it in `close()`: `self.hook` no longer runs after `close()`"
    ], r.stdout
    assert "\x1b[" not in run_cli("check", "a.py", "--output-format", "github", "--color", "always",
                                  cwd=root / "pkg").stdout


def test_cli_outside_git_uses_the_cwd_and_clean_prints_nothing(tree):
    root = tree({"a.py": CLEAN})
    r = run_cli("check", "--output-format", "github", cwd=root)
    assert r.returncode == 0 and r.stdout == ""


def test_file_names_and_messages_cannot_drive_the_terminal(tmp_path):
    """A file name that is not UTF-8, one with a terminal escape sequence, and a message
    quoting a string with escape sequences from the checked code: all printed escaped."""
    hook = 'register_bytecode_hook(lambda *a: print("\x1b[2J\x1b]8;;http://evil\x07x"))'
    (tmp_path / os.fsdecode(b"bad\xff.py")).write_text(BUGGY)
    (tmp_path / "esc\x1b[2Jred.py").write_text(BUGGY)
    (tmp_path / "msg.py").write_text(BUGGY.replace("register_bytecode_hook(self.hook)", hook))
    # the raw bytes, as the runner's log or a terminal receives them
    r = subprocess.run([sys.executable, "-m", "retainlint", "check", "--output-format", "github"],
                       cwd=tmp_path, capture_output=True, env={**os.environ, "NO_COLOR": "1"}, timeout=120)
    assert r.returncode == 1, r.stderr
    text = r.stdout.decode("utf-8")  # strict: no raw \xff byte
    assert "\x1b" not in text and "\x07" not in text
    lines = text.splitlines()
    assert [line.split(",", 1)[0] for line in lines] == [
        "::error file=bad\\xff.py", "::error file=esc\\x1b[2Jred.py", "::error file=msg.py"]
    assert 'keeps the hook `lambda *a: print("\\x1b[2J\\x1b]8;;http://evil\\x07x")`' in lines[2]
