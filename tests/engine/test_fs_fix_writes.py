"""How `--fix` writes a file: through a symlink to its target (inside the project), never
by breaking a hard link, keeping the owner (and the permission bits: test_cli). What
cannot be done that way is refused with one line, and the file is left as it was."""

import os
import subprocess
import sys

import pytest

from conftest import BUGGY_SAFE_FIX, SAFE_FIX_LINE, run_cli

FIXED_MARK = SAFE_FIX_LINE  # plain --fix applies a safe fix

FIX = ("check", "--no-cache", "--fix", "--output-format", "concise")


def fix(root, *args):
    r = run_cli(*FIX, *args, cwd=root)
    assert "Traceback" not in r.stdout + r.stderr
    return r


def lines_for(r, name):
    return [line for line in r.stdout.splitlines() if line.startswith(f"{name}:")]


def test_fix_writes_through_a_symlink_to_its_target(tree):
    root = tree({"pkg/impl.py": BUGGY_SAFE_FIX})
    os.symlink("pkg/impl.py", root / "link.py")
    r = fix(root, "link.py")
    assert r.returncode == 0, r.stdout
    assert os.readlink(root / "link.py") == "pkg/impl.py"  # still a link
    assert FIXED_MARK in (root / "pkg" / "impl.py").read_text()


def test_fix_refuses_a_file_with_another_hard_link(tree, tmp_path_factory):
    outside = tmp_path_factory.mktemp("backup")
    root = tree({"a.py": BUGGY_SAFE_FIX, "ok.py": BUGGY_SAFE_FIX})
    os.link(root / "a.py", outside / "a.py")  # a backup, a build tree, a store
    r = fix(root)
    assert lines_for(r, "a.py") == [
        "a.py:1:1: RL000 cannot write fix: file has 2 hard links (left unchanged; "
        "see the fix with --diff)",
        "a.py:3:1: RL301 [*] `_compiled` (module global) keeps `torch.nn.Module` keys alive  "
        "[strong-module-keyed-cache]",
    ]
    assert r.returncode == 1
    assert (root / "a.py").read_text() == BUGGY_SAFE_FIX and os.stat(root / "a.py").st_nlink == 2
    assert os.path.samefile(root / "a.py", outside / "a.py")
    assert FIXED_MARK in (root / "ok.py").read_text()  # the others are fixed


needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="needs root to give files to other users")


@needs_root
def test_fix_as_root_keeps_the_owner(tree):
    root = tree({"a.py": BUGGY_SAFE_FIX})
    os.chown(root / "a.py", 4242, 4243)
    assert fix(root).returncode == 0
    st = os.stat(root / "a.py")
    assert (st.st_uid, st.st_gid) == (4242, 4243)
    assert FIXED_MARK in (root / "a.py").read_text()


@needs_root
def test_fix_refuses_when_the_owner_cannot_be_kept(tree):
    # A group-writable file of another user: a rename would hand it to whoever ran --fix.
    root = tree({"a.py": BUGGY_SAFE_FIX})
    os.chmod(root, 0o777)
    os.chown(root / "a.py", 4343, 4242)
    os.chmod(root / "a.py", 0o664)
    as_user = dict(cwd=root, user=4242, group=4242, extra_groups=[], capture_output=True,
                   text=True, timeout=120, env={**os.environ, "NO_COLOR": "1", "HOME": str(root)})
    try:
        subprocess.run([sys.executable, "-c", "import retainlint"], check=True, **as_user)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("this interpreter cannot be run by another user")
    r = subprocess.run([sys.executable, "-m", "retainlint", *FIX], **as_user)
    assert "Traceback" not in r.stdout + r.stderr, r.stderr
    assert lines_for(r, "a.py")[0] == (
        "a.py:1:1: RL000 cannot write fix: cannot keep the file's owner (left unchanged)")
    st = os.stat(root / "a.py")
    assert (st.st_uid, st.st_gid) == (4343, 4242)
    assert (root / "a.py").read_text() == BUGGY_SAFE_FIX
    assert not [p for p in os.listdir(root) if p.endswith(".tmp")]
