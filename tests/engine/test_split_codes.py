"""RL602 (release-keeps-heavy-attribute) became seven checks, RL610 to RL616, and RL603
(ineffective-release) six, RL604 to RL609, one code each: a user switches one shape off by
its code, and what named the old code before - a selector, a configuration, a `# noqa`, a
baseline - keeps working, with a warning naming the codes."""

import json
import textwrap

import pytest

from conftest import check_here

# Two shapes RL603 used to report: a deleted parameter (RL604) and a deleted loop
# variable (RL607).
CLEANUP = textwrap.dedent("""\
    import gc


    def free_model(model):
        del model
        gc.collect()


    def release_all(objects):
        for obj in objects:
            del obj
        gc.collect()
    """)


def _found(done) -> list[tuple[str, int]]:
    return sorted((f["code"], f["location"]["row"]) for f in json.loads(done.stdout))


def _check(root, *args):
    return check_here("check", ".", "--no-cache", "--output-format", "json", *args, cwd=root)


def test_each_check_has_its_own_code_and_one_is_switched_off_alone(tree):
    root = tree({"cleanup.py": CLEANUP})
    assert _found(_check(root)) == [("RL604", 5), ("RL607", 11)]
    done = _check(root, "--ignore", "RL604")
    assert _found(done) == [("RL607", 11)]
    assert "RL603" not in done.stderr


def test_the_old_code_and_name_select_and_ignore_all_its_checks_with_a_warning(tree):
    root = tree({"cleanup.py": CLEANUP})
    for selector in ("RL603", "ineffective-release"):
        done = _check(root, "--select", selector)
        assert _found(done) == [("RL604", 5), ("RL607", 11)]
        assert "RL603 (ineffective-release) is split into RL604, RL605, RL606, RL607, RL608, RL609" \
            in done.stderr
    assert _found(_check(root, "--ignore", "RL603")) == []


def test_a_configuration_naming_the_old_code_still_applies_and_says_so(tree):
    root = tree({"cleanup.py": CLEANUP,
                 "pyproject.toml": '[tool.retainlint]\nper-file-ignores = {"cleanup.py" = ["RL603"]}\n'})
    done = _check(root)
    assert _found(done) == []
    assert "RL603 (ineffective-release) is split into" in done.stderr


def test_noqa_naming_the_old_code_silences_its_checks_and_is_no_unknown_code(tree):
    root = tree({"cleanup.py": CLEANUP.replace("    del model\n", "    del model  # noqa: RL603\n")
                 .replace("        del obj\n", "        del obj  # noqa: ineffective-release\n")
                 .replace("import gc\n", "import gc  # noqa: RL603\n")})
    done = _check(root, "--extend-select", "RL100")
    # the two directives on the findings' lines silence them; the one on the import
    # silenced nothing, and RL100 says so under the code written there
    assert _found(done) == [("RL100", 1)]
    [unused] = json.loads(done.stdout)
    assert unused["message"].startswith("unused `# noqa` directive for RL603:")
    assert "names no rule" not in done.stderr


def test_a_baseline_entry_written_under_the_old_code_accepts_the_new_code(tree):
    root = tree({"cleanup.py": CLEANUP})
    assert check_here("check", ".", "--no-cache", "--write-baseline", "baseline.json", cwd=root).returncode == 0
    baseline = root / "baseline.json"
    data = json.loads(baseline.read_text())
    assert sorted(e["code"] for e in data["findings"]) == ["RL604", "RL607"]
    for entry in data["findings"]:  # as a version before the split wrote it
        entry["code"] = "RL603"
    baseline.write_text(json.dumps(data))
    done = _check(root, "--baseline", "baseline.json")
    assert (done.returncode, _found(done)) == (0, [])


@pytest.mark.parametrize("old, name, codes", [
    ("RL602", "release-keeps-heavy-attribute", ["RL610", "RL611", "RL612", "RL613", "RL614", "RL615", "RL616"]),
    ("RL603", "ineffective-release", ["RL604", "RL605", "RL606", "RL607", "RL608", "RL609"]),
])
def test_explaining_the_old_code_shows_every_check_split_from_it(old, name, codes):
    done = check_here("rule", old, "--output-format", "json")
    assert done.returncode == 0
    assert [r["code"] for r in json.loads(done.stdout)] == codes
    assert f"{old} ({name}) is split into {', '.join(codes)}" in done.stderr


def test_the_checks_split_from_release_keeps_heavy_attribute_are_selected_by_it(tree):
    """A class keeping a model after `close()` (RL610) and an `ExitStack` nothing closes
    (RL614): RL602 selects both; each is switched off by its own code."""
    root = tree({"engine.py": textwrap.dedent("""\
        from contextlib import ExitStack

        import torch


        class Engine:
            def __init__(self):
                self.kv_cache = torch.empty(4096, 4096)
                self._stack = ExitStack()
                self._stack.callback(print, "freed")

            def close(self):
                self.closed = True
        """)})
    assert _found(_check(root, "--select", "RL602")) == [("RL610", 12), ("RL614", 10)]
    assert _found(_check(root, "--select", "RL602", "--ignore", "RL614")) == [("RL610", 12)]
