"""Runtime verifier: the parts that need no torch (probe choice, the CUDA probe against a fake
torch, verdicts, scenario wiring, expect_released on plain objects, the linter never importing
torch). The subprocess runs with real models are in test_verify_runtime.py."""

import atexit
import importlib.util
import io
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from rich.cells import cell_len
from rich.console import Console

from retainlint.core.finding import Applicability
from retainlint.engine.registry import all_rules
from retainlint.verify import RetainedError, expect_released
from retainlint.verify import probe, report
from retainlint.verify.discovery import DEFAULT_ROOT, discover, fixed_source

MiB = 1024 * 1024


# -- probe choice: CUDA vs CPU, decided without a GPU --------------------------------------------
@pytest.mark.parametrize("requested,cuda,expected", [
    ("auto", False, "cpu"), ("auto", True, "cuda"), ("cpu", True, "cpu"), ("cpu", False, "cpu"),
    ("cuda", True, "cuda"),
])
def test_choose_device(requested, cuda, expected):
    assert probe.choose_device(requested, cuda) == expected


def test_cuda_requested_without_cuda_is_an_error_not_a_cpu_run():
    with pytest.raises(probe.DeviceError, match="no CUDA device"):
        probe.choose_device("cuda", False)


def test_choose_probe():
    assert probe.choose_probe("cuda") == "cuda_memory_allocated"
    assert probe.choose_probe("cpu") == "tracked_storage"


class _FakeCuda:
    def __init__(self, allocated):
        self.allocated = allocated
        self.calls = []

    def device_count(self):
        return len(self.allocated)

    def synchronize(self, index):
        self.calls.append(("sync", index))

    def empty_cache(self):
        self.calls.append(("empty_cache", None))

    def memory_allocated(self, index):
        self.calls.append(("allocated", index))
        return self.allocated[index]

    def memory_reserved(self, index):  # pragma: no cover - must never be used
        raise AssertionError("memory_reserved counts cached blocks: not a retention probe")


class _FakeTorch:
    def __init__(self, allocated):
        self.cuda = _FakeCuda(allocated)
        self.cleared = 0
        outer = self

        class _C:
            @staticmethod
            def _cuda_clearCublasWorkspaces():
                outer.cleared += 1
                outer.cuda.calls.append(("clear", None))

        self._C = _C


def test_cuda_probe_synchronizes_clears_workspaces_and_sums_devices():
    fake = _FakeTorch([3 * MiB, 5 * MiB])
    assert probe.cuda_allocated(fake) == 8 * MiB
    kinds = [c[0] for c in fake.cuda.calls]
    assert kinds.index("clear") < kinds.index("empty_cache") < kinds.index("allocated")
    assert max(i for i, k in enumerate(kinds) if k == "sync") < kinds.index("allocated")
    assert fake.cleared == 1


def test_cuda_probe_without_workspace_hook():
    fake = _FakeTorch([MiB])
    del fake._C
    fake._C = type("C", (), {})
    assert probe.cuda_allocated(fake) == MiB


# -- verdicts ---------------------------------------------------------------------------------------
def _r(alive, retained, target=64 * MiB, error=None):
    return {"alive": alive, "retained_bytes": retained, "target_bytes": target, "error": error}


@pytest.mark.parametrize("before,after,expected", [
    (_r(True, 64 * MiB), _r(False, 0), "freed"),
    (_r(True, 64 * MiB), _r(False, MiB // 2), "freed"),  # within tolerance
    (_r(False, 0), _r(False, 0), "not reproduced"),
    (_r(True, 10 * MiB), _r(False, 0), "not reproduced"),  # below the 90 % positive control
    (_r(True, 64 * MiB), _r(True, 64 * MiB), "fix ineffective"),
    (_r(True, 64 * MiB), _r(False, 64 * MiB), "fix ineffective"),  # model dead, weights held
    (_r(True, 64 * MiB), _r(True, 0), "fix ineffective"),
    (_r(True, 64 * MiB), _r(None, None, error="boom"), "error"),
])
def test_verdict(before, after, expected):
    assert report.verdict(before, after) == expected


# -- scenarios ---------------------------------------------------------------------------------------
# The rules the verifier proves: every registered rule. A rule added later gets its scenario
# in retainlint/verify/scenarios/<CODE>/ and its code here.
VERIFIED = {"RL101", "RL102", "RL201", "RL202", "RL203", "RL204", "RL301", "RL302", "RL303",
            "RL304", "RL305", "RL306", "RL307", "RL401", "RL501", "RL502", "RL601", "RL604",
            "RL605", "RL606", "RL607", "RL609", "RL610", "RL611", "RL612", "RL613", "RL614",
            "RL615", "RL616", "RL701", "RL702", "RL703", "RL801", "RL901", "RL902", "RL904", "RL905",
            "RL906", "RL907", "RL910", "RL913"}
# What the verifier cannot measure: RL608 leaves blocks reserved by the device's caching
# allocator - `memory_reserved()`, not an object kept alive - and a CPU has no such cache;
# RL908's windows are owned by Qt parents, RL909's and RL911's handlers by GObjects and
# RL912's by a D-Bus connection, and the verifier installs neither Qt, PyGObject nor dbus-python.
UNMEASURED = {"RL608", "RL908", "RL909", "RL911", "RL912"}


def test_scenarios_cover_rules_and_use_the_autofix():
    rules = {r.code: r for r in all_rules()}
    scenarios = discover(DEFAULT_ROOT)
    assert {s.rule for s in scenarios} == VERIFIED == set(rules) - UNMEASURED
    for s in scenarios:
        autofix = rules[s.rule].fix_applicability is not Applicability.NONE
        if autofix:
            # never hand-written: the fixed variant comes from retainlint's own autofix
            assert s.fixed_path is None, s.path
            data, how = fixed_source(s)
            assert how == "autofix" and data != s.path.read_bytes()
        else:
            assert s.fixed_path is not None
            assert s.fixed_path.read_text().startswith("# HAND-WRITTEN FIX: "), s.fixed_path
            assert fixed_source(s)[1] == "hand-written"
        assert "def lifecycle(ctx):" in s.path.read_text()


def test_wrong_fix_scenario_is_not_run_by_default():
    assert all("wrong_fix" not in str(s.path) for s in discover(DEFAULT_ROOT))
    [s] = discover(DEFAULT_ROOT / "wrong_fix")
    assert fixed_source(s)[1] == "hand-written"


def test_rule_filter_and_unknown_rule():
    assert {s.rule for s in discover(DEFAULT_ROOT, ["RL301"])} == {"RL301"}
    with pytest.raises(Exception, match="unknown rule"):
        discover(DEFAULT_ROOT, ["RL999"])


# -- the text report at the width of a terminal ---------------------------------------------------
LONG_CHAIN = ("module torch.nn.modules.module global _global_forward_hooks -> OrderedDict(len=1)[0] "
              "-> bound method LayerProfiler._record.__self__ -> LayerProfiler.model -> Sequential (nn.Module)")


def _side(alive, retained, holder=None, rule=None, error=None):
    return {"alive": alive, "retained_bytes": retained, "target_bytes": 64 * MiB, "device": "cpu",
            "probe": "tracked_storage", "error": error,
            "holder": {"chain": holder, "rule": rule, "finding": "profiler.py:18"} if holder else None}


def _rendered(rows, width):
    buffer = io.StringIO()
    report.text(Console(file=buffer, width=width, no_color=True, highlight=False, soft_wrap=True), rows,
                width=width)
    return buffer.getvalue()


@pytest.mark.parametrize("width", [80, 100])
def test_text_report_fits_the_terminal_with_rule_and_verdict_whole(width):
    scenario = SimpleNamespace(rule="RL501", name="global_forward_hook_profiler")
    rows = [
        report.row(scenario, "autofix", "torch-mlp", 1, _side(True, 64 * MiB, LONG_CHAIN, "RL501"),
                   _side(False, 0)),
        report.row(SimpleNamespace(rule="RL304", name="forward_cache"), "hand-written", "torch-mlp", 1,
                   _side(True, 64 * MiB, LONG_CHAIN, "RL304"), _side(True, 64 * MiB, LONG_CHAIN, "RL304")),
        report.row(SimpleNamespace(rule="RL102", name="cached_instance_method"), "hand-written", "torch-mlp",
                   1, _side(None, None, error="Traceback ...\nImportError: no module named x"), _side(False, 0)),
    ]
    out = _rendered(rows, width)
    lines = out.splitlines()
    assert max(cell_len(line) for line in lines) <= width, out
    assert "RL501 global_forward_hook_profiler: freed" in lines
    assert "RL304 forward_cache: fix ineffective" in lines
    assert "RL102 cached_instance_method: error" in lines
    # the chain wraps at its arrows, every piece indented under its block, nothing cut
    assert " ".join(line.strip() for line in lines).count(
        LONG_CHAIN + "  [RL501, profiler.py:18]") == 1
    assert "ImportError: no module named x" in out
    assert "…" not in out and "..." not in out.replace("Traceback ...", "")


def test_text_report_unwrapped_without_a_width():
    """Piped with no COLUMNS: each holder chain stays on one line (grep finds it whole)."""
    rows = [report.row(SimpleNamespace(rule="RL501", name="profiler"), "autofix", "torch-mlp", 1,
                       _side(True, 64 * MiB, LONG_CHAIN, "RL501"), _side(False, 0))]
    buffer = io.StringIO()
    report.text(Console(file=buffer, width=80, no_color=True, soft_wrap=True), rows, width=None)
    assert any(LONG_CHAIN in line for line in buffer.getvalue().splitlines())


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the verifier needs torch")
def test_verify_at_100_columns_shows_rule_and_verdict_whole():
    """A real run of one scenario, its output at COLUMNS=100 as a user's terminal shows it."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    proc = subprocess.run([sys.executable, "-m", "retainlint", "verify", "--rule", "RL301"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= 100, proc.stdout
    assert "RL301 language_model_cache: freed" in lines, proc.stdout
    joined = " ".join(line.strip() for line in lines)
    assert "global _language_model_by_module -> dict(len=1) key -> Sequential (nn.Module)" in joined


# -- expect_released on plain objects ---------------------------------------------------------------
class Engine:
    def __init__(self):
        self.payload = bytearray(10)

    def shutdown(self):
        pass


_registry = {}


def test_expect_released_passes_when_freed():
    holder = {"engine": Engine()}
    with expect_released(holder["engine"]):
        holder.clear()


def test_expect_released_fails_with_the_holder_chain():
    holder = {"engine": Engine()}
    with pytest.raises(RetainedError) as info:
        with expect_released(holder["engine"]):
            _registry["current"] = holder.pop("engine")
    _registry.clear()
    message = str(info.value)
    assert f"module {__name__} global _registry -> dict(len=1)['current'] -> Engine" in message


def test_expect_released_names_a_local_of_the_test():
    engine = Engine()
    with pytest.raises(RetainedError, match=r"frame test_expect_released_names_a_local_of_the_test .* local engine -> Engine"):
        with expect_released(engine):
            engine.shutdown()
    del engine


def test_expect_released_finds_holders_invisible_to_gc():
    import weakref

    holder = {"engine": Engine()}
    ref = weakref.ref(holder["engine"])
    atexit.register(holder["engine"].shutdown)
    try:
        with pytest.raises(RetainedError, match=r"held from C .*bound method Engine.shutdown.__self__ -> Engine.*RL203"):
            with expect_released(holder["engine"]):
                holder.clear()
    finally:
        if ref() is not None:
            atexit.unregister(ref().shutdown)


_by_id = {}
_last_error = []


def test_an_id_keyed_registry_reads_stably_and_maps_to_rl305():
    holder = {"engine": Engine()}
    _by_id[id(holder["engine"])] = holder["engine"]
    with pytest.raises(RetainedError) as info:
        with expect_released(holder["engine"]):
            holder.clear()
    _by_id.clear()
    assert f"module {__name__} global _by_id -> dict(len=1)[id(Engine)] -> Engine  [RL305]" in str(info.value)


def _fail(engine):
    raise ValueError("engine failed")


def test_a_stored_exception_shows_the_frame_that_holds_the_object():
    holder = {"engine": Engine()}
    try:
        _fail(holder["engine"])
    except ValueError as e:
        _last_error.append(e)  # noqa: RL702 - kept on purpose: the test reads the path it makes
    with pytest.raises(RetainedError) as info:
        with expect_released(holder["engine"]):
            holder.clear()
    _last_error.clear()
    assert (f"module {__name__} global _last_error -> list(len=1)[0] -> ValueError.__traceback__ -> traceback.tb_next"
            " -> traceback.tb_frame -> frame _fail local engine -> Engine  [RL702]") in str(info.value)


def test_expect_released_does_not_hide_the_block_error():
    holder = {"engine": Engine()}
    with pytest.raises(ValueError):
        with expect_released(holder["engine"]):
            raise ValueError("from the block")


# -- the linter never imports torch -----------------------------------------------------------------
def test_check_and_verify_help_do_not_import_torch(tmp_path):
    (tmp_path / "m.py").write_text("import torch\n\nx = torch.zeros(3)\n")
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from retainlint.cli import main\n"
        f"r = CliRunner().invoke(main, ['check', {str(tmp_path / 'm.py')!r}, '--no-cache'])\n"
        "assert r.exit_code == 0, r.output\n"
        "r = CliRunner().invoke(main, ['verify', '--help'])\n"
        "assert r.exit_code == 0 and '--model' in r.output, r.output\n"
        "import retainlint.verify\n"
        "assert 'torch' not in sys.modules, 'the linter imported torch'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)


def test_missing_torch_hint_names_the_package_and_is_one_line():
    # A Python where torch cannot be found: the hint names torch itself, as the `verify`
    # extra pins it (retainlint is not on the package index: `retainlint[verify]` finds nothing).
    code = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'torch' else real(name, *a)\n"
        "from retainlint.cli import main\n"
        "sys.argv = ['retainlint', 'verify']\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "--model torch-mlp needs torch: pip install \"torch>=2.1\"" in proc.stderr
