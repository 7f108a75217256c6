"""The Action with `args` that would change what `retainlint check` prints or how it
exits: each is left out with a notice, the findings are still read and still fail the
step; and every output the script writes is declared in action.yml."""

from pathlib import Path

import pytest

from test_action import ACTION, commands, outputs, pr_run, run_script  # noqa: F401 - the fixture


@pytest.mark.parametrize("args", [
    "--statistics", "--diff", "--output-format concise", "--output-format=sarif",
    "--exit-zero --show-fixes", "-o report.txt", "--statistics --select RL5",
])
def test_output_changing_args_neither_crash_nor_let_a_finding_pass(pr_run, args):  # noqa: F811
    r = run_script(pr_run["env"], args=args)
    assert r.returncode == 1, r.stdout + r.stderr
    annotations = [c for c in commands(r.stdout) if c.startswith("::error ")]
    assert len(annotations) == 1 and annotations[0].startswith("::error file=old.py,line=8,")
    notices = [c for c in commands(r.stdout) if c.startswith("::notice")]
    assert notices and all("left out" in n for n in notices)
    assert outputs(pr_run["env"]["GITHUB_OUTPUT"])["findings"] == "1"
    assert not (pr_run["workspace"] / "report.txt").exists()


def test_every_output_written_is_declared(pr_run):  # noqa: F811
    r = run_script(pr_run["env"])
    assert r.returncode == 1
    written = set(outputs(pr_run["env"]["GITHUB_OUTPUT"]))
    assert written == set(ACTION["outputs"]), (written, set(ACTION["outputs"]))
    for name in written:
        assert ACTION["outputs"][name]["value"] == f"${{{{ steps.check.outputs.{name} }}}}"
    assert Path(pr_run["env"]["GITHUB_STEP_SUMMARY"]).is_file()
