"""Runtime verifier: the parts that need no torch (probe choice, the CUDA probe against a fake
torch, verdicts, scenario wiring, expect_released on plain objects, the linter never importing
torch). The subprocess runs with real models are in test_verify_runtime.py."""

import atexit
import subprocess
import sys

import pytest

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
VERIFIED = {"RL101", "RL102", "RL201", "RL202", "RL203", "RL204", "RL301", "RL302", "RL303", "RL304",
            "RL305", "RL401", "RL501", "RL502", "RL601", "RL602", "RL603", "RL701", "RL702", "RL801",
            "RL901", "RL902", "RL904"}


def test_scenarios_cover_rules_and_use_the_autofix():
    rules = {r.code: r for r in all_rules()}
    scenarios = discover(DEFAULT_ROOT)
    assert {s.rule for s in scenarios} == VERIFIED == set(rules)
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
        _last_error.append(e)
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


def test_missing_torch_hint_keeps_the_extra_and_is_one_line():
    # A Python where torch cannot be found: the hint must name the extra, `[verify]` included
    # (rich markup would take it for a style tag and drop it).
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
    assert "--model torch-mlp needs torch: pip install 'retainlint[verify]'" in proc.stderr
