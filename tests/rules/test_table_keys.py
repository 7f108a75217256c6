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
