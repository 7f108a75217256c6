"""Which files are read: a symlink is followed only while it stays inside the project, so
a committed `env.py -> /proc/self/environ` never reaches the output (a code frame, a
message). Links inside the tree work as before; a file named outside the project that is
not a link is still read."""

import os

import pytest

from conftest import BUGGY, run_cli

# In the environment of the checking process: /proc/self/environ holds it. It names the
# hook, so the rules parse the file and report its NUL bytes with a code frame.
SECRET = "torch._dynamo.convert_frame.register_bytecode_hook(hunter2_s3cr3t)"
LEAVES = "RL000 cannot read: symlink leaves the project"


def check(root, *args):
    r = run_cli("check", "--no-cache", *args, cwd=root, env={"RL_TEST_TOKEN": SECRET})
    out = r.stdout + r.stderr
    leaked = "hunter2" in out  # a bool: a failure must not print the environment either
    assert not leaked, "the secret reached the output"
    assert "Traceback" not in out
    return r


def lines_for(r, name):
    return [line for line in r.stdout.splitlines() if line.startswith(f"{name}:")]


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="needs /proc")
@pytest.mark.parametrize("output", ["full", "concise", "json", "sarif", "github"])
def test_link_to_proc_environ_is_not_read(tree, output):
    root = tree({"ok.py": BUGGY})
    os.symlink("/proc/self/environ", root / "env.py")
    for args in ([], ["env.py", "ok.py"]):  # found in a walk, or named (as pre-commit does)
        r = check(root, "--output-format", output, *args)
        assert r.returncode == 1
        assert "env.py" in r.stdout and "symlink leaves the project" in r.stdout
        if output in ("full", "concise"):
            assert lines_for(r, "env.py") == [f"env.py:1:1: {LEAVES}"]


def test_link_to_a_file_outside_the_project_is_not_read(tree, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    for name in ("secrets.py", "keys.py"):
        (outside / name).write_text(f"# {SECRET}\npassword = (\n")  # a frame would show it
    root = tree({"ok.py": BUGGY, "pkg/__init__.py": ""})
    os.symlink(outside / "secrets.py", root / "pkg" / "creds.py")
    os.symlink(os.path.relpath(outside / "keys.py", root), root / "rel.py")  # via ..
    r = check(root)
    assert lines_for(r, "pkg/creds.py") == [f"pkg/creds.py:1:1: {LEAVES}"]
    assert lines_for(r, "rel.py") == [f"rel.py:1:1: {LEAVES}"]
    assert "ok.py:7:9: RL501" in r.stdout and r.returncode == 1
    named = check(root, "rel.py")
    assert lines_for(named, "rel.py") == [f"rel.py:1:1: {LEAVES}"]


def test_links_inside_the_tree_are_followed(tree):
    root = tree({"pkg/impl.py": BUGGY, "pkg/sub/__init__.py": ""})
    os.symlink("impl.py", root / "pkg" / "alias.py")
    os.symlink("../impl.py", root / "pkg" / "sub" / "up.py")
    r = check(root)
    # The same file reached three ways is checked once, under its own name.
    assert [l.split(" ")[0] for l in r.stdout.splitlines() if " RL" in l] == ["pkg/impl.py:7:9:"]
    named = check(root, "pkg/sub/up.py")
    assert lines_for(named, "pkg/sub/up.py")[0].startswith("pkg/sub/up.py:7:9: RL501 ")


def test_a_file_outside_the_project_named_explicitly_is_read(tree, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere")
    (outside / "far.py").write_text(BUGGY)
    (outside / "near.py").symlink_to(outside / "far.py")  # a link, outside the project
    root = tree({"pyproject.toml": "[tool.retainlint]\n", "ok.py": BUGGY})
    r = check(root, str(outside / "far.py"))
    assert f"{outside / 'far.py'}:7:9: RL501" in r.stdout
    r = check(root, str(outside / "near.py"))
    assert lines_for(r, str(outside / "near.py")) == [f"{outside / 'near.py'}:1:1: {LEAVES}"]


def test_a_named_directory_link_leaving_the_project_is_refused(tree, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "far.py").write_text(BUGGY)
    root = tree({"ok.py": BUGGY})
    os.symlink(outside, root / "away")
    r = check(root, "away")
    assert r.returncode == 2
    assert r.stderr.strip() == "retainlint: error: away: symlink leaves the project"
    assert "far.py" not in r.stdout


def test_file_swapped_for_a_link_after_discovery_is_not_read(tree, tmp_path_factory):
    # Between listing and reading, a file becomes a link to a secret: the check is made on
    # the file actually opened, not on what discovery saw.
    from retainlint.core.config import load_settings
    from retainlint.engine.discover import discover
    from retainlint.engine.registry import all_rules
    from retainlint.engine.runner import Mode, run

    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.py").write_text(f"# {SECRET}\nx = (\n")
    root = tree({"a.py": BUGGY, "b.py": BUGGY})
    settings = load_settings(root, None)
    files = discover([str(root)], settings.root, (), False)
    os.unlink(root / "b.py")
    os.symlink(outside / "secret.py", root / "b.py")
    result = run(files, [r.code for r in all_rules()], settings, Mode(), jobs=1)
    by_file = {(os.path.basename(f.path), f.code, f.message) for f in result.findings}
    assert ("b.py", "RL000", "cannot read: symlink leaves the project") in by_file
    assert not [f for f in result.findings if "hunter2" in f.message]
