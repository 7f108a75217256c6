"""A bare id is judged by the table it keys: `function_refs[id]` holds one entry per
function a client registers, `named_actors[actor_id]` one per actor of the deployment -
as many as the program or the deployment has, however many requests come - while
`pending[id]` holds one per request."""

from pathlib import Path

from conftest import run_rules

SERVICER = """\
    class Servicer:
        def __init__(self):
            self.{table} = {{}}

        def start(self):
            pass

        def stop(self):
            pass

        def handle_request(self, request, {key}):
            self.{table}[{key}] = request.payload
    """


def _found(root: Path, table: str, key: str) -> list[tuple[int, str]]:
    source = SERVICER.format(table=table, key=key)
    return [(f.start.line, f.code) for f in run_rules(root, {"servicer.py": source}) if f.code == "RL307"]


def test_a_bare_id_keying_a_table_of_functions_or_classes_is_bounded(tmp_path):
    assert _found(tmp_path / "functions", "function_refs", "id") == []
    assert _found(tmp_path / "classes", "registered_actor_classes", "id") == []


def test_an_actor_is_a_member_of_the_deployment(tmp_path):
    assert _found(tmp_path, "named_actors", "actor_id") == []


def test_a_bare_id_keying_a_table_of_requests_grows(tmp_path):
    assert _found(tmp_path, "pending", "id") == [(12, "RL307")]


ADAPTER = """\
    import asyncio


    class WebhookAdapter:
        def __init__(self):
            self._locks = {{}}

        async def request(self, target, payload):
            {bucket}
            lock = self._locks.get(bucket)
            if lock is None:
                self._locks[bucket] = lock = asyncio.Lock()
            async with lock:
                await target.send(payload)


    ADAPTER = WebhookAdapter()
    """


def _adapter(root: Path, bucket: str) -> list[tuple[int, str]]:
    source = ADAPTER.format(bucket=bucket)
    return [(f.start.line, f.code) for f in run_rules(root, {"adapter.py": source}) if f.code == "RL307"]


def test_a_key_local_is_read_through_what_it_is_bound_to(tmp_path):
    # a lock per webhook ever used, in an adapter kept for the process
    assert _adapter(tmp_path / "tuple", "bucket = (target.webhook_id, target.token)") == [(12, "RL307")]
    assert _adapter(tmp_path / "attribute", "bucket = target.webhook_id") == [(12, "RL307")]
    # the instance's own field may be a counter, a call's result a key its callers keep:
    # the local's own name says what it is
    assert _adapter(tmp_path / "own", "bucket = self.webhook_id") == []
    assert _adapter(tmp_path / "call", "bucket = target.key().webhook_id") == []


def test_a_parameter_of_the_model_is_one_of_a_fixed_set(tmp_path):
    # one entry per parameter of the model, however many requests come
    assert _found(tmp_path / "id", "numel", "param_id") == []
    assert _adapter(tmp_path / "attribute", "bucket = param.ds_id") == []
