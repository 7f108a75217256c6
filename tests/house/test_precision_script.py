"""scripts/precision.py end to end: a triage folder and a fetched tree on disk, the real CLI run
on that tree as a subprocess, and the table the script prints."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "precision.py"

# Two findings of the shipped rules on a plain file: RL102 (a method cached for the whole
# process) and RL101 (a module-level cache keyed by the caller's model).
TREE = textwrap.dedent(
    """\
    import functools

    import torch


    class Engine:
        @functools.lru_cache(maxsize=None)
        def shape(self, x):
            return x


    @functools.lru_cache(maxsize=None)
    def describe(model: torch.nn.Module):
        return str(model)
    """
)


def _findings(tree: Path) -> list[tuple[int, str, str]]:
    import json

    done = subprocess.run([str(Path(sys.executable).parent / "retainlint"), "check", ".",
                           "--no-cache", "--output-format", "json", "--exit-zero"],
                          cwd=tree, capture_output=True, text=True, check=True)
    return [(f["location"]["row"], f["code"], f["severity"]) for f in json.loads(done.stdout)]


def _run(tmp_path: Path, triage_text: str, *args: str, name: str = "timm-1.0.31"):
    cache = tmp_path / "corpora"
    tree = cache / "timm-1.0.31"
    tree.mkdir(parents=True)
    (tree / "engine.py").write_text(TREE)
    (tree / ".complete").touch()  # the fetch is answered from the cache, nothing downloaded
    triage = tmp_path / "triage"
    triage.mkdir()
    (triage / "README.md").write_text("# not a tree\n")
    (triage / f"{name}.md").write_text(triage_text)
    env = {**os.environ, "RETAINLINT_CORPORA": str(cache)}
    done = subprocess.run([sys.executable, str(SCRIPT), "--triage", str(triage), *args],
                          capture_output=True, text=True, env=env)
    return done, tree


def _row(out: str, first: str) -> list[str]:
    [line] = [ln for ln in out.splitlines() if ln.startswith(f"| {first} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_new_verdict_lines_are_counted_and_old_ones_are_not(tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "engine.py").write_text(TREE)
    found = sorted(_findings(probe))
    assert len(found) == 2, found
    (row_a, code_a, sev_a), (row_b, code_b, sev_b) = found
    text = (f"# Triage\n\n## Findings\n\n"
            f"- `engine.py:{row_a}` {code_a} {sev_a} bug - the cache keeps every engine\n"
            f"- `engine.py:{row_b}` {code_b} true - an old-format line: no longer counted\n")
    done, _ = _run(tmp_path, text)
    assert done.returncode == 0, done.stderr
    cells = _row(done.stdout, "timm 1.0.31")
    # findings, bug, negligible, wrong, unread
    assert cells[1:6] == ["2", "1", "0", "0", "1"], done.stdout
    errors = [s for _, _, s in found].count("error")
    assert cells[6] == str(errors)
    total = _row(done.stdout, "**all**")
    assert total[1:6] == ["2", "1", "0", "0", "1"]


def test_shares_of_errors_shown_and_wrong(tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "engine.py").write_text(TREE)
    found = sorted(_findings(probe))
    lines = []
    for row, code, sev in found:
        verdict = "bug" if sev == "error" else "wrong"
        lines.append(f"- `engine.py:{row}` {code} {sev} {verdict} - why")
    done, _ = _run(tmp_path, "## Findings\n\n" + "\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    cells = _row(done.stdout, "timm 1.0.31")
    errors = sum(sev == "error" for _, _, sev in found)
    bugs, wrong = errors, len(found) - errors
    assert cells[1:6] == [str(len(found)), str(bugs), "0", str(wrong), "0"]
    assert cells[6] == str(errors)
    assert cells[7] == (f"{errors} (100%)" if errors else "0 (-)")
    # every finding is error or warning today, so all of them are shown
    assert cells[8] == str(len(found))
    assert cells[9] == f"{bugs} ({bugs / len(found):.0%})"
    assert cells[10] == f"{wrong / len(found):.0%}"


def test_a_tree_not_in_the_development_mapping_is_a_one_line_error(tmp_path):
    done, _ = _run(tmp_path, "## Findings\n", name="nosuchtree-9.9.9")
    assert done.returncode != 0
    assert "nosuchtree-9.9.9.md" in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_notes_file_that_names_no_tree_is_left_out(tmp_path):
    text = "- `engine.py:7` RL102 warning negligible - small\n"
    done, tree = _run(tmp_path, text)
    (tmp_path / "triage" / "fixes-first-run.md").write_text(text)
    done = subprocess.run([sys.executable, str(SCRIPT), "--triage", str(tmp_path / "triage")],
                          capture_output=True, text=True,
                          env={**os.environ, "RETAINLINT_CORPORA": str(tree.parent)})
    assert done.returncode == 0, done.stderr
    assert [ln.split("|")[1].strip() for ln in done.stdout.splitlines()[2:]] == [
        "timm 1.0.31", "**all**"]


def test_conflicting_verdicts_are_a_one_line_error(tmp_path):
    text = ("- `engine.py:7` RL102 warning bug - one\n"
            "- `engine.py:7` RL102 warning wrong - other\n")
    done, _ = _run(tmp_path, text)
    assert done.returncode != 0
    assert "timm-1.0.31.md" in done.stderr and "engine.py:7" in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_option_scores_the_given_executable(tmp_path):
    fake = tmp_path / "fake-retainlint"
    # A retainlint that finds one hidden-level finding: counted, but not shown by default.
    fake.write_text("#!/bin/sh\n"
                    "echo '[{\"code\": \"RL102\", \"severity\": \"info\", \"filename\": "
                    "\"engine.py\", \"location\": {\"row\": 7, \"column\": 5}}]'\n")
    fake.chmod(0o755)
    done, _ = _run(tmp_path, "- `engine.py:7` RL102 warning negligible - small\n",
                   "--cli", str(fake))
    assert done.returncode == 0, done.stderr
    cells = _row(done.stdout, "timm 1.0.31")
    assert cells[1:6] == ["1", "0", "1", "0", "0"]
    assert cells[8] == "0"  # shown
    assert cells[9] == "0 (-)"
