"""RL601 reads the project function a release method's attribute was handed to, also when
the project is run with one of its package folders itself on `sys.path` (`app/` holding
`core/`, its modules importing `core.watching` rather than `app.core.watching`). Run as a
user runs retainlint, on such a project."""

import json
import textwrap

from conftest import check_here


def _findings(root) -> list[tuple[str, str, int]]:
    done = check_here("check", ".", "--select", "RL601", "--no-cache", "--output-format", "json", cwd=root)
    assert done.returncode in (0, 1), done.stderr
    return sorted((f["code"], f["filename"], f["location"]["row"]) for f in json.loads(done.stdout))


_JOB = """
    class Job:
        def __init__(self):
            self.engine = None
            self.watch = None

        def begin(self, engine, limit: int):
            from core.watching import watch_engine

            self.engine = engine
            self.watch = watch_engine(self.engine, limit)

        def close(self):
            self.engine = None
"""


def _project(root, watching: str) -> None:
    core = root / "app" / "core"
    core.mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("")
    (core / "__init__.py").write_text("")
    (core / "job.py").write_text(textwrap.dedent(_JOB).lstrip())
    (core / "watching.py").write_text(textwrap.dedent(watching).lstrip())


def test_a_function_imported_from_the_inner_package_root_that_only_reads_its_argument(tmp_path):
    _project(tmp_path, """
        class Watch:
            def __init__(self, limit):
                self.limit = limit


        def watch_engine(engine, limit):
            watch = Watch(limit)
            engine.add_observer(watch)
            return watch
    """)
    assert _findings(tmp_path) == []


def test_a_function_imported_from_the_inner_package_root_that_keeps_its_argument(tmp_path):
    _project(tmp_path, """
        class Watch:
            def __init__(self, engine, limit):
                self.engine = engine
                self.limit = limit


        def watch_engine(engine, limit):
            return Watch(engine, limit)
    """)
    assert _findings(tmp_path) == [("RL601", "app/core/job.py", 13)]
