"""`[*]` marks a finding whose fix `--fix` would apply under the same flags: the safe fixes,
and the unsafe ones too when unsafe fixes are allowed (`--unsafe-fixes`, or `unsafe-fixes =
true` in the configuration). The listing, --statistics (text and JSON), --show-fixes and
the summary line count the same findings, through the real CLI."""

import json

from conftest import BUGGY, BUGGY_SAFE_FIX, check_here

# Only the two rules these sources are about: another rule's finding would change the counts.
RULES = ("--select", "RL301,RL501")
UNSAFE_LINE = "a.py:7:9: RL501 {mark}handle returned by `register_bytecode_hook` is discarded  [discarded-hook-handle]"


def check(root, *flags):
    return check_here("check", *RULES, *flags, cwd=root)


def concise(root, *flags):
    return check(root, "--output-format", "concise", *flags)


def test_unsafe_fix_is_marked_only_when_unsafe_fixes_are_allowed(tree):
    root = tree({"a.py": BUGGY})
    plain = concise(root)
    assert plain.returncode == 1
    assert plain.stdout.splitlines()[0] == UNSAFE_LINE.format(mark="")
    assert plain.stdout.splitlines()[-1] == "Found 1 finding (1 fixable with --fix --unsafe-fixes)."
    allowed = concise(root, "--unsafe-fixes")
    assert allowed.returncode == 1
    assert allowed.stdout.splitlines()[0] == UNSAFE_LINE.format(mark="[*] ")
    assert allowed.stdout.splitlines()[-1] == "Found 1 finding (1 fixable with --fix, all unsafe)."
    # `--no-unsafe-fixes` wins over the configuration, as it does for --fix.
    (root / "retainlint.toml").write_text("unsafe-fixes = true\n")
    assert concise(root).stdout.splitlines()[0] == UNSAFE_LINE.format(mark="[*] ")
    assert concise(root, "--no-unsafe-fixes").stdout.splitlines()[0] == UNSAFE_LINE.format(mark="")


def test_full_headline_marks_the_unsafe_fix_with_unsafe_fixes(tree):
    root = tree({"a.py": BUGGY})
    head = "a.py:7:9: RL501 discarded-hook-handle [error]{mark} handle returned by `register_bytecode_hook` is discarded"
    assert check(root).stdout.splitlines()[0] == head.format(mark="")
    assert check(root, "--unsafe-fixes").stdout.splitlines()[0] == head.format(mark=" [*]")


def statistics(root, *flags):
    text = check(root, "--statistics", *flags)
    js = check(root, "--statistics", "--output-format", "json", *flags)
    *counts, summary = text.stdout.splitlines()
    marks = {line.split()[1]: " ".join(line.split()[2:]) for line in counts}  # `2  RL501  [ ] name`
    return marks, {r["code"]: r for r in json.loads(js.stdout)}, summary


def test_statistics_text_and_json_count_what_the_listing_marks(tree):
    # a.py and c.py: RL501, whose fix is unsafe; b.py: RL301, whose fix is safe.
    root = tree({"a.py": BUGGY, "c.py": BUGGY, "b.py": BUGGY_SAFE_FIX})
    marks, rows, summary = statistics(root)
    assert marks == {"RL501": "[ ] discarded-hook-handle", "RL301": "[*] strong-module-keyed-cache"}
    assert (rows["RL501"]["fixable"], rows["RL501"]["fixable_count"]) == (False, 0)
    assert (rows["RL301"]["fixable"], rows["RL301"]["fixable_count"]) == (True, 1)
    assert summary == "Found 3 findings (1 fixable with --fix, 2 more with --fix --unsafe-fixes)."

    marks, rows, summary = statistics(root, "--unsafe-fixes")
    assert marks == {"RL501": "[*] discarded-hook-handle", "RL301": "[*] strong-module-keyed-cache"}
    assert (rows["RL501"]["fixable"], rows["RL501"]["fixable_count"]) == (True, 2)
    assert (rows["RL301"]["fixable"], rows["RL301"]["fixable_count"]) == (True, 1)
    assert summary == "Found 3 findings (3 fixable with --fix, 2 of them unsafe)."
    # The listing marks as many findings as the statistics count fixable.
    listing = concise(root, "--unsafe-fixes").stdout
    assert listing.count(" [*] ") == sum(r["fixable_count"] for r in rows.values()) == 3


def test_show_fixes_without_fix_lists_what_fix_would_apply_under_the_same_flags(tree):
    root = tree({"a.py": BUGGY})
    plain = concise(root, "--show-fixes")
    assert "No safe fixes available." in plain.stdout
    allowed = concise(root, "--show-fixes", "--unsafe-fixes")
    assert "Would fix 1 finding:\n- a.py:\n    1 x RL501 (discarded-hook-handle)" in allowed.stdout
    # ... which is what `--fix --unsafe-fixes` then does.
    done = check(root, "--fix", "--unsafe-fixes", "--show-fixes")
    assert "Fixed 1 finding:\n- a.py:\n    1 x RL501 (discarded-hook-handle)" in done.stdout
