"""Odd, broken and hostile files: each gives at most a one-line error naming the file, the
other files of the run are still checked, and no traceback ever reaches the user.

Every hostile file names a trigger token (`register_bytecode_hook`): files no rule could
fire on are never parsed, so without one the test would prove nothing."""

import os
import subprocess
import sys

import libcst as cst
import pytest

from conftest import BUGGY, run_cli

TRIGGER = "# register_bytecode_hook\n"
BOM = b"\xef\xbb\xbf"
GOOD_FINDING = "ok.py:7:9: RL501"
UNSAFE_FIX = ("--fix", "--unsafe-fixes")  # RL501's fix (BUGGY's) is unsafe: plain --fix leaves it


def check(root, *args):
    r = run_cli("check", "--output-format", "concise", *args, cwd=root)
    assert "Traceback" not in r.stdout + r.stderr
    return r


def errors_for(r, name):
    return [line for line in r.stdout.splitlines() if line.startswith(f"{name}:")]


def assert_one_error(r, name, text):
    [line] = errors_for(r, name)
    assert " RL000 " in line and text in line, line
    assert GOOD_FINDING in r.stdout  # the run went on
    assert r.returncode == 1


def test_syntax_error(tree):
    root = tree({"bad.py": TRIGGER + "def f(:\n    pass\n", "ok.py": BUGGY})
    r = check(root)
    assert_one_error(r, "bad.py", "bad.py:2:7: RL000 cannot parse: ")


def test_undecodable_bytes_and_unknown_coding(tree):
    root = tree({"bad.py": TRIGGER.encode() + b"x = '\xff\xfe'\n",
                 "cookie.py": b"# -*- coding: no-such-codec -*-\n" + TRIGGER.encode(),
                 "ok.py": BUGGY})
    r = check(root)
    assert_one_error(r, "bad.py", "bad.py:2:6: RL000 cannot decode source as utf-8")
    assert_one_error(r, "cookie.py", "cannot decode source")


def test_utf8_bom_keeps_positions_and_survives_fix(tree):
    root = tree({"bom.py": BOM + BUGGY.encode(), "ok.py": BUGGY})
    r = check(root)
    assert "bom.py:7:9: RL501" in r.stdout and GOOD_FINDING in r.stdout
    assert run_cli("check", "bom.py", *UNSAFE_FIX, cwd=root).returncode == 0
    data = (root / "bom.py").read_bytes()
    assert data.startswith(BOM) and data.count(BOM) == 1
    assert b"self._bytecode_hook_handle = torch._dynamo" in data


def _unchanged_outside_edit(before: bytes, after: bytes, edited_line: int) -> None:
    """Every original line but the edited one is still there, byte for byte, in order."""
    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    kept = [line for i, line in enumerate(old, 1) if i != edited_line]
    if not before.endswith(b"\n"):  # a line added after the last one gives it an ending
        kept[-1] = kept[-1].rstrip(b"\r")
        new = [n.rstrip(b"\r\n") if n.startswith(kept[-1]) else n for n in new]
    it = iter(new)
    assert all(any(line == n for n in it) for line in kept), (old, new)


@pytest.mark.parametrize("endings", ["crlf", "mixed", "crlf-no-final-newline"])
def test_line_endings_kept_byte_for_byte_outside_the_fix(tree, endings):
    lines = BUGGY.splitlines(keepends=True)
    if endings == "crlf":
        data = "".join(l.replace("\n", "\r\n") for l in lines).encode()
    elif endings == "mixed":
        data = "".join(l.replace("\n", "\r\n") if i % 2 else l for i, l in enumerate(lines)).encode()
    else:
        data = BUGGY.rstrip("\n").replace("\n", "\r\n").encode()
    root = tree({"a.py": data, "ok.py": BUGGY})
    r = check(root, *UNSAFE_FIX)
    assert r.returncode == 0, r.stdout
    after = (root / "a.py").read_bytes()
    assert b"self._bytecode_hook_handle.remove()" in after
    _unchanged_outside_edit(data, after, edited_line=7)
    if endings != "mixed":
        assert after.count(b"\r\n") == after.count(b"\n")


def test_nul_bytes(tree):
    root = tree({"nul.py": TRIGGER.encode() + b"x = 1\n\x00\n", "ok.py": BUGGY})
    assert_one_error(check(root), "nul.py", "nul.py:3:1: RL000 source contains a NUL byte")


def test_empty_and_blank_files(tree):
    root = tree({"empty.py": b"", "blank.py": b"\n\n  \n", "bom_only.py": BOM, "ok.py": BUGGY})
    r = check(root)
    assert r.returncode == 1 and GOOD_FINDING in r.stdout
    assert not [l for l in r.stdout.splitlines() if l.startswith(("empty", "blank", "bom_only"))]
    assert check(root, "empty.py").returncode == 0


def test_large_generated_file_under_the_size_cap(tree):
    # Shaped like a generated module (_pb2, embedded assets): one huge literal.
    blob = b"BLOB = b'" + b"\\x00" * (3_500_000 // 4) + b"'\n"
    root = tree({"big.py": BUGGY.encode() + blob, "ok.py": BUGGY})
    r = check(root)
    assert r.returncode == 1
    assert "big.py:7:9: RL501" in r.stdout and GOOD_FINDING in r.stdout


# Runs the CLI as a grandchild: RUSAGE_CHILDREN then holds its peak memory alone, not
# that of whatever else this test process ran. Address space capped, so that without
# the size cap the run fails quickly instead of exhausting the machine.
_PEAK_RSS = """\
import resource, subprocess, sys
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
r = subprocess.run([sys.executable, "-m", "retainlint", *sys.argv[1:]], preexec_fn=cap,
                   capture_output=True, text=True, timeout=300)
sys.stdout.write(r.stdout)
sys.stderr.write(r.stderr)
print("peak-rss-kib", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


@pytest.mark.slow  # a generated input of many megabytes or thousands of definitions
def test_huge_file_is_refused_with_bounded_memory(tree):
    # Dense code, not a literal: libcst needs hundreds of bytes of memory per byte of it.
    lines = [f"value_{i} = compute(alpha_{i}, beta, gamma=[1, 2, 3], key={{'k': {i}}})\n"
             for i in range(300_000)]
    root = tree({"huge.py": BUGGY + "".join(lines), "ok.py": BUGGY})
    size = (root / "huge.py").stat().st_size
    assert size > 20 << 20
    r = subprocess.run([sys.executable, "-c", _PEAK_RSS, "check", "--no-cache", "-j", "1"],
                       cwd=root, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "NO_COLOR": "1"})
    assert "Traceback" not in r.stdout + r.stderr
    [huge] = [l for l in r.stdout.splitlines() if l.startswith("huge.py:")]
    assert huge == f"huge.py:1:1: RL000 file too large to check ({size / 2**20:.1f} MB > 4 MB)"
    assert GOOD_FINDING in r.stdout
    peak_mib = int(r.stdout.split("peak-rss-kib ")[1]) / 1024
    assert peak_mib < 1024, peak_mib


# A shape a rule's prefilter lets through (a comment naming the hook is no longer enough),
# so that each file reaches the libcst parse.
SHAPE = "import torch\ntorch._dynamo.convert_frame.register_bytecode_hook(print)\n"
DEEP = {
    "parens.py": SHAPE + "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
    "chain.py": SHAPE + "x = " + "+".join(["a"] * 100_000) + "\n",
    "boolops.py": SHAPE + "x = a" + " and a" * 20_000 + "\n",
    "unary.py": SHAPE + "x = " + "-" * 50_000 + "a\n",
    "newer_syntax_parens.py": SHAPE + "type X = int\nx = " + "[" * 5000 + "]" * 5000 + "\n",
}


def test_deeply_nested_expressions(tree):
    # libcst's native parser overflows its stack (a segfault) or takes quadratic time here.
    root = tree({**DEEP, "ok.py": BUGGY})
    r = check(root, "-j", "1")
    for name in DEEP:
        [line] = errors_for(r, name)
        assert "RL000 cannot parse: " in line, line
    assert GOOD_FINDING in r.stdout and r.returncode == 1


def test_deeply_nested_expressions_in_the_process_pool(tree):
    ok = {f"ok{i}.py": BUGGY for i in range(9)}
    root = tree({**DEEP, **ok})
    r = check(root, "-j", "2")
    assert r.returncode == 1
    for name in DEEP:
        assert len(errors_for(r, name)) == 1
    assert sorted(l.split(":")[0] for l in r.stdout.splitlines() if "RL501" in l) == sorted(ok)


def test_symlink_loop_and_link_outside_the_tree(tree, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "far.py").write_text(BUGGY)
    root = tree({"ok.py": BUGGY})
    os.symlink(root, root / "loop")  # a directory loop
    os.symlink(outside, root / "away")  # a directory outside the tree
    os.symlink("b.py", root / "a.py")  # a file loop
    os.symlink("a.py", root / "b.py")
    r = check(root)
    assert "far.py" not in r.stdout and "loop/" not in r.stdout
    assert_one_error(r, "a.py", "cannot read: Too many levels of symbolic links")
    assert_one_error(r, "b.py", "cannot read: Too many levels of symbolic links")
    named = check(root, "a.py", "ok.py")
    assert_one_error(named, "a.py", "cannot read: Too many levels of symbolic links")


def test_file_gone_or_unreadable_at_read_time(tree):
    root = tree({"ok.py": BUGGY, "locked.py": BUGGY})
    os.symlink("deleted-after-discovery.py", root / "gone.py")  # what a vanished file looks like
    os.mkfifo(root / "fifo.py")  # reading would block forever
    os.symlink("/dev/zero", root / "zero.py")  # reading would never end
    os.chmod(root / "locked.py", 0)
    r = check(root)
    assert_one_error(r, "gone.py", "gone.py:1:1: RL000 cannot read: No such file or directory")
    assert_one_error(r, "fifo.py", "fifo.py:1:1: RL000 cannot read: not a regular file")
    assert_one_error(r, "zero.py", "zero.py:1:1: RL000 cannot read: not a regular file")
    if os.geteuid() != 0:  # root reads through mode 000
        assert_one_error(r, "locked.py", "cannot read: Permission denied")
    full = run_cli("check", cwd=root)  # the code frame reader must not block either
    assert "Traceback" not in full.stdout + full.stderr and full.returncode == 1


def test_file_deleted_between_discovery_and_reading(tree):
    from retainlint.core.config import load_settings
    from retainlint.engine.discover import discover
    from retainlint.engine.registry import all_rules
    from retainlint.engine.runner import Mode, run

    root = tree({"a.py": BUGGY, "b.py": BUGGY, "c.py": BUGGY})
    settings = load_settings(root, None)
    files = discover([str(root)], settings.root, (), False)
    os.unlink(root / "b.py")
    result = run(files, [r.code for r in all_rules()], settings, Mode(), jobs=1)
    by_file = {(os.path.basename(f.path), f.code) for f in result.findings}
    assert by_file == {("a.py", "RL501"), ("b.py", "RL000"), ("c.py", "RL501")}


def test_python2_source(tree):
    root = tree({"py2.py": TRIGGER + 'print "x"\n', "ok.py": BUGGY})
    assert_one_error(check(root), "py2.py", "py2.py:2:1: RL000 cannot parse: Missing parentheses")


NEWEST = """\
match command:
    case [action, *rest] if rest:
        pass
    case {"x": x, **kw}:
        pass


def first[T](items: list[T]) -> T:
    return items[0]


class Box[T: (int, str), *Ts, **P]:
    pass


type Pair[K] = tuple[K, K]


"""


def test_newest_syntax_is_parsed_and_checked(tree):
    root = tree({"new.py": NEWEST + BUGGY, "ok.py": BUGGY})
    r = check(root)
    offset = NEWEST.count("\n")
    assert f"new.py:{7 + offset}:9: RL501" in r.stdout and " RL000 " not in r.stdout
    assert check(root, "new.py", *UNSAFE_FIX).returncode == 0
    fixed = (root / "new.py").read_text()
    assert fixed.startswith(NEWEST) and "self._bytecode_hook_handle.remove()" in fixed


def test_template_strings(tree):
    source = 'greeting = t"hello {name!r:>10}"\n'
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        pytest.skip(f"libcst {cst.__version__ if hasattr(cst, '__version__') else ''} "
                    "does not parse t-strings")
    root = tree({"t.py": source + BUGGY, "ok.py": BUGGY})
    r = check(root)
    assert "t.py:8:9: RL501" in r.stdout and " RL000 " not in r.stdout


FORM_FEED = BUGGY.replace("    def __init__", "\f    def __init__").replace(
    "        torch._dynamo", "\f        torch._dynamo")


def test_form_feed_in_indentation_is_checked(tree):
    # CPython ignores a form feed in indentation; libcst's tokenizer fails on it ("no
    # matching outer block for dedent") and does not write it back.
    root = tree({"ff.py": FORM_FEED, "ok.py": BUGGY})
    r = check(root)
    [line] = errors_for(r, "ff.py")
    assert line.startswith("ff.py:7:10: RL501 handle returned"), line  # the form feed counts
    # libcst would write the file back without its form feeds: the fix is offered as help.
    assert check(root, *UNSAFE_FIX).returncode == 1
    assert (root / "ff.py").read_text() == FORM_FEED
    assert "self._bytecode_hook_handle.remove()" in (root / "ok.py").read_text()
    full = run_cli("check", "ff.py", cwd=root).stdout
    assert "  7 | \\x0c        torch._dynamo" in full  # the form feed shown, escaped
    assert "    | " + " " * len("\\x0c        ") + "^^^^^" in full  # the caret under `torch`
    assert "help: Keep the handle" in full and "form feed" in full


def test_terminal_escapes_in_names_and_source_are_shown_escaped(tree):
    hook = 'lambda *a: print("\x1b]0;pwned\x07\x1b[2J")'
    source = BUGGY.replace("register_bytecode_hook(self.hook)",
                           f"register_bytecode_hook({hook})  # \x9b31m\x1b[8m")
    root = tree({"evil\x1b[31m\r.py": source, "ok.py": BUGGY})
    for output in ("full", "concise"):
        r = run_cli("check", "--output-format", output, cwd=root)
        assert r.returncode == 1 and GOOD_FINDING in r.stdout
        raw = [c for c in r.stdout if ord(c) < 32 and c not in "\n\t" or 0x7f <= ord(c) < 0xa0]
        assert raw == []
        assert "evil\\x1b[31m\\r.py:7:9: RL501 " in r.stdout  # visibly escaped, on one line
        if output == "full":
            assert "print(\"\\x1b]0;pwned\\x07\\x1b[2J\")" in r.stdout  # the code frame
            assert "# \\x9b31m\\x1b[8m" in r.stdout


# Shapes that took minutes before their analyses were made linear. Checked within a budget
# (RETAINLINT_FILE_BUDGET, seconds of CPU) several times what they need now: a quadratic
# pass on them spends it and the file comes out as one "time budget exceeded" line.
WITHIN = {"RETAINLINT_FILE_BUDGET": "30"}


def _codes_of(r, name):
    return [line.split(" ", 2)[1] for line in errors_for(r, name)]


@pytest.mark.slow  # a generated input of many megabytes or thousands of definitions
def test_thousands_of_module_containers_keyed_by_models(tree):
    """RL301: each container's fix looked for `import weakref` through the whole file."""
    source = "import torch\n\n" + "".join(
        f"D{i}: dict[torch.nn.Module, int] = {{}}\n" for i in range(4000))
    root = tree({"many.py": source})
    r = run_cli("check", "--no-cache", "--output-format", "concise", cwd=root, env=WITHIN)
    assert "Traceback" not in r.stdout + r.stderr
    assert _codes_of(r, "many.py") == ["RL301"] * 4000, r.stdout[-500:]


@pytest.mark.slow  # a generated input of many megabytes or thousands of definitions
def test_thousands_of_classes_and_their_singleton_functions(tree):
    """RL102: each class looked through every function of the project, every module-level
    statement and every class of its file; RL303's prefilter through every `global`."""
    parts = ["import functools\n\nimport torch\n\n\nclass Base(torch.nn.Module):\n    pass\n\n\n"]
    for i in range(3000):
        parts.append(f"class C{i}(Base):\n    @functools.cache\n    def size(self):\n"
                     f"        return {i}\n\n\n_x{i} = None\n\n\ndef make{i}():\n"
                     f"    global _x{i}\n    _x{i} = C{i}()\n    return _x{i}\n\n\n")
    root = tree({"classes.py": "".join(parts), "ok.py": BUGGY})
    r = run_cli("check", "--no-cache", "--output-format", "concise", cwd=root, env=WITHIN)
    assert "Traceback" not in r.stdout + r.stderr
    assert errors_for(r, "classes.py") == []  # each class is a process singleton: no finding
    assert GOOD_FINDING in r.stdout
