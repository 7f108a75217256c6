"""A container a base class's `__init__` makes is each subclass instance's own, and a
read-only property returning it (`@property def tasks(self): return self._tasks`) names
it: adds through either grow the same container."""

from pathlib import Path

from conftest import run_rules

EXECUTOR = """\
    from concurrent.futures import Future


    class Executor:
        def __init__(self):
            self._tasks = {{}}

        @property
        def tasks(self):
            return self._tasks


    class ThroughputExecutor(Executor):
        def __init__(self, workers):
            super().__init__()
            self.workers = workers
            self._counter = 0

        def start(self):
            pass

        def shutdown(self):
            pass

        def submit(self, func):
            self._counter += 1
            {add}
            return self._counter
    {release}
    """


def _found(root: Path, add: str, release: str = "") -> list[tuple[int, str, str]]:
    source = EXECUTOR.format(add=add, release=release)
    return [(f.start.line, f.code, f.message) for f in run_rules(root, {"executors.py": source})
            if f.code == "RL307"]


def test_a_base_container_grown_by_the_subclass(tmp_path):
    found = _found(tmp_path, "self._tasks[self._counter] = Future()")
    assert [(line, code) for line, code, _ in found] == [(27, "RL307")]
    assert "`self._tasks` gains one entry per call, under a new `self._counter` each time in `submit()`" in found[0][2]


def test_a_base_container_grown_through_a_property(tmp_path):
    found = _found(tmp_path, "self.tasks[self._counter] = Future()")
    assert [(line, code) for line, code, _ in found] == [(27, "RL307")]


def test_a_removal_through_the_property_releases_it(tmp_path):
    assert _found(tmp_path, "self.tasks[self._counter] = Future()", """
    def forget(executor, task_id):
        executor.tasks.pop(task_id)
""") == []



def test_a_base_method_rebinding_the_container_empties_the_subclass_instance_too(tmp_path):
    source = EXECUTOR.format(add="self._tasks[self._counter] = Future()", release="").replace(
        "            return self._tasks\n",
        "            return self._tasks\n\n        def reset(self):\n            self._tasks = {}\n", 1)
    assert "def reset" in source
    assert [f for f in run_rules(tmp_path, {"executors.py": source}) if f.code == "RL307"] == []
