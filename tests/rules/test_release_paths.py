"""One judgement of release paths (`analysis/release.py`) for RL601, RL610 and RL604 to RL609:
what a release method is, and what it drops through helpers and project base classes
in other files - run as a user runs retainlint, on a small project."""

import json
import textwrap

from conftest import check_here


def _findings(root, codes: str) -> list[tuple[str, str, int]]:
    done = check_here("check", ".", "--no-cache", "--select", codes, "--output-format", "json",
                   "--exit-zero", cwd=root)
    assert done.returncode == 0, done.stderr
    return sorted((f["code"], f["filename"], f["location"]["row"]) for f in json.loads(done.stdout))


def _write(root, files: dict) -> None:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))


BASE = """
    class Releasing:
        def _drop_state(self):
            self.state = None
            self.kv = None
"""


def test_a_helper_of_a_base_class_in_another_file_drops_for_every_rule(tmp_path):
    _write(tmp_path, {
        "base.py": BASE,
        "runner.py": """
            import torch
            import torch.nn as nn
            from base import Releasing

            class Runner(Releasing):
                def load(self):
                    self.model = nn.Linear(4096, 4096)
                    self.kv = torch.empty(64, 4096, 4096)
                    self.state = State(self.model)

                def shutdown(self):
                    del self.model
                    self._drop_state()
        """,
    })
    assert _findings(tmp_path, "RL6") == []
    # without the base's helper, both rules see what is left
    (tmp_path / "base.py").write_text("class Releasing:\n    def _drop_state(self):\n        pass\n")
    assert _findings(tmp_path, "RL601,RL610") == [("RL601", "runner.py", 13), ("RL610", "runner.py", 12)]


def test_per_item_and_finalizer_methods_are_not_release_methods(tmp_path):
    _write(tmp_path, {"pool.py": """
        class Pool:
            def __init__(self, model):
                self.model = model
                self.state = State(self.model)

            def stop(self, action_name):
                self.model = None

            def __del__(self):
                self.model = None

            def close(self):
                self.model = None
    """})
    # only close() releases the whole object
    assert _findings(tmp_path, "RL601") == [("RL601", "pool.py", 14)]


def test_an_exception_stored_by_a_base_in_another_file(tmp_path):
    _write(tmp_path, {
        "queue.py": """
            class DataQueue:
                def set_exception(self, exc):
                    self._exception = exc
        """,
        "proto.py": """
            from queue import DataQueue

            class Protocol(DataQueue):
                def __init__(self):
                    self.transport = None

                def close(self):
                    self.transport = None
        """,
    })
    done = check_here("check", ".", "--no-cache", "--select", "RL611", "--output-format", "json",
                   "--exit-zero", cwd=tmp_path)
    [finding] = json.loads(done.stdout)
    assert (finding["code"], finding["filename"], finding["location"]["row"]) == ("RL611", "proto.py", 8)
    assert "`self._exception`" in finding["message"]
    assert [(r["filename"], r["location"]["row"]) for r in finding["related"]] == [("queue.py", 4)]
    assert finding["fix"]["applicability"] == "unsafe"


def test_a_part_with_no_release_method_held_by_an_owner_in_another_file(tmp_path):
    _write(tmp_path, {
        "drafter.py": """
            import torch.nn as nn

            class Drafter:
                def __init__(self):
                    self.model = nn.Linear(4096, 4096)
        """,
        "worker.py": """
            from drafter import Drafter

            class Worker:
                def __init__(self):
                    self.drafter = Drafter()
                    self.profiler = Profiler()

                def shutdown(self):
                    self.profiler.shutdown()
        """,
    })
    assert _findings(tmp_path, "RL610,RL612") == [("RL610", "worker.py", 9), ("RL612", "drafter.py", 4)]
    # once the owner drops it, neither is reported
    worker = (tmp_path / "worker.py").read_text().replace(
        "self.profiler.shutdown()", "self.profiler.shutdown()\n        self.drafter = None")
    (tmp_path / "worker.py").write_text(worker)
    assert _findings(tmp_path, "RL610,RL612") == []


BUCKET = """
    import torch

    class Bucket:
        def __init__(self, n):
            self.flat = torch.zeros(n)
            self.halves = torch.zeros(2, n)

        def grow(self):
            for t in (self.flat, self.halves):
                t.storage().resize_(t.numel())

        def free(self):
            self.flat.untyped_storage().resize_({size})
            for t in [self.halves]:
                t.storage().resize_({size})
"""


def test_a_storage_shrunk_to_nothing_in_place_is_freed_by_the_release_path(tmp_path):
    _write(tmp_path, {"bucket.py": BUCKET.replace("{size}", "0")})
    assert _findings(tmp_path, "RL610") == []
    # resized to anything else, the memory stays allocated
    _write(tmp_path, {"bucket.py": BUCKET.replace("{size}", "1")})
    assert _findings(tmp_path, "RL610") == [("RL610", "bucket.py", 13)]


RECIPE = """
    import torch

    class Recipe:
        def __init__(self, size):
            self.model = torch.nn.Linear(size, size)
            self._log = open("log.txt", "w")

        def train(self):
            self.model(torch.zeros(1, 4))

        def cleanup(self):
            self._log.close()
"""


def test_a_release_that_ends_the_local_it_made_keeps_nothing_alive(tmp_path):
    # torchtune's recipes: `recipe = Recipe(cfg); recipe.train(); recipe.cleanup()`, and
    # the function returns: the recipe goes with its model the moment cleanup() returns.
    last = tmp_path / "last"
    last.mkdir()
    _write(last, {"recipe.py": RECIPE + """
    def recipe_main(size):
        recipe = Recipe(size)
        recipe.train()
        recipe.cleanup()
    """})
    assert _findings(last, "RL610") == []
    # Released, then kept (handed on, or released before more work): reported.
    for name, main in {"kept": """
    RUNS = []

    def recipe_main(size):
        recipe = Recipe(size)
        RUNS.append(recipe)
        recipe.cleanup()
    """, "more": """
    def recipe_main(size):
        recipe = Recipe(size)
        recipe.cleanup()
        return Recipe(size * 2).train()
    """}.items():
        root = tmp_path / name
        root.mkdir()
        _write(root, {"recipe.py": RECIPE + main})
        assert _findings(root, "RL610") == [("RL610", "recipe.py", 12)], name


def test_a_part_an_exit_stack_callback_drops_is_dropped_when_the_release_closes_the_stack(tmp_path):
    """The release method closes an `ExitStack` on which a method of the class was
    registered (`self._stack.callback(self._free_projector)`): closing it runs the
    callback, which drops the part. Without the `close()`, the part stays (RL610) and the
    stack is never unwound (RL614)."""
    handler = """
        from contextlib import ExitStack

        import torch


        class ChatHandler:
            def __init__(self):
                self._stack = ExitStack()
                self.running = True

            def load(self):
                self.projector = torch.empty(4096, 4096)
                self._stack.callback(self._free_projector)

            def _free_projector(self):
                self.projector = None

            def shutdown(self):
                self.running = False
                self._stack.close()
    """
    _write(tmp_path, {"handler.py": handler})
    assert _findings(tmp_path, "RL610,RL614") == []
    _write(tmp_path, {"handler.py": handler.replace("                self._stack.close()\n", "")})
    assert _findings(tmp_path, "RL610,RL614") == [("RL610", "handler.py", 19), ("RL614", "handler.py", 14)]
