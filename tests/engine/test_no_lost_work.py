"""Ctrl-C during `--fix` leaves every file either as it was or fully fixed, never
half-written, no temp file behind, and a one-line message with exit code 130."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import BUGGY, run_cli

FILES = 120
FILLER = "".join(f"\n\ndef helper_{i}(x, y=None):\n    return [x + k for k in range(y or 3)]\n"
                 for i in range(3))


def _source(i: int) -> str:
    """An RL501 case: its fix is unsafe, so every `--fix` here has `--unsafe-fixes`."""
    return BUGGY.replace("class Wrapper", f"class Wrapper{i}") + FILLER


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigint_during_fix_loses_nothing(tmp_path, jobs):
    tree, fixed_copy = tmp_path / "tree", tmp_path / "fixed"
    tree.mkdir()
    for i in range(FILES):
        (tree / f"m{i:03}.py").write_text(_source(i))
    original = {p.name: p.read_bytes() for p in tree.glob("*.py")}
    shutil.copytree(tree, fixed_copy)
    done = run_cli("check", "--fix", "--unsafe-fixes", "-j", "2", cwd=fixed_copy)
    assert done.returncode == 0, done.stdout
    fixed = {p.name: p.read_bytes() for p in fixed_copy.glob("*.py")}
    assert all(fixed[n] != original[n] for n in original)

    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "retainlint", "check", "--fix", "--unsafe-fixes", "-j", jobs],
        cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group: Ctrl-C reaches every worker
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if any((tree / n).read_bytes() != data for n, data in original.items()):
                break  # fixing has begun
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)

    assert proc.returncode == 130, out + err
    assert err.strip() == "retainlint: interrupted"
    assert "Traceback" not in out + err
    assert sorted(p.name for p in tree.glob("*.py")) == sorted(original)
    assert not list(tree.rglob("*.tmp"))  # no temp files left behind
    states = {n: "old" if (tree / n).read_bytes() == original[n] else
              "new" if (tree / n).read_bytes() == fixed[n] else "HALF" for n in original}
    assert "HALF" not in states.values()
    assert "new" in states.values() and "old" in states.values()  # interrupted mid-way


class _Reads:
    """Linux inotify (through ctypes): each time a file in `directory` that was opened for
    reading is closed, its name. Tells when the fixer has read the file, with no guessing
    at timings."""

    IN_CLOSE_NOWRITE = 0x10

    def __init__(self, directory) -> None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, os.fsencode(directory),
                                                 self.IN_CLOSE_NOWRITE) < 0:
            raise OSError(ctypes.get_errno(), "inotify")

    def names(self, timeout: float) -> list[str]:
        import select
        import struct

        if not select.select([self.fd], [], [], timeout)[0]:
            return []
        data, names = os.read(self.fd, 65536), []
        while data:
            _, _, _, size = struct.unpack_from("iIII", data)
            names.append(data[16:16 + size].rstrip(b"\0").decode())
            data = data[16 + size:]
        return names

    def close(self) -> None:
        os.close(self.fd)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses inotify")
def test_edit_saved_while_fix_runs_is_kept(tmp_path):
    # The user saves the file after retainlint has read it and before the fix is written:
    # the fix must not overwrite the edit. Every read of the file is followed by an edit,
    # so whatever read the fix came from, an edit the fixer never saw follows it.
    target = tmp_path / "model.py"
    target.write_text(_source(0) + FILLER * 100)  # a few tenths of a second to fix
    reads = _Reads(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "retainlint", "check", "--fix", "--unsafe-fixes", "--no-cache",
         "-j", "1", "--output-format", "concise"],
        cwd=tmp_path, env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    edits = 0
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            for _ in [n for n in reads.names(0.05) if n == "model.py"]:
                edits += 1
                with open(target, "a") as f:  # not read: that would be an event of its own
                    f.write(f"# saved by the user, edit {edits}\n")
        out, err = proc.communicate(timeout=120)
    finally:
        reads.close()
        if proc.poll() is None:
            proc.kill()
    assert edits >= 1
    assert "Traceback" not in out + err
    final = target.read_text()
    assert [n for n in range(1, edits + 1) if f"edit {n}\n" not in final] == []  # none lost
    assert "model.py:1:1: RL000 cannot write fix: file changed while being fixed " \
           "(left unchanged)" in out.splitlines()
    assert proc.returncode == 1
