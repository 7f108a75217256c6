"""Readings of the retention model, from neutron's, livekit-agents' and CosyVoice's fixes:

- a table every instance shares (class- or module-level) keyed by each instance's own value
  (`self._id`) gains one entry per instance, as one keyed by `self` does;
- one entry taken out of such a table in `__exit__` (or `close()`) goes as each instance
  ends - a removal per instance, not an emptying at shutdown;
- a generic alias called (`dict[str, int]()`, `asyncio.Future[bytes]()`) makes what the
  bare class makes;
- a table filled by the call that fills other tables of the instance under the same key,
  whose entries the project removes, outlives its keys (the instance does)."""

from conftest import run_rules

SHARED = """\
import queue


class ResourceProcessor:
    _primaries = {{}}
    _timestamps = {{}}

    def __init__(self, id):
        self._id = id
        if id not in self._primaries:
            self._primaries[id] = self
            self._queue = queue.PriorityQueue(-1)
        self._primary = self._primaries[id]

    def __enter__(self):
        return self

    def __exit__(self, type, value, traceback):
        if self._primary is self:
            del self._primaries[self._id]
{release}
    def processed(self, timestamp):
        self._timestamps[self._id] = timestamp


def handle(update):
    with ResourceProcessor(update.resource_id) as processor:
        processor.processed(update.timestamp)
"""


def _found(root, release: str = "") -> list[tuple[int, str, str]]:
    source = SHARED.format(release=release)
    return [(f.start.line, f.code, f.severity.value) for f in run_rules(root, {"processor.py": source})
            if f.code in ("RL306", "RL307")]


def test_a_shared_table_keyed_by_each_instances_id_grows(tmp_path):
    # `_timestamps` gains one entry per processor; nothing removes one
    assert _found(tmp_path) == [(23, "RL306", "warning")]


def test_an_entry_removed_as_each_instance_exits_is_no_leak(tmp_path):
    # `__exit__` takes out the instance's own entries: `_primaries` (no longer "emptied only
    # at shutdown") and, with the fix, `_timestamps`
    assert _found(tmp_path, "            self._timestamps.pop(self._id, None)\n") == []


def test_a_table_emptied_whole_at_shutdown_still_grows(tmp_path):
    source = """\
_PENDING = {}


class Server:
    def handle_request(self, request):
        _PENDING[request.request_id] = request.payload

    def shutdown(self):
        _PENDING.clear()
"""
    found = [(f.start.line, f.code) for f in run_rules(tmp_path, {"server.py": source}) if f.code == "RL306"]
    assert found == [(6, "RL306")]


CLIENT = """\
import asyncio


class Client:
    def __init__(self):
        self._pending = {table}

    async def call(self, request_id, payload):
        fut = {future}
        self._pending[request_id] = fut
        await self.send(payload)
        return await asyncio.wait_for(fut, 5)

    def on_reply(self, request_id, data):
        self._pending.pop(request_id).set_result(data)

    async def send(self, payload):
        pass
"""


def _client(root, table: str, future: str) -> list[tuple[int, str]]:
    source = CLIENT.format(table=table, future=future)
    return [(f.start.line, f.code) for f in run_rules(root, {"client.py": source}) if f.code == "RL307"]


def test_a_generic_alias_called_makes_the_container_and_the_future(tmp_path):
    # the reply table of a timed wait: a reply that never comes leaves its entry
    assert _client(tmp_path / "bare", "{}", "asyncio.Future()") == [(10, "RL307")]
    assert _client(tmp_path / "generic", "dict[str, asyncio.Future[bytes]]()",
                   "asyncio.Future[bytes]()") == [(10, "RL307")]


def test_an_item_called_is_no_class(tmp_path):
    source = """\
class Dispatcher:
    def __init__(self, factories):
        self._factories = factories
        self._made = factories["table"]()

    def handle_request(self, request):
        self._made[request.request_id] = request.payload
"""
    assert [f.code for f in run_rules(tmp_path, {"d.py": source}) if f.code == "RL307"] == []


SESSIONS = """\
import uuid

import torch


class SpeechModel:
    def __init__(self, flow):
        self.flow = flow
        self.tokens = {{}}
        self.overlap = {{}}
        self.flow_cache = {{}}

    def synthesize(self, text):
        request_id = str(uuid.uuid1())
        self.tokens[request_id] = []
        self.overlap[request_id] = torch.zeros(1, 80, 0)
        self.flow_cache[request_id] = torch.zeros(1, 80, 0, 2)
        out = self.flow(text, self.flow_cache[request_id])
        self.tokens.pop(request_id)
        self.overlap.pop(request_id)
{release}        return out
"""


def test_a_table_filled_beside_tables_whose_entries_are_removed_grows(tmp_path):
    # nothing shows how long a `SpeechModel` lives, but the call that adds under `request_id`
    # removes the entries of the sibling tables: only `flow_cache` keeps every one
    source = SESSIONS.format(release="")
    found = [(f.start.line, f.code) for f in run_rules(tmp_path, {"model.py": source}) if f.code == "RL307"]
    assert found == [(17, "RL307")]
    fixed = SESSIONS.format(release="        self.flow_cache.pop(request_id)\n")
    assert [f.code for f in run_rules(tmp_path / "fixed", {"model.py": fixed}) if f.code == "RL307"] == []


def test_a_module_function_taking_one_entry_out_at_shutdown_still_leaves_the_rest(tmp_path):
    source = """\
_PENDING = {}


def handle_request(request):
    _PENDING[request.request_id] = request.payload


def shutdown():
    _PENDING.pop("heartbeat", None)
"""
    found = [(f.start.line, f.code) for f in run_rules(tmp_path, {"server.py": source}) if f.code == "RL306"]
    assert found == [(5, "RL306")]
