"""The CLI as users meet it: exit codes, output, files on disk (the command run in-process)."""

import json
import os
import stat

from click.testing import CliRunner

from conftest import BUGGY, BUGGY_SAFE_FIX, CLEAN, SAFE_FIX_LINE, check_here
from retainlint.engine.cache import default_cache_dir
from retainlint.cli import main


def test_findings_exit_1_with_code_and_line(tree):
    root = tree({"a.py": BUGGY})
    r = check_here("check", "a.py", "--output-format", "concise", cwd=root)
    assert r.returncode == 1
    # The headline and the rule's name; no `[*]`: RL501's fix is unsafe, plain --fix leaves it.
    assert r.stdout.splitlines()[0] == \
        "a.py:7:9: RL501 handle returned by `register_bytecode_hook` is discarded  [discarded-hook-handle]"
    assert "Found 1 finding (1 fixable with --fix --unsafe-fixes)." in r.stdout


def test_clean_tree_exits_0(tree):
    root = tree({"a.py": CLEAN, "pkg/b.py": CLEAN})
    r = check_here("check", cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "All checks passed!" in r.stdout


def test_full_format_shows_code_frame_and_underline(tree):
    root = tree({"a.py": BUGGY})
    r = check_here("check", "a.py", cwd=root)
    lines = r.stdout.splitlines()
    frame = [l for l in lines if l.strip().startswith("7 |")]
    assert frame and "register_bytecode_hook" in frame[0]
    underline = lines[lines.index(frame[0]) + 1]
    assert underline.split("|", 1)[1].strip().startswith("^^^^")
    assert "help: Keep the handle as `self._bytecode_hook_handle` and remove it in `close()`" in r.stdout
    assert "\x1b[" not in r.stdout


def test_exit_zero(tree):
    root = tree({"a.py": BUGGY})
    assert check_here("check", "a.py", "--exit-zero", cwd=root).returncode == 0


def test_missing_path_is_a_one_line_error_exit_2(tree):
    root = tree({"a.py": CLEAN})
    r = check_here("check", "missing.py", cwd=root)
    assert r.returncode == 2
    assert r.stderr.strip() == "retainlint: error: missing.py: no such file or directory"


def test_unknown_selector_exit_2(tree):
    root = tree({"a.py": CLEAN})
    r = check_here("check", "--select", "RL7Z", cwd=root)
    assert r.returncode == 2 and "unknown rule selector `RL7Z`" in r.stderr
    assert "Traceback" not in r.stderr


def test_selection_by_code_prefix_and_name(tree):
    root = tree({"a.py": BUGGY})
    for selector in ("RL501", "RL5", "discarded-hook-handle", "ALL"):
        assert check_here("check", "--select", selector, cwd=root).returncode == 1, selector
    assert check_here("check", "--ignore", "RL5", cwd=root).returncode == 0
    assert check_here("check", "--select", "RL2", cwd=root).returncode == 0


def test_fix_rewrites_file_keeping_mode_and_line_endings(tree):
    root = tree({"a.py": BUGGY_SAFE_FIX.replace("\n", "\r\n").encode()})
    path = root / "a.py"
    os.chmod(path, 0o640)
    r = check_here("check", "a.py", "--fix", cwd=root)
    assert r.returncode == 0, r.stdout
    assert "Found 1 finding (1 fixed, 0 remaining)." in r.stdout
    data = path.read_bytes()
    assert f"{SAFE_FIX_LINE}\r\n".encode() in data
    assert b"import torch\r\nimport weakref\r\n" in data  # the added line too
    assert data.count(b"\r\n") == data.count(b"\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert list(root.iterdir()) == [path]  # no temp files, no cache in the tree


def test_diff_prints_patch_writes_nothing_exit_1(tree):
    root = tree({"a.py": BUGGY_SAFE_FIX})
    r = check_here("check", "a.py", "--diff", cwd=root)
    assert r.returncode == 1
    assert r.stdout.startswith("--- a.py\n+++ a.py\n")
    assert f"\n+{SAFE_FIX_LINE}\n" in r.stdout
    assert "Would fix 1 finding." in r.stderr
    assert (root / "a.py").read_text() == BUGGY_SAFE_FIX
    clean = check_here("check", "a.py", "--diff", "--select", "RL2", cwd=root)
    assert clean.returncode == 0 and clean.stdout == ""


def test_json_output_fields(tree):
    root = tree({"a.py": BUGGY})
    r = check_here("check", "a.py", "--output-format", "json", cwd=root)
    assert r.returncode == 1
    [item] = json.loads(r.stdout)
    assert item["code"] == "RL501" and item["name"] == "discarded-hook-handle"
    assert item["severity"] == "error" and item["filename"] == "a.py"
    assert item["location"] == {"row": 7, "column": 9}
    assert item["end_location"]["row"] == 7
    assert item["fix"]["applicability"] == "unsafe"
    assert item["fix"]["message"].endswith("`self.hook` no longer runs after `close()`")
    edit = item["fix"]["edits"][0]
    assert edit["location"] == {"row": 7, "column": 1}
    assert "self._bytecode_hook_handle = " in edit["content"]
    assert item["url"].endswith("rl501-discarded-hook-handle")


def test_statistics(tree):
    root = tree({"a.py": BUGGY, "b.py": BUGGY})
    r = check_here("check", "--statistics", cwd=root)
    # `[ ]`: the fix is unsafe, plain --fix does not apply it; json counts as the text marks
    assert r.stdout.splitlines()[0].split() == ["2", "RL501", "[", "]", "discarded-hook-handle"]
    j = check_here("check", "--statistics", "--output-format", "json", cwd=root)
    assert json.loads(j.stdout) == [{"code": "RL501", "name": "discarded-hook-handle", "count": 2,
                                     "fixable": False, "fixable_count": 0}]
    j = check_here("check", "--statistics", "--output-format", "json", "--unsafe-fixes", cwd=root)
    assert json.loads(j.stdout) == [{"code": "RL501", "name": "discarded-hook-handle", "count": 2,
                                     "fixable": True, "fixable_count": 2}]


def test_noqa_forms(tree):
    line = "        torch._dynamo.convert_frame.register_bytecode_hook(self.hook)"
    for comment, silenced in (("# noqa", True), ("# noqa: RL501", True),
                              ("# noqa: discarded-hook-handle", True), ("# NOQA:RL301, RL501", True),
                              ("# noqa: RL301", False)):
        root = tree({"a.py": BUGGY.replace(line, f"{line}  {comment}")})
        rc = check_here("check", "a.py", cwd=root).returncode
        assert rc == (0 if silenced else 1), comment


def test_noqa_on_first_line_of_multiline_statement(tree):
    source = BUGGY.replace(
        "        torch._dynamo.convert_frame.register_bytecode_hook(self.hook)",
        "        torch._dynamo.convert_frame.register_bytecode_hook(  # noqa: RL501\n            self.hook\n        )",
    )
    root = tree({"a.py": source})
    assert check_here("check", "a.py", cwd=root).returncode == 0


def test_config_in_pyproject(tree):
    root = tree({"a.py": BUGGY, "pyproject.toml": '[tool.retainlint]\nignore = ["RL501"]\n'})
    assert check_here("check", cwd=root).returncode == 0
    root = tree({"pyproject.toml": '[tool.retainlint]\nignore = "RL501"\n'})
    r = check_here("check", cwd=root)
    assert r.returncode == 2
    assert "[tool.retainlint] ignore: expected a list of strings" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_unknown_config_key_and_per_file_ignores(tree):
    root = tree({"a.py": BUGGY, "sub/b.py": BUGGY,
                 "retainlint.toml": '[per-file-ignores]\n"sub/*.py" = ["discarded-hook-handle"]\n'})
    r = check_here("check", "--output-format", "concise", cwd=root)
    assert [l.split(":")[0] for l in r.stdout.splitlines() if "RL501" in l] == ["a.py"]
    (root / "retainlint.toml").write_text("selec = []\n")
    r = check_here("check", cwd=root)
    assert r.returncode == 2 and "selec: unknown option" in r.stderr


def test_bad_files_reported_and_run_goes_on(tree):
    # Each bad file names a trigger token: files no rule could fire on are never parsed.
    root = tree({"a_syntax.py": "def f(:\n    register_bytecode_hook\n",
                 "b_nul.py": b"x = 1\x00\n# register_bytecode_hook\n",
                 "c_undecodable.py": b"# register_bytecode_hook\nx = '\xff\xfe'\n",
                 "d.py": BUGGY, "e_syntax_no_trigger.py": "def f(:\n"})
    r = check_here("check", "--output-format", "concise", cwd=root)
    assert r.returncode == 1
    out = r.stdout
    assert "a_syntax.py:1:7: RL000 cannot parse" in out
    assert "b_nul.py:1:1: RL000 source contains a NUL byte" in out
    assert "c_undecodable.py:2:6: RL000 cannot decode source as utf-8: invalid start byte" in out
    assert "d.py:7:9: RL501" in out
    assert "e_syntax_no_trigger.py" not in out
    assert "Traceback" not in out + r.stderr


def test_fix_on_read_only_file_leaves_it_untouched(tree):
    root = tree({"a.py": BUGGY_SAFE_FIX})
    path = root / "a.py"
    os.chmod(path, 0o444)
    r = check_here("check", "a.py", "--fix", "--output-format", "concise", cwd=root)
    assert r.returncode == 1
    assert "a.py:1:1: RL000 cannot write fix: file is read-only (left unchanged)" in r.stdout
    assert path.read_text() == BUGGY_SAFE_FIX


def test_default_excludes_and_force_exclude(tree):
    root = tree({"a.py": CLEAN, "venv/lib/x.py": BUGGY, "build/y.py": BUGGY})
    assert check_here("check", cwd=root).returncode == 0
    assert check_here("check", "venv/lib/x.py", cwd=root).returncode == 1  # named files always count
    assert check_here("check", "venv/lib/x.py", "--force-exclude", cwd=root).returncode == 0
    assert check_here("check", "--exclude", "a.py", "a.py", "--force-exclude", cwd=root).returncode == 0


def test_gitignore_honoured_inside_git_repo(tree):
    import subprocess

    root = tree({"a.py": CLEAN, "generated/g.py": BUGGY, ".gitignore": "generated/\n"})
    assert check_here("check", cwd=root).returncode == 1  # not a repo: .gitignore means nothing
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    assert check_here("check", cwd=root).returncode == 0
    assert check_here("check", "generated/g.py", cwd=root).returncode == 1


def test_many_files_use_the_pool_and_agree_with_one_job(tree):
    root = tree({f"m{i}.py": BUGGY if i % 3 == 0 else CLEAN + "# register_bytecode_hook\n"
                 for i in range(30)})
    one = check_here("check", "-j", "1", "--output-format", "json", cwd=root)
    many = check_here("check", "-j", "2", "--output-format", "json", cwd=root)
    assert json.loads(one.stdout) == json.loads(many.stdout)
    assert len(json.loads(one.stdout)) == 10


def test_color_only_when_asked(tree):
    root = tree({"a.py": BUGGY})
    assert "\x1b[" in check_here("check", "a.py", env={"NO_COLOR": "", "FORCE_COLOR": "1"}, cwd=root).stdout
    assert "\x1b[" not in check_here("check", "a.py", env={"NO_COLOR": "1", "FORCE_COLOR": "1"}, cwd=root).stdout
    forced_json = check_here("check", "a.py", "--output-format", "json", "--color", "always", cwd=root)
    assert "\x1b[" not in forced_json.stdout


def test_rule_command():
    r = check_here("rule", "RL501")
    assert r.returncode == 0 and "RL501 discarded-hook-handle" in r.stdout and "Why it leaks" in r.stdout
    j = check_here("rule", "--all", "--output-format", "json")
    codes = [x["code"] for x in json.loads(j.stdout)]
    assert "RL501" in codes and codes == sorted(codes)
    bad = check_here("rule", "RL777")
    assert bad.returncode == 2 and "unknown rule selector" in bad.stderr


def test_version():
    r = check_here("--version")
    assert r.returncode == 0 and "retainlint, version" in r.stdout


def test_crashing_rule_is_an_internal_error_and_the_run_goes_on(tree, monkeypatch):
    from retainlint.engine.registry import lookup

    rule = lookup("RL501")[0]
    monkeypatch.setattr(rule, "visit_Expr", lambda self, node: 1 / 0)
    root = tree({"a.py": BUGGY, "b.py": BUGGY})
    result = CliRunner().invoke(main, ["check", str(root), "-j", "1", "--output-format", "concise"])
    assert result.exit_code == 2
    errors = [l for l in result.output.splitlines() if "RL999" in l]
    assert len(errors) == 2
    assert "internal error in rule RL501 (discarded-hook-handle): ZeroDivisionError" in errors[0]


def test_heavy_types_from_config_apply_where_the_type_is_defined_and_imported(tree):
    engine = (
        "import weakref\n\n\nclass Engine:\n    pass\n\n\n"
        "def keep(owner, engine: Engine):\n    weakref.finalize(owner, print, engine)\n"
    )
    user = (
        "import weakref\nfrom mypkg.engine import Engine\n\n\n"
        "def keep(owner, engine: Engine):\n    weakref.finalize(owner, print, engine)\n"
    )
    root = tree({"mypkg/engine.py": engine, "app.py": user,
                 "pyproject.toml": '[tool.retainlint]\nheavy-types = ["mypkg.engine.Engine"]\n'})
    r = check_here("check", "--select", "RL201", "--output-format", "concise", cwd=root)
    assert sorted(l.split(": ")[0] for l in r.stdout.splitlines() if "RL201" in l) == [
        "app.py:6:36", "mypkg/engine.py:9:36"]
    (root / "pyproject.toml").write_text("")
    assert check_here("check", "--select", "RL201", cwd=root).returncode == 0


def test_index_cache_is_reused_and_no_cache_writes_nothing(tree):
    root = tree({"a.py": BUGGY, "b.py": CLEAN})
    assert check_here("check", "--no-cache", cwd=root).returncode == 1
    cache = default_cache_dir(root)
    assert not cache.exists()
    first = check_here("check", "--output-format", "json", cwd=root)
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (cache / ".gitignore").read_text() == "*\n"
    [stored] = cache.glob("run-*.bin")
    stamp = stored.stat().st_mtime_ns
    second = check_here("check", "--output-format", "json", cwd=root)
    assert json.loads(second.stdout) == json.loads(first.stdout)
    assert stored.stat().st_mtime_ns == stamp  # nothing changed: nothing rewritten
    stored.write_bytes(b"not a cache")  # a corrupt cache is a miss, never an error
    third = check_here("check", "--output-format", "json", cwd=root)
    assert third.returncode == 1 and json.loads(third.stdout) == json.loads(first.stdout)


def test_min_severity_keeps_only_findings_that_severe(tree):
    warning = ("import logging\n\n\nclass Session:\n    def __init__(self):\n"
               "        self.log = logging.getLogger(f\"session.{id(self)}\")\n")
    root = tree({"a.py": BUGGY, "b.py": warning, "broken.py": BUGGY + "def (:\n"})
    every = check_here("check", "--no-cache", "--output-format", "json", "--select", "RL501,RL801",
                    "a.py", "b.py", "broken.py", cwd=root)
    found = {(f["code"], f["severity"]) for f in json.loads(every.stdout)}
    assert ("RL501", "error") in found and ("RL801", "warning") in found, found
    errors = check_here("check", "--no-cache", "--output-format", "json", "--select", "RL501,RL801",
                     "--min-severity", "error", "a.py", "b.py", "broken.py", cwd=root)
    kept = sorted((f["filename"], f["code"]) for f in json.loads(errors.stdout))
    # a file that could not be checked is always reported
    assert kept == [("a.py", "RL501"), ("broken.py", "RL000")], kept
    assert errors.returncode == 1


# A safe fix (RL301: the dict becomes weak-keyed) and a finding no fix resolves (RL102).
SAFE_FIX = "import torch\n\n_order: dict[torch.nn.Module, int]\n_order = {}\n"
NO_FIX = """import functools

import torch


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4096, 4096)

    @functools.lru_cache(maxsize=None)
    def mask(self, size):
        return torch.ones(size)
"""


def test_quiet_prints_the_findings_and_nothing_else(tree):
    root = tree({"a.py": SAFE_FIX, "b.py": NO_FIX, "clean.py": CLEAN})
    r = check_here("check", "-q", "--output-format", "concise", cwd=root)
    assert r.returncode == 1
    assert [line.split(" ")[:2] for line in r.stdout.splitlines()] == \
        [["a.py:4:1:", "RL301"], ["b.py:11:5:", "RL102"]], r.stdout
    assert r.stderr == ""
    clean = check_here("check", "--quiet", "clean.py", cwd=root)
    assert clean.returncode == 0 and clean.stdout == "" and clean.stderr == ""
    fixed = check_here("check", "-q", "--fix", "--output-format", "concise", cwd=root)
    assert fixed.returncode == 1 and [line.split(" ")[1] for line in fixed.stdout.splitlines()] \
        == ["RL102"], fixed.stdout
    assert "WeakKeyDictionary" in (root / "a.py").read_text()


def test_fix_only_applies_fixes_and_reports_nothing_left(tree):
    root = tree({"a.py": SAFE_FIX, "b.py": NO_FIX})
    r = check_here("check", "--fix-only", cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "Fixed 1 finding.\n", r.stdout
    assert "WeakKeyDictionary" in (root / "a.py").read_text()
    assert (root / "b.py").read_text() == NO_FIX
    again = check_here("check", "--fix-only", "--exit-non-zero-on-fix", cwd=root)
    assert again.returncode == 0 and again.stdout == "No fixes applied.\n", again.stdout
    (root / "a.py").write_text(SAFE_FIX)
    flagged = check_here("check", "--fix-only", "--exit-non-zero-on-fix", "-q", cwd=root)
    assert flagged.returncode == 1 and flagged.stdout == "", flagged.stdout
    assert "WeakKeyDictionary" in (root / "a.py").read_text()


def test_quiet_diff_is_the_diff_alone(tree):
    root = tree({"a.py": SAFE_FIX})
    r = check_here("check", "-q", "--diff", cwd=root)
    assert r.returncode == 1 and r.stdout.startswith("--- a.py") and r.stderr == "", r.stderr
