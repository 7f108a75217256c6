"""A class that keeps each of its instances in a registry: added by a helper only `__init__`
calls, it gains one per instance made; taken out only by `__del__`, which cannot run while
the registry holds the instance, it never loses one."""

from pathlib import Path

from conftest import run_rules

SPAWN = """\
    class Spawn:
        instances = []

        def __init__(self, command):
            self.command = command
            self.__spawn()

        def __spawn(self):
            self.pid = None
            Spawn.instances.append(self)
    {release}
    """


def _check(root: Path, release: str) -> list[tuple[int, str, str]]:
    return [(f.start.line, f.code, f.message)
            for f in run_rules(root, {"spawn.py": SPAWN.format(release=release)})]


def test_an_instance_a_helper_of_init_adds_and_only_del_removes_stays(tmp_path):
    found = _check(tmp_path, """
        def __del__(self):
            Spawn.instances.remove(self)
""")
    assert [(line, code) for line, code, _ in found] == [(10, "RL306")]
    assert "gains one per instance made, each entry keeping that instance in `__spawn()`" in found[0][2]


def test_an_instance_close_removes_is_released(tmp_path):
    assert _check(tmp_path, """
        def close(self):
            Spawn.instances.remove(self)
""") == []
