"""Leak mode (`pytest --retainlint-leaks`) on a real pytest run of a small project
(fixtures/leak_projects/incidents/): five real incidents, each caught with the line that made
the holder chain and the rule whose static finding it confirms; their fixed twins are clean;
a leak no rule reports is shown as runtime only; what a module-scope fixture holds is its
own until its teardown, checked then; a project type piling up across tests is reported."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="the leak-mode fixture project uses torch: pip install -e '.[verify]'")

PROJECT = Path(__file__).resolve().parents[2] / "fixtures" / "leak_projects" / "incidents"
LISTED = ("modelzoo.gradcam.ActivationsAndGradients,modelzoo.gradcam_fixed.ActivationsAndGradients,"
          "modelzoo.tracer.Writer,modelzoo.tracer_fixed.Writer")


def run_pytest(cwd, *options):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
                          cwd=cwd, capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("leaks") / "incidents"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns("__pycache__"))
    done = run_pytest(root, "--retainlint-leaks", "--retainlint-leaks-json", "leaks.json",
                      "--retainlint-leak-types", LISTED)
    assert done.returncode == 0, done.stdout + done.stderr
    leaks = json.loads((root / "leaks.json").read_text())["leaks"]
    return root, done.stdout, leaks


def leaks_of(leaks, test):
    return [d for d in leaks if d["test"] == f"tests/{test}"]


def rel(root, where):
    path, line = where.rsplit(":", 1)
    return f"{os.path.relpath(path, root)}:{line}"


# (test, what survives, the line that made the chain (None: nothing on it is traced on this
# Python), the rule, its static finding)
INCIDENTS = [
    # zeno#525: lru_cache on a method keeps every Predictor, hence its model
    ("test_bugs.py::test_lru_cache_on_method", "TinyNet (nn.Module)", None, "RL102", "predictor.py:11"),
    # redis-vl-python#656: weakref.finalize(self, self.disconnect)
    ("test_bugs.py::test_finalize_holds_owner", "TinyNet (nn.Module)", "modelzoo/index.py:8", "RL202",
     "index.py:8"),
    # gdspy#134 / loopy#671: a module-level dict keyed by the model
    ("test_bugs.py::test_module_dict_keyed_by_model", "TinyNet (nn.Module)", "modelzoo/stats.py:9", "RL301",
     "stats.py:4"),
    # pytorch-grad-cam#133: a forward hook with a bound method, its handle dropped
    ("test_bugs.py::test_forward_hook_handle_dropped", "modelzoo.gradcam.ActivationsAndGradients",
     "modelzoo/gradcam.py:9", "RL501", "gradcam.py:9"),
    # dd-trace-py#2409: atexit.register(self._atexit) per instance
    ("test_bugs.py::test_atexit_per_instance", "modelzoo.tracer.Writer", "modelzoo/tracer.py:16", "RL203",
     "tracer.py:16"),
    # opentelemetry-python#4449: os.register_at_fork(after_in_child=self._at_fork_reinit)
    ("test_bugs.py::test_at_fork_hook_holds_processor", "TinyNet (nn.Module)", "modelzoo/exporters.py:10",
     "RL203", "exporters.py:10"),
    # asphalt#21: a WeakKeyDictionary whose value (the bound signal) holds its key
    ("test_bugs.py::test_signal_bound_to_model", "MonitoredNet (nn.Module)", None, "RL304", "signals.py:18"),
]


@pytest.mark.parametrize("test,what,created,rule,finding", INCIDENTS, ids=[i[0].split("::")[1] for i in INCIDENTS])
def test_incident_caught_with_line_and_rule(run, test, what, created, rule, finding):
    root, out, leaks = run
    [leak] = leaks_of(leaks, test)
    assert leak["what"] == what
    assert leak["when"] == "test"
    assert leak["rule"] == rule and leak["finding"] == finding
    assert leak["verdict"] == f"confirmed at runtime: {rule} reported at {finding}"
    if created is not None:
        assert rel(root, leak["created_at"]) == created
    elif sys.version_info < (3, 12):  # a plain instance carries no traceback on 3.11
        assert leak["created_at"] is None
    assert leak["cpu_bytes"] > 0
    assert f"{rule} @ {finding}" in out


def test_fixed_twins_are_clean(run):
    _root, out, leaks = run
    assert [d for d in leaks if "test_fixed.py" in d["test"]] == []
    assert "test_fixed.py" not in out.split("retainlint leaks", 1)[1]


def test_runtime_only_leak_is_shown_as_such(run):
    root, out, leaks = run
    [leak] = leaks_of(leaks, "test_bugs.py::test_run_history")
    assert leak["what"] == "TinyNet (nn.Module)"
    assert leak["held_by"].startswith("module modelzoo.history global _state -> _local")
    assert leak["held_by"].endswith("['refresh'] -> function modelzoo.history.record.<locals>.<lambda> -> "
                                    "tuple(len=1)[0] -> cell.cell_contents -> Run.model -> TinyNet (nn.Module)")
    assert rel(root, leak["created_at"]) == "modelzoo/history.py:10"
    assert leak["finding"] is None and leak["runtime_only"] is True
    assert leak["verdict"].startswith("no rule covers this: runtime only")
    assert "none (runtime only)" in out


def test_module_fixture_holds_are_checked_at_its_teardown(run):
    _root, _out, leaks = run
    scoped = [d for d in leaks if "test_scoped.py" in d["test"]]
    # the model a test put in the module fixture `zoo` is the fixture's; the tracer of the
    # module fixture `shared_tracer` leaks past that fixture's teardown (atexit)
    assert [(d["when"], d["what"], d["rule"]) for d in scoped] == [
        ("fixture shared_tracer (module) teardown", "modelzoo.tracer.Writer", "RL203")]


def test_growing_project_type_is_reported_once(run):
    _root, _out, leaks = run
    [leak] = [d for d in leaks if d["when"] == "growth"]
    assert leak["what"] == "modelzoo.events.Listener (one more alive after each of 3 tests)"
    assert leak["tests"] == [f"tests/test_growth.py::test_subscribe[{n}]" for n in "abc"]
    assert leak["held_by"].startswith("module modelzoo.events global _LISTENERS -> list(len=3)")


def test_terminal_table(run):
    _root, out, leaks = run
    summary = out.split("=" * 20 + " retainlint leaks " + "=" * 20, 1)[1]
    assert f"retainlint leaks: {len(leaks)} object(s) outlived their test" in summary
    assert "tests/test_bugs.py::test_atexit_per_instance" in summary
    assert "held by: held from C (1 reference(s) invisible to gc, e.g. atexit): bound method Tracer._atexit" \
        in summary


def test_check_confirmed_by_marks_the_findings_the_run_saw(run):
    """`retainlint check --confirmed-by leaks.json` adds `confirmed` (the test) to exactly the
    static findings a leak-mode run tied a survivor to; a file that is not leak output is a
    one-line error naming it."""
    root, _out, leaks = run
    done = subprocess.run([sys.executable, "-m", "retainlint", "check", "modelzoo", "--no-cache",
                           "--min-severity", "info", "--output-format", "json", "--exit-zero",
                           "--confirmed-by", "leaks.json"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    confirmed = {(os.path.basename(f["filename"]), f["location"]["row"], f["code"]): f["confirmed"]
                 for f in json.loads(done.stdout) if "confirmed" in f}
    expected = {(finding.split(":")[0], int(finding.split(":")[1]), rule): f"tests/{test}"
                for test, _what, _created, rule, finding in INCIDENTS}
    assert confirmed == expected
    (root / "other.json").write_text('{"a": 1}')
    done = subprocess.run([sys.executable, "-m", "retainlint", "check", "modelzoo", "--no-cache",
                           "--confirmed-by", "other.json"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "retainlint: error: other.json: not a `pytest --retainlint-leaks-json` file (no \"format\": \"retainlint-leaks/1\")"]
