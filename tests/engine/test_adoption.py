"""Adopting retainlint on a large tree, through the real CLI: --add-noqa (idempotent,
formatting kept) and a baseline file (--write-baseline, --baseline)."""

import json
import textwrap

from conftest import BUGGY, run_cli

# Two findings: one on a plain line, one in a call spanning three lines whose first line
# ends inside a string that continues with a backslash (no comment may go there).
TWO = textwrap.dedent('''\
    import torch


    class Wrapper:
        def __init__(self, model):
            self.model = model
            torch._dynamo.convert_frame.register_bytecode_hook(self.hook)  # keep: a comment
            torch._dynamo.convert_frame.register_bytecode_hook(self.other_hook, "a \\
    b",
            )

        def close(self):
            self.model = None
    ''')


def concise(r):
    return [line for line in r.stdout.splitlines() if ": RL" in line]


def test_add_noqa_silences_everything_once_and_keeps_the_rest(tree):
    root = tree({"a.py": TWO, "b.py": BUGGY.replace("(self.hook)", "(self.hook)  # noqa: E501")})
    assert len(concise(run_cli("check", "--output-format", "concise", cwd=root))) == 3
    r = run_cli("check", "--add-noqa", cwd=root)
    assert r.returncode == 0 and "Added 3 noqa directives." in r.stderr, r.stderr
    a = (root / "a.py").read_text().splitlines()
    before = TWO.splitlines()
    changed = [i for i, (x, y) in enumerate(zip(before, a)) if x != y]
    assert len(a) == len(before) and changed == [6, 8]  # only two line ends changed
    assert a[6] == before[6] + "  # noqa: RL501"  # after the comment already there
    assert a[8] == 'b",  # noqa: RL501'  # not inside the string: its statement's next line
    b = (root / "b.py").read_text()
    assert "(self.hook)  # noqa: E501, RL501\n" in b  # merged into the directive there
    after = run_cli("check", cwd=root)
    assert after.returncode == 0 and "All checks passed!" in after.stdout, after.stdout
    again = run_cli("check", "--add-noqa", cwd=root)
    assert "Added 0 noqa directives." in again.stderr
    assert (root / "b.py").read_text() == b


def test_baseline_hides_known_findings_and_survives_unrelated_edits(tree):
    root = tree({"a.py": BUGGY, "sub/b.py": BUGGY})
    r = run_cli("check", "--write-baseline", "baseline.json", cwd=root)
    assert r.returncode == 0 and "Wrote 2 findings to baseline.json." in r.stderr, r.stderr
    recorded = json.loads((root / "baseline.json").read_text())["findings"]
    assert [(e["code"], e["path"]) for e in recorded] == [("RL501", "a.py"), ("RL501", "sub/b.py")]

    r = run_cli("check", "--baseline", "baseline.json", cwd=root)
    assert r.returncode == 0 and "All checks passed!" in r.stdout
    assert "2 findings in the baseline not shown" in r.stderr
    # Lines added above the finding move it; it is still the accepted one.
    (root / "a.py").write_text("# header\n\n" + BUGGY)
    r = run_cli("check", "--baseline", "baseline.json", cwd=root)
    assert r.returncode == 0, r.stdout
    # A second copy of the bug in that file is new; so is the bug in a new file.
    (root / "a.py").write_text("# header\n\n" + BUGGY.replace(
        "        self.model = model\n",
        "        self.model = model\n"
        "        torch._dynamo.convert_frame.register_bytecode_hook(self.hook)\n"))
    (root / "c.py").write_text(BUGGY)
    r = run_cli("check", "--output-format", "concise", "--baseline", "baseline.json", cwd=root)
    assert r.returncode == 1
    assert sorted(line.split(":")[0] for line in concise(r)) == ["a.py", "c.py"], r.stdout
    # Run from elsewhere: paths are relative to the baseline file, not the cwd.
    r = run_cli("check", "--baseline", str(root / "baseline.json"), str(root / "sub"), cwd=root.parent)
    assert r.returncode == 0, r.stdout


def test_bad_baseline_is_one_line(tree):
    root = tree({"a.py": BUGGY, "b.json": "[1, 2]"})
    for name, problem in (("b.json", "not a baseline file"), ("none.json", "cannot read baseline")):
        r = run_cli("check", "--baseline", name, cwd=root)
        assert r.returncode == 2 and problem in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
