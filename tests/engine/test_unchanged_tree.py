"""A run over a tree where no file changed since the last run reads no file: each file's
stat (size, modification and change times, inode) stands for its content, as in git's
index, unless the file changed too close to the run for that (RACY_NS)."""

import os
import textwrap
import time
from pathlib import Path

import pytest

from conftest import run_cli
from retainlint.core.config import Settings
from retainlint.engine import runner
from retainlint.engine.registry import all_rules

CODES = [r.code for r in all_rules()]
CACHED_METHOD = textwrap.dedent("""\
    import functools


    class Engine:
        @functools.lru_cache(maxsize=None)
        def plan(self, key):  # noqa: RL999
            return key
""")


@pytest.fixture
def reads(monkeypatch):
    """The files the runs read, in order."""
    seen: list[str] = []
    read = runner.read_python

    def reading(path):
        seen.append(Path(path).name)
        return read(path)

    monkeypatch.setattr(runner, "read_python", reading)
    monkeypatch.setattr(runner, "RACY_NS", 0)  # the files below were all just written
    return seen


def _run(root: Path, paths=None):
    paths = paths or sorted(str(p) for p in root.rglob("*.py"))
    return runner.run(paths, CODES, Settings(root=root), runner.Mode(), jobs=1,
                      cache_dir=root / ".cache")


def _seen(result):
    return sorted((Path(f.path).name, f.start.line, f.code) for f in result.findings), result.notes


def test_nothing_changed_reads_no_file_and_reports_the_same(tmp_path, reads):
    (tmp_path / "engine.py").write_text(CACHED_METHOD)
    (tmp_path / "other.py").write_text("VALUE = 1\n")
    first = _run(tmp_path)
    assert sorted(reads) == ["engine.py", "other.py"]
    reads.clear()
    again = _run(tmp_path)
    assert reads == []
    assert _seen(again) == _seen(first)
    assert [code for _, _, code in _seen(again)[0]] == ["RL102"]
    assert again.notes == [f"{tmp_path / 'engine.py'}:6: `# noqa` names no rule of retainlint: RL999"]


def test_an_edit_that_keeps_size_and_modification_time_is_seen(tmp_path, reads):
    engine = tmp_path / "engine.py"
    engine.write_text(CACHED_METHOD)
    assert [code for _, _, code in _seen(_run(tmp_path))[0]] == ["RL102"]
    before = os.stat(engine)
    clean = CACHED_METHOD.replace("@functools.lru_cache(maxsize=None)", "@staticmethod" + " " * 21)
    assert len(clean) == len(CACHED_METHOD)
    engine.write_text(clean)
    os.utime(engine, ns=(before.st_atime_ns, before.st_mtime_ns))  # the change time still moves
    reads.clear()
    assert _seen(_run(tmp_path))[0] == []
    assert reads == ["engine.py"]


def test_a_file_changed_just_before_the_run_is_read_again_next_time(tmp_path, reads, monkeypatch):
    (tmp_path / "engine.py").write_text(CACHED_METHOD)
    monkeypatch.setattr(runner, "RACY_NS", 3600 * 10**9)  # "just before": within the hour
    _run(tmp_path)
    reads.clear()
    _run(tmp_path)
    assert reads == ["engine.py"]


@pytest.mark.slow  # waits RACY_NS, then three real runs
def test_a_package_made_around_the_files_is_seen(tmp_path):
    """The module name a file's folders give it is part of what must not have changed: a
    real run, in a process of its own (a process keeps the packages it has seen), on files
    older than RACY_NS."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "engine.py").write_text(CACHED_METHOD)
    time.sleep(runner.RACY_NS / 1e9 + 0.1)
    said = []
    for step in ("first", "again", "packaged"):
        if step == "packaged":
            (pkg / "__init__.py").write_text("")  # not a file checked, but renames the module
        done = run_cli("check", "-v", "pkg/engine.py", cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        assert "RL102" in done.stdout
        said.append("none changed since the last run" in done.stderr)
    assert said == [False, True, False]
