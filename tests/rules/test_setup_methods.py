"""Methods named for set-up (`start`, `setup`, `_start_thread`): a container one of them
makes belongs to the instance, and one the class's ordinary methods call, or one handed a
connection (`buildProtocol(addr)`), runs per call, whatever its name says."""

from pathlib import Path

from conftest import run_rules


def _check(root: Path, source: str) -> list[tuple[int, str, str]]:
    return [(f.start.line, f.code, f.message) for f in run_rules(root, {"service.py": source})
            if f.code in ("RL306", "RL307")]


def test_a_container_made_by_the_set_up_that_runs_once_belongs_to_the_instance(tmp_path):
    found = _check(tmp_path, """\
        class Output:
            def start(self):
                self.session_state = {}

            def write(self, event):
                self.session_state[event["session"]] = event

        OUTPUT = Output()
        """)
    assert [(line, code) for line, code, _ in found] == [(6, "RL307")]
    assert "`self.session_state` gains one entry per distinct" in found[0][2]


def test_a_container_the_set_up_makes_and_a_method_removes_from_is_released(tmp_path):
    assert _check(tmp_path, """\
        class Output:
            def start(self):
                self.session_state = {}

            def write(self, event):
                self.session_state[event["session"]] = event

            def session_closed(self, session):
                self.session_state.pop(session, None)

        OUTPUT = Output()
        """) == []


def test_a_set_up_making_again_what_init_made_still_empties_it(tmp_path):
    assert _check(tmp_path, """\
        class Output:
            def __init__(self):
                self.session_state = {}

            def start(self):
                self.session_state = {}

            def write(self, event):
                self.session_state[event["session"]] = event

        OUTPUT = Output()
        """) == []


POOL = """\
    import threading

    class Pool:
        def __init__(self):
            self._threads = []

        def start(self):
            for _ in range(2):
                self._start_thread()

        def _start_thread(self):
            t = threading.Thread(target=self._run)
            t.start()
            self._threads.append(t)
    {enqueue}
        def _run(self):
            pass

    POOL = Pool()
    """

ENQUEUE = """
        def enqueue(self, job):
            self._queue.put(job)
            self._start_thread()
"""


def test_a_set_up_named_method_an_ordinary_method_calls_runs_per_call(tmp_path):
    found = _check(tmp_path, POOL.format(enqueue=ENQUEUE))
    assert [(line, code) for line, code, _ in found] == [(14, "RL307")]
    assert "gains one more item per call in `_start_thread()`" in found[0][2]


def test_a_set_up_named_method_only_set_up_calls_runs_once(tmp_path):
    assert _check(tmp_path, POOL.format(enqueue="")) == []


FACTORY = """\
    class Protocol:
        pass

    class TelnetFactory:
        running = []

        def {name}(self, {param}):
            p = Protocol()
            self.running.append(p)
            return p
    """


def test_a_method_named_for_set_up_that_is_handed_a_connection_builds_per_connection(tmp_path):
    found = _check(tmp_path, FACTORY.format(name="buildProtocol", param="addr"))
    assert [(line, code) for line, code, _ in found] == [(9, "RL306")]
    assert "gains one more item per call in `buildProtocol()`" in found[0][2]


def test_a_method_named_for_set_up_that_is_handed_its_configuration_runs_once(tmp_path):
    assert _check(tmp_path, FACTORY.format(name="buildProtocol", param="config")) == []


TASKS = """\
    import asyncio


    class TaskManager:
        tasks = []

        @classmethod
        def create_task(cls, coroutine):
            task = asyncio.create_task(coroutine)
            cls.tasks.append(task)
            {tail}
    """


def test_a_set_up_named_factory_that_starts_and_returns_a_task_runs_per_job(tmp_path):
    # `create_task()` starts one more task per call and hands it back: every task ever
    # started stays in the class's list
    found = _check(tmp_path, TASKS.format(tail="return task"))
    assert [(line, code) for line, code, _ in found] == [(10, "RL306")]
    assert "gains one more item per call in `create_task()`" in found[0][2]


def test_set_up_that_starts_a_task_and_keeps_it_runs_once(tmp_path):
    assert _check(tmp_path, TASKS.format(tail="cls.started = True")) == []
