"""--changed-since REF: only findings on lines added or changed since merge-base(REF, HEAD)."""

import json
import os
import subprocess
import textwrap

import pytest

from conftest import BUGGY, CLEAN, run_cli
from retainlint.integrations.changed import parse_diff, unquote_path

HOOK = "    torch._dynamo.convert_frame.register_bytecode_hook(self.hook)\n"


def git(root, *args):
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false",
         "-c", "init.defaultBranch=main", *args],
        cwd=root, check=True, capture_output=True, text=True,
    ).stdout


def commit_all(root, message):
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def lines_of(result):
    return sorted((f["filename"], f["location"]["row"]) for f in json.loads(result.stdout))


def test_parse_diff_uses_hunk_counts_not_header_lookalikes():
    # The removed line "-- weird" and the added line "++ bar" look like file headers to a
    # naive parser; the counts in the hunk header say they belong to the hunk.
    diff = textwrap.dedent("""\
        diff --git a/n1.py b/n1.py
        index 1111111..2222222 100644
        --- a/n1.py
        +++ b/n1.py
        @@ -3,2 +3,0 @@ def f():
        --- weird but removed
        --- another
        @@ -10 +8,2 @@
        -old
        +++ bar added
        +new
        diff --git a/n2.py b/n2.py
        --- a/n2.py
        +++ b/n2.py
        @@ -2 +2 @@
        -x
        \\ No newline at end of file
        +y
        \\ No newline at end of file
        diff --git a/new.py b/new.py
        new file mode 100644
        --- /dev/null
        +++ b/new.py
        @@ -0,0 +1,3 @@
        +a
        +b
        +c
        diff --git a/gone.py b/gone.py
        deleted file mode 100644
        --- a/gone.py
        +++ /dev/null
        @@ -1,2 +0,0 @@
        -a
        -b
    """)
    added, removed = parse_diff(diff)
    assert added == {"n1.py": {8, 9}, "n2.py": {2}, "new.py": {1, 2, 3}}
    # where lines went: the line before each removed one, and the lines replacing them
    assert removed == {"n1.py": {3, 7, 8, 9}, "n2.py": {1, 2}}


def test_parse_diff_with_context_lines_and_quoted_names():
    diff = textwrap.dedent("""\
        --- "a/we\\"ird name.py"
        +++ "b/we\\"ird name.py"
        @@ -1,4 +1,5 @@
         a
        -b
        +B
        +C
         d
         e
    """)
    assert parse_diff(diff) == ({'we"ird name.py': {2, 3}}, {'we"ird name.py': {1, 2, 3}})
    assert unquote_path('"b/caf\\303\\251.py"') == "b/café.py"
    assert unquote_path("plain.py") == "plain.py"


def test_only_lines_changed_since_merge_base_are_reported(tree):
    base_src = BUGGY  # RL501 at line 7, already on main
    root = tree({"old.py": base_src, "pkg/keep.py": BUGGY, "clean.py": CLEAN})
    git(root, "init", "-q")
    commit_all(root, "base")
    git(root, "checkout", "-q", "-b", "feature")
    # add one buggy line in old.py (a new hook registration at line 8)
    lines = base_src.splitlines(keepends=True)
    lines.insert(7, HOOK.replace("self.hook", "self.other"))
    (root / "old.py").write_text("".join(lines))
    commit_all(root, "feature work")
    # main moves on independently: the merge base is still "base"
    git(root, "checkout", "-q", "main")
    (root / "main_only.py").write_text(BUGGY)
    commit_all(root, "main moves")
    git(root, "checkout", "-q", "feature")
    # working-tree changes count too: an untracked new file, and an unstaged edit
    (root / "untracked.py").write_text(BUGGY)
    r = run_cli("check", "--changed-since", "main", "--output-format", "json", cwd=root)
    assert r.returncode == 1, r.stderr
    assert lines_of(r) == [("old.py", 8), ("untracked.py", 7)]
    assert "2 findings on lines not changed since main not shown" in r.stderr

    # everything still analysed: without the flag all findings come back
    everything = run_cli("check", "--output-format", "json", cwd=root)
    assert len(json.loads(everything.stdout)) == 4


def test_unstaged_edit_counts_and_deleted_lines_do_not(tree):
    root = tree({"a.py": BUGGY})
    git(root, "init", "-q")
    commit_all(root, "base")
    r = run_cli("check", "--changed-since", "HEAD", "--output-format", "concise", cwd=root)
    assert r.returncode == 0 and "All checks passed!" in r.stdout
    # delete lines 1-2: only deletions; the finding moves to line 5 but that line is
    # unchanged, so it is not reported
    (root / "a.py").write_text(BUGGY.split("\n", 2)[2])
    r = run_cli("check", "--changed-since", "HEAD", "--output-format", "concise", cwd=root)
    assert r.returncode == 0, r.stdout
    # touching the flagged line itself makes it new
    (root / "a.py").write_text(BUGGY.replace("register_bytecode_hook(self.hook)",
                                             "register_bytecode_hook(self.hook2)"))
    r = run_cli("check", "--changed-since", "HEAD", "--output-format", "concise", cwd=root)
    assert r.returncode == 1 and "a.py:7:" in r.stdout


def test_multiline_finding_reported_when_any_of_its_lines_changed(tree):
    src = textwrap.dedent("""\
        import torch


        class Wrapper:
            def __init__(self, model):
                torch._dynamo.convert_frame.register_bytecode_hook(
                    self.hook,
                )
    """)
    root = tree({"a.py": src})
    git(root, "init", "-q")
    commit_all(root, "base")
    (root / "a.py").write_text(src.replace("self.hook,", "self.hook2,"))
    r = run_cli("check", "--changed-since", "HEAD", "--output-format", "json", cwd=root)
    assert lines_of(r) == [("a.py", 6)]


def test_paths_relative_to_the_cwd_inside_a_subdirectory(tree):
    root = tree({"sub/a.py": CLEAN})
    git(root, "init", "-q")
    commit_all(root, "base")
    (root / "sub" / "a.py").write_text(BUGGY)
    r = run_cli("check", ".", "--changed-since", "HEAD", "--output-format", "concise", cwd=root / "sub")
    assert r.returncode == 1 and "a.py:7:" in r.stdout


def test_outside_git_and_unknown_ref_are_one_line_errors_exit_2(tree):
    root = tree({"a.py": BUGGY})
    r = run_cli("check", "--changed-since", "main", cwd=root)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "git repository" in r.stderr, r.stderr
    git(root, "init", "-q")
    commit_all(root, "base")
    r = run_cli("check", "--changed-since", "no-such-branch", cwd=root)
    assert r.returncode == 2
    assert r.stderr.strip() == "retainlint: error: unknown git revision `no-such-branch`"
    r = run_cli("check", "--changed-since=--output=x", cwd=root)  # never passed to git as an option
    assert r.returncode == 2 and "unknown git revision" in r.stderr
    assert not (root / "x").exists()


def test_deleting_a_cleanup_line_reports_what_it_leaves_behind(tree):
    """Findings whose evidence lost a line: deleting `self.kv_cache = None` from `close()`
    makes RL610 report `def close` (untouched), deleting `gc.unfreeze()` from `shutdown()`
    makes RL401 report `gc.freeze()` in `__init__` (untouched). A class the change only
    adds to, or a deletion outside any class, brings back no older finding."""
    src = textwrap.dedent("""\
        import gc

        import torch
        import torch.nn as nn


        class Engine:
            def __init__(self):
                self.model = nn.Linear(8, 8)
                self.kv_cache = torch.empty(4096, 4096)

            def close(self):
                self.model = None
                self.kv_cache = None


        class EngineCore:
            def __init__(self, model):
                self.model = model
                gc.freeze()

            def shutdown(self):
                self.model = None
                gc.unfreeze()
    """)
    root = tree({"engine.py": src, "old.py": BUGGY})
    git(root, "init", "-q")
    commit_all(root, "base")
    (root / "engine.py").write_text(src.replace("        self.kv_cache = None\n", "")
                                    .replace("        gc.unfreeze()\n", ""))
    # old.py (RL501 at line 7): a blank line above the class deleted, a line added in it
    lines = BUGGY.splitlines(keepends=True)
    (root / "old.py").write_text("".join(lines[:1] + lines[2:6] + ["        self.n = 1\n"] + lines[6:]))
    r = run_cli("check", "--changed-since", "HEAD", "--output-format", "json", cwd=root)
    assert lines_of(r) == [("engine.py", 12), ("engine.py", 19)], r.stderr
    assert "1 finding on lines not changed since HEAD not shown" in r.stderr


def pr_adding(tree, base_files, pr_files):
    """A repository whose first commit has `base_files` and a second commit writing
    `pr_files` (bytes or text, written as given): its root, the base commit checked against."""
    root = tree({})
    for name, content in base_files.items():
        (root / name).write_bytes(content.encode() if isinstance(content, str) else content)
    git(root, "init", "-q")
    commit_all(root, "base")
    for name, content in pr_files.items():
        (root / name).write_bytes(content.encode() if isinstance(content, str) else content)
    commit_all(root, "PR")
    return root


WITH_NEW_HOOK = "".join(BUGGY.splitlines(keepends=True)[:7] + [HOOK.replace("    ", "        ", 1)
                                                                   .replace("self.hook", "self.other")]
                        + BUGGY.splitlines(keepends=True)[7:])  # RL501 at 7 (old) and 8 (new)


@pytest.mark.parametrize("attributes", ["*.py -diff\n", "*.py binary\n", "* -text\n*.py diff=hidden\n"])
def test_gitattributes_added_by_the_change_hide_no_changed_line(tree, attributes):
    """A pull request adding `.gitattributes` that makes git call .py files binary (or
    hand them to a diff driver printing nothing) still has its new finding reported."""
    root = pr_adding(tree, {"a.py": BUGGY}, {"a.py": WITH_NEW_HOOK, ".gitattributes": attributes})
    git(root, "config", "diff.hidden.textconv", "true")  # a driver that prints nothing
    git(root, "config", "diff.hidden.command", "true")
    r = run_cli("check", "--changed-since", "HEAD~1", "--output-format", "json", cwd=root)
    assert lines_of(r) == [("a.py", 8)], r.stdout + r.stderr
    assert "1 finding on lines not changed since HEAD~1 not shown" in r.stderr


def test_bare_carriage_returns_make_the_whole_file_changed(tree):
    """A lone \\r ends a line for Python and not for git: line numbers of the two disagree,
    so such a file counts as changed in full (its older finding too), and a file
    beside it is judged by its lines as before."""
    header = "# header\r# one more line for Python, not for git\n"
    root = pr_adding(tree, {"a.py": header + BUGGY, "b.py": BUGGY},
                     {"a.py": header + WITH_NEW_HOOK, "b.py": WITH_NEW_HOOK})
    r = run_cli("check", "--changed-since", "HEAD~1", "--output-format", "json", cwd=root)
    assert lines_of(r) == [("a.py", 9), ("a.py", 10), ("b.py", 8)], r.stdout + r.stderr


def test_a_line_with_a_form_feed_is_one_line(tree):
    """\\f, \\v, \\x1c-\\x1e, \\x85 and \\u2028 in a line are text, for git and for Python:
    the diff is read by its \\n only, so the lines after them keep their numbers."""
    odd = "        # a\x0cb\x0bc\x1cd\x1de\x1ef\u0085g\u2028h\u2029i\n"
    lines = WITH_NEW_HOOK.splitlines(keepends=True)
    root = pr_adding(tree, {"a.py": BUGGY}, {"a.py": "".join(lines[:7] + [odd] + lines[7:])})
    r = run_cli("check", "--changed-since", "HEAD~1", "--output-format", "json", cwd=root)
    assert lines_of(r) == [("a.py", 9)], r.stdout + r.stderr


def test_a_clean_filter_hides_no_changed_file(tree, tmp_path_factory):
    """A file under a clean filter (git-lfs turns it into a pointer) is diffed as the
    filter's output: one that prints the old text makes git see no change at all. Such a
    file counts as changed in full."""
    old = tmp_path_factory.mktemp("old") / "a.py"
    old.write_text(BUGGY)
    root = pr_adding(tree, {"a.py": BUGGY}, {"a.py": WITH_NEW_HOOK, ".gitattributes": "*.py filter=old\n"})
    git(root, "config", "filter.old.clean", f"cat '{old}'")
    os.utime(root / "a.py", (1, 1))  # git reads the file again, through the filter
    r = run_cli("check", "--changed-since", "HEAD~1", "--output-format", "json", cwd=root)
    assert lines_of(r) == [("a.py", 7), ("a.py", 8)], r.stdout + r.stderr
