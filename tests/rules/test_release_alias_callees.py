"""RL601 asks a project callee whether it keeps what a release method's attribute was
handed to it. What the callee returns belongs where the result goes, not to the receiver;
a chain of methods handing the value on to each other keeps it only where one of them
stores it. Run as a user runs retainlint, on a small project."""

import json
import textwrap

from conftest import check_here


def _findings(root) -> list[tuple[str, str, int]]:
    done = check_here("check", ".", "--select", "RL601", "--no-cache", "--output-format", "json", cwd=root)
    assert done.returncode in (0, 1), done.stderr
    return sorted((f["code"], f["filename"], f["location"]["row"]) for f in json.loads(done.stdout))


def _write(root, files: dict) -> None:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())


_READER = """
    from pool import Pool


    class Reader:
        def __init__(self, pool: Pool):
            self.pool = pool
            self.lease = None
            self.spec = None

        def open(self, path):
            self.spec = load_spec(path)
            self.lease = self.pool.lease(self.spec)

        def close(self):
            self.lease = None
            self.spec = None
"""


def test_a_value_the_receiver_only_returns_inside_a_new_object_is_not_kept_by_the_receiver(tmp_path):
    _write(tmp_path, {"reader.py": _READER, "pool.py": """
        class Lease:
            def __init__(self, size):
                self.size = size


        class Pool:
            def lease(self, size):
                return Lease(size)
    """})
    assert _findings(tmp_path) == []
    # the pool keeping it as well: the release of `self.spec` frees nothing
    _write(tmp_path, {"pool.py": """
        class Lease:
            def __init__(self, size):
                self.size = size


        class Pool:
            def __init__(self):
                self.leases = []

            def lease(self, size):
                made = Lease(size)
                self.leases.append(size)
                return made
    """})
    assert _findings(tmp_path) == [("RL601", "reader.py", 16)]


_CHANNEL = """
    class Channel:
        def __init__(self, relay, frame):
            self.relay = relay
            self.frame = frame

        def flush(self):
            self.relay.forward_all([self.frame])

        def close(self):
            self.frame = None
"""


def test_methods_handing_a_value_on_to_each_other_keep_it_only_where_one_stores_it(tmp_path):
    _write(tmp_path, {"channel.py": _CHANNEL, "relay.py": """
        class Relay:
            def __init__(self, upstream):
                self.upstream = upstream

            def forward_all(self, items):
                return self.upstream.forward_all(list(items))
    """})
    assert _findings(tmp_path) == []
    # one method of the chain stores what it is handed: kept
    _write(tmp_path, {"relay.py": """
        class Relay:
            def __init__(self, upstream):
                self.upstream = upstream
                self.sent = []

            def forward_all(self, items):
                self._note(items)
                return self.upstream.forward_all(list(items))

            def _note(self, items):
                if len(self.sent) < 100:
                    self.sent.append(items)
                else:
                    self.upstream.forward_all(items)
    """})
    assert _findings(tmp_path) == [("RL601", "channel.py", 10)]


_RECORDER = """
    class Recorder:
        def __init__(self, source, sink):
            self.source = source
            self.sink = {sink}
            self._frame = source.first()

        def run(self, n):
            for _ in range(n):
                self._frame = self.source.next(self._frame)
                self.sink.add(self._frame)

        def close(self):
            del self._frame
            self.source.close()
"""


def test_what_a_sink_the_caller_handed_in_keeps_by_the_name_of_its_method_is_its_owners(tmp_path):
    _write(tmp_path, {"recorder.py": _RECORDER.replace("{sink}", "sink")})
    assert _findings(tmp_path) == []
    # a sink this object builds around it: its own holder, judged by the method's name
    _write(tmp_path, {"recorder.py": _RECORDER.replace("{sink}", "Sink(sink)")})
    assert _findings(tmp_path) == [("RL601", "recorder.py", 13)]


def test_a_sink_handed_in_whose_project_method_stores_what_it_is_given_keeps_it(tmp_path):
    _write(tmp_path, {"recorder.py": _RECORDER.replace("{sink}", "sink"), "store.py": """
        class FrameStore:
            def __init__(self):
                self.frames = []

            def add(self, frame):
                self.frames.append(frame)
    """})
    assert _findings(tmp_path) == [("RL601", "recorder.py", 13)]
