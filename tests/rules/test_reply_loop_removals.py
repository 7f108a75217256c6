"""A removal past an `except` that leaves the function is skipped only by the calls that
fail there. A loop that handles replies and removes each one's entry had no entry of its
own when it fails: the removal counts. A call that adds its own entry and fails before
removing it leaves that entry: it does not."""

from pathlib import Path

from conftest import run_rules

EXECUTOR = """\
    import pickle
    from concurrent.futures import Future


    class Executor:
        def __init__(self, queue):
            self.queue = queue
            self.tasks = {{}}
            self.counter = 0

        def start(self):
            pass

        def shutdown(self):
            pass

        def submit(self, func):
            self.counter += 1
            self.tasks[self.counter] = Future()
            return self.counter

        def handle_replies(self):
            while True:
                try:
                    msg = pickle.loads(self.queue.get())
                except pickle.UnpicklingError:
                    raise RuntimeError("bad reply")
                {removal}
    """


def _found(root: Path, removal: str) -> list[tuple[int, str]]:
    return [(f.start.line, f.code) for f in run_rules(root, {"executor.py": EXECUTOR.format(removal=removal)})
            if f.code == "RL307"]


def test_a_reply_loop_removing_past_an_exiting_except_releases(tmp_path):
    assert _found(tmp_path, 'self.tasks.pop(msg["task_id"]).set_result(msg["result"])') == []


def test_without_the_removal_the_table_grows(tmp_path):
    assert _found(tmp_path, 'self.tasks[msg["task_id"]].set_result(msg["result"])') == [(19, "RL307")]


def test_a_call_adding_its_own_entry_and_failing_before_removing_it_leaves_it(tmp_path):
    found = [(f.start.line, f.code) for f in run_rules(tmp_path, {"pending.py": '''\
import json


class Client:
    def __init__(self, sock):
        self.sock = sock
        self.pending = {}

    def start(self):
        pass

    def shutdown(self):
        pass

    def call(self, request_id, payload):
        self.pending[request_id] = payload
        try:
            reply = json.loads(self.sock.send(payload))
        except ValueError:
            raise RuntimeError("bad reply")
        self.pending.pop(request_id)
        return reply
'''}) if f.code == "RL307"]
    assert found == [(16, "RL307")]
