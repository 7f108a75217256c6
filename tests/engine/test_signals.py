"""SIGTERM or SIGKILL of `check --fix -j 2` mid-run: no worker outlives the command, no file
changes once it is gone, every file is as it was or fully fixed, and SIGTERM ends the run as
Ctrl-C does (the file in hand finished, exit 130)."""

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import BUGGY, run_cli
from retainlint.engine.workers import Workers

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

FILES = 200  # far more than POOL_THRESHOLD: batches of one file, spread over the workers
FILLER = "".join(f"\n\ndef helper_{i}(x, y=None):\n    return [x + k for k in range(y or 3)]\n"
                 for i in range(3))


@pytest.fixture(scope="module")
def versions(tmp_path_factory) -> dict:
    """Each file's source before and after a full `--fix` run: name -> (old, new). The files
    are RL501 cases, whose fix is unsafe: every `--fix` here has `--unsafe-fixes`."""
    tree = tmp_path_factory.mktemp("reference")
    for i in range(FILES):
        (tree / f"m{i:03}.py").write_text(BUGGY.replace("class Wrapper", f"class Wrapper{i}") + FILLER)
    old = {p.name: p.read_bytes() for p in tree.glob("*.py")}
    done = run_cli("check", "--fix", "--unsafe-fixes", "--no-cache", "-j", "2", cwd=tree)
    assert done.returncode == 0, done.stdout + done.stderr
    both = {n: (data, (tree / n).read_bytes()) for n, data in old.items()}
    assert all(new != data for data, new in both.values())
    return both


def _group(pgid: int) -> list[int]:
    """The live processes of a process group (not zombies: an orphan's exit is reaped by
    whoever adopted it, if ever)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue  # not a process, or gone meanwhile
        state, _ppid, group = stat.rsplit(")", 1)[1].split()[:3]
        if int(group) == pgid and state != "Z":
            found.append(int(entry.name))
    return found


def _fix_then_signal(tmp_path: Path, versions: dict, send) -> tuple[Path, subprocess.Popen]:
    """`check --fix --unsafe-fixes -j 2` over the old files in a session of its own, signalled with
    `send(pid)` once it has written its first fix. Its output goes to files: a worker left
    behind would hold a pipe open."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name, (old, _) in versions.items():
        (tree / name).write_bytes(old)
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "retainlint", "check", "--fix", "--unsafe-fixes",
                                 "--no-cache", "-j", "2"], cwd=tree, env={**os.environ, "NO_COLOR": "1"},
                                stdout=out, stderr=err, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if any((tree / n).read_bytes() != old for n, (old, _) in versions.items()):
            break
        time.sleep(0.005)
    send(proc.pid)
    return tree, proc


def _left_behind(proc: subprocess.Popen) -> list[int]:
    """Wait for the command, then up to 15 s for its process group to empty: who is left."""
    try:
        proc.wait(timeout=120)
        deadline = time.monotonic() + 15
        while _group(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return _group(proc.pid)
    finally:
        for pid in _group(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _states(tree: Path, versions: dict) -> dict:
    found = {p.name: p.read_bytes() for p in tree.iterdir()}
    assert sorted(found) == sorted(versions), "a file appeared (a temp file?) or went"
    return {n: "old" if data == versions[n][0] else "new" if data == versions[n][1] else "HALF"
            for n, data in found.items()}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_signal_to_the_main_process_during_fix(tmp_path, versions, signum):
    tree, proc = _fix_then_signal(tmp_path, versions, lambda pid: os.kill(pid, signum))
    assert _left_behind(proc) == [], "workers outlived the command"

    mtimes = {p.name: p.stat().st_mtime_ns for p in tree.iterdir()}
    time.sleep(1)
    assert {p.name: p.stat().st_mtime_ns for p in tree.iterdir()} == mtimes, \
        "files changed after the command was gone"
    states = _states(tree, versions)
    assert "HALF" not in states.values()
    assert "new" in states.values() and "old" in states.values(), "not stopped mid-way"
    if signum == signal.SIGTERM:  # as Ctrl-C: the files in hand finished, one line, 130
        err = (tmp_path / "err").read_text()
        assert (proc.returncode, err.strip()) == (130, "retainlint: interrupted"), err
    else:
        assert proc.returncode == -signal.SIGKILL


def test_sigterm_to_the_process_group_during_fix(tmp_path, versions):
    # What a CI runner cancelling a job may send: every process of the group gets it.
    tree, proc = _fix_then_signal(tmp_path, versions, lambda pid: os.killpg(pid, signal.SIGTERM))
    assert _left_behind(proc) == []
    err = (tmp_path / "err").read_text()
    assert (proc.returncode, err.strip()) == (130, "retainlint: interrupted"), err
    assert "HALF" not in _states(tree, versions).values()


def _read_forever(flag) -> None:
    while True:
        flag.is_set()


def test_a_worker_ended_while_reading_the_stop_flag_does_not_hold_up_the_run():
    # When the whole group gets SIGTERM, a worker may die at any instant, also mid-way
    # through reading whether the run was stopped: the main process must still stop it.
    with Workers(2) as pool:
        pool.pool()
        flag = pool.stop
        for _ in range(30):
            reader = multiprocessing.get_context("fork").Process(target=_read_forever, args=(flag,))
            reader.start()
            time.sleep(0.02)
            os.kill(reader.pid, signal.SIGTERM)
            reader.join()
        setter = threading.Thread(target=flag.set, daemon=True)
        setter.start()
        setter.join(timeout=10)
        assert not setter.is_alive(), "setting the stop flag waits for a process that is gone"
        assert flag.is_set()
