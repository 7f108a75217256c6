"""The worker processes of a run: forked once, before the project index is built, sent the
index once per check phase; a worker that dies loses only the file it was checking."""

import functools
import os
import textwrap
from pathlib import Path

from retainlint.core.config import Settings
from retainlint.engine import installed_facts, runner, workers
from retainlint.engine.runner import Mode, run
from retainlint.engine.workers import POOL_THRESHOLD
from retainlint.project.installed_types import installed_verdicts

CACHED_METHOD = textwrap.dedent("""\
    import functools


    class Engine{i}:
        @functools.lru_cache(maxsize=None)
        def plan(self, key):
            return key
""")


def _tree(tmp_path: Path, count: int = POOL_THRESHOLD + 6) -> list[str]:
    for i in range(count):
        (tmp_path / f"engine{i:02}.py").write_text(CACHED_METHOD.format(i=i))
    return sorted(str(p) for p in tmp_path.glob("*.py"))


def _found(result) -> list[tuple[str, int, str]]:
    return sorted((Path(f.path).name, f.start.line, f.code) for f in result.findings)


def test_a_pooled_run_finds_what_a_run_in_one_process_finds(tmp_path):
    paths = _tree(tmp_path)
    settings = Settings(root=tmp_path)
    alone = run(paths, ["RL102"], settings, Mode(), jobs=1)
    pooled = run(paths, ["RL102"], settings, Mode(), jobs=2)
    assert _found(pooled) == _found(alone)
    assert len(_found(alone)) == len(paths)


def test_a_worker_that_dies_loses_only_its_file(tmp_path, monkeypatch):
    paths = _tree(tmp_path)
    settings = Settings(root=tmp_path)
    check = runner._check_guarded

    def dies_on_engine03(path, *args):
        if path.endswith("engine03.py"):
            os._exit(1)  # as a native crash would: no exception, the process is gone
        return check(path, *args)

    monkeypatch.setattr(runner, "_check_guarded", dies_on_engine03)  # inherited by the forks
    result = run(paths, ["RL102"], settings, Mode(), jobs=2)
    lost = [(Path(f.path).name, f.message) for f in result.findings if f.code != "RL102"]
    assert lost == [("engine03.py", "internal error: the process checking this file crashed; "
                                    "please report it")]
    assert sorted(name for name, _, code in _found(result) if code == "RL102") == \
        sorted(Path(p).name for p in paths if not p.endswith("engine03.py"))


def test_the_workers_are_forked_once_before_the_index_is_built(tmp_path, monkeypatch):
    """So they do not carry the index as the main process built it: they are sent it."""
    paths = _tree(tmp_path)
    events: list[str] = []
    pool, index = workers.ProcessPoolExecutor, runner.ProjectIndex

    def forking(*args, **kwargs):
        events.append("fork")
        return pool(*args, **kwargs)

    def indexing(*args, **kwargs):
        events.append("index")
        return index(*args, **kwargs)

    monkeypatch.setattr(workers, "ProcessPoolExecutor", forking)
    monkeypatch.setattr(runner, "ProjectIndex", indexing)
    result = run(paths, ["RL102"], Settings(root=tmp_path), Mode(), jobs=2)
    assert events == ["fork", "fork", "index"]  # the pool, and the process `apart`
    assert len(_found(result)) == len(paths)


def _reading_in(names, decorators, store, *, record):
    Path(record).write_text(str(os.getpid()))
    return installed_verdicts(names, decorators, store)


def test_installed_packages_are_read_in_a_process_apart(tmp_path, monkeypatch):
    """astroid's trees (~120 MB over vLLM's imports) would stay in the main process."""
    (tmp_path / "tree").mkdir()
    paths = _tree(tmp_path / "tree")
    record = tmp_path / "pid"
    monkeypatch.setattr(installed_facts, "installed_verdicts",
                        functools.partial(_reading_in, record=str(record)))
    result = run(paths, ["RL102"], Settings(root=tmp_path), Mode(), jobs=2)
    assert len(_found(result)) == len(paths)
    assert int(record.read_text()) != os.getpid()
    alone = run(paths, ["RL102"], Settings(root=tmp_path), Mode(), jobs=1)
    assert _found(alone) == _found(result)
    assert int(record.read_text()) == os.getpid()  # no pool: no process apart either
