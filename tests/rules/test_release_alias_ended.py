"""RL601 when the release path ends the object before dropping it: a method of its own
(`self.proc.terminate()`) or a module function that ends what it is handed
(`ray.kill(actor)`, `os.close(fd)`). What still refers to it then holds a dead handle.
Giving it to a method of another object (`self.pool.stop(worker)`) ends nothing. Run as a
user runs retainlint."""

import json
import textwrap

from conftest import check_here


def _findings(root) -> list[tuple[str, str, int]]:
    done = check_here("check", ".", "--select", "RL601", "--no-cache", "--output-format", "json", cwd=root)
    assert done.returncode in (0, 1), done.stderr
    return sorted((f["code"], f["filename"], f["location"]["row"]) for f in json.loads(done.stdout))


_FLEET = """
    import ray


    class Proxy:
        def __init__(self, actor):
            self.actor = actor


    class Fleet:
        def __init__(self, factory, pool):
            self.pool = pool
            self.worker = factory.remote()
            self.proxy = Proxy(self.worker)

        def close(self):
            if hasattr(self, "worker"):
                try:
                    {ending}
                finally:
                    delattr(self, "worker")
"""


def test_an_actor_killed_before_its_attribute_is_deleted_leaves_no_alias_to_report(tmp_path):
    (tmp_path / "fleet.py").write_text(textwrap.dedent(_FLEET.replace("{ending}", "ray.kill(self.worker)")).lstrip())
    assert _findings(tmp_path) == []


def test_a_worker_handed_to_a_method_of_another_object_is_not_ended(tmp_path):
    (tmp_path / "fleet.py").write_text(textwrap.dedent(_FLEET.replace("{ending}", "self.pool.stop(self.worker)")).lstrip())
    assert _findings(tmp_path) == [("RL601", "fleet.py", 20)]
