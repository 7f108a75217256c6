"""The broken-fix probes (`../shared/probes/fixes/<case>/`, when this checkout sits beside
them): each `case.py` is reported, and the fix once offered for it broke `use.py`, which
exercises the object the way real code does. After `check --fix --unsafe-fixes` (a real
subprocess, on a copy), `python use.py` must still exit 0 - or no fix was offered."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import check_here

from retainlint.core.codes import split_codes

ROOT = Path(__file__).resolve().parents[2]
PROBES = ROOT.parent / "shared" / "probes" / "fixes"

# What each probe must end with: "unchanged" (no fix offered, the finding still
# reported), "silent" (not reported at all: the same code is a false-positive probe, read
# right since) or "fixed" (a fix applied and use.py still passing).
EXPECTED = {
    # unregistering `self.cleanup_connection_file` in `close()` loses its work at exit;
    # unregistering `self.close` alone frees nothing while that one keeps the instance
    "RL203_fix_unregisters_pending_exit_cleanup": "unchanged",
    "RL601_fix_none_breaks_hasattr_guard": "unchanged",
    "RL601_fix_nulls_collaborator_used_on_reuse": "silent",
    "RL601_fix_shadows_class_attribute": "silent",
    "RL602_fix_after_returning_try": "unchanged",
    "RL602_fix_breaks_free_then_alloc": "silent",
    "RL602_fix_drops_exception_reraised_after_close": "silent",
    "RL602_fix_nulls_data_read_after_shutdown": "unchanged",
}


def _folders() -> list[str]:
    if not PROBES.is_dir():
        return sorted(EXPECTED)
    return sorted(p.name for p in PROBES.iterdir() if (p / "case.py").is_file())


@pytest.mark.parametrize("name", _folders())
def test_fix_keeps_use_working(name, tmp_path):
    folder = PROBES / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is not here (the shared probes sit beside the checkout)")
    for part in ("case.py", "use.py"):
        shutil.copyfile(folder / part, tmp_path / part)  # copies the text, not the read-only mode
    before = (tmp_path / "case.py").read_text()
    code = name.split("_", 1)[0]
    # a probe named after a code since split into checks is reported by one of them
    codes = split_codes(code) or (code,)

    def reported(out: str) -> bool:
        return any(f" {c} " in out for c in codes)

    plain = check_here("check", "--no-cache", "--unsafe-fixes", "case.py", cwd=tmp_path)
    if EXPECTED.get(name) == "silent":
        assert not reported(plain.stdout) and plain.returncode == 0, plain.stdout + plain.stderr
        return
    assert reported(plain.stdout), plain.stdout + plain.stderr  # the probe is reported

    done = check_here("check", "--no-cache", "--fix", "--unsafe-fixes", "case.py", cwd=tmp_path)
    assert "RL000" not in done.stdout, done.stdout
    after = (tmp_path / "case.py").read_text()
    used = subprocess.run([sys.executable, "use.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    expected = EXPECTED.get(name)
    if expected == "unchanged" or (expected is None and after == before):
        assert after == before, f"a fix was applied:\n{plain.stdout}"
        assert "[*]" not in plain.stdout and "fixable" not in plain.stdout, plain.stdout
        assert reported(done.stdout) and done.returncode == 1, done.stdout
    else:
        assert after != before, f"no fix was applied:\n{plain.stdout}"
    assert used.returncode == 0, f"{used.stdout}{used.stderr}\n--- fixed case.py:\n{after}"
