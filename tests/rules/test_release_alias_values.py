"""RL601 on attributes whose value holds no other object (a number, text, bytes, a path):
known from a literal, a parameter's annotation, or the return annotation of the project
function it comes from. Dropping one frees nothing worth a finding, whoever else refers to
it. Run as a user runs retainlint, on a small project."""

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


_CURSOR = """
    from codec import frame


    class Wire:
        def __init__(self):
            self.outbox = []

        def send(self, data):
            self.outbox.append(data)


    class Cursor:
        def __init__(self, wire: Wire, token):
            self.wire = wire
            self.token = frame(token)

        def next_page(self):
            self.wire.send(self.token)

        def close(self):
            self.wire.send(self.token)
            self.token = None
"""


def test_bytes_from_a_function_annotated_to_return_them_are_not_an_alias_worth_reporting(tmp_path):
    _write(tmp_path, {"cursor.py": _CURSOR, "codec.py": """
        import struct


        def frame(payload: bytes) -> bytes:
            return struct.pack("!I", len(payload)) + payload
    """})
    assert _findings(tmp_path) == []
    # without the annotation the value may be any object the wire keeps
    _write(tmp_path, {"codec.py": """
        import struct


        def frame(payload):
            return struct.pack("!I", len(payload)) + payload
    """})
    assert _findings(tmp_path) == [("RL601", "cursor.py", 22)]


def test_a_path_given_as_an_annotated_parameter_or_built_with_path_is_not_an_alias_worth_reporting(tmp_path):
    spool = """
        from pathlib import Path
        from tempfile import mkdtemp


        class Spool:
            def __init__(self, root: {annotation} = None):
                self.root = root
                self.origin = root or Path.cwd()

            def open(self):
                if self.root is None:
                    self.root = Path(mkdtemp())

            def close(self):
                self.root = None
    """
    _write(tmp_path, {"spool.py": spool.replace("{annotation}", "Path | None")})
    assert _findings(tmp_path) == []
    _write(tmp_path, {"spool.py": spool.replace("{annotation}", "object")})
    assert _findings(tmp_path) == [("RL601", "spool.py", 15)]


def test_an_attribute_also_assigned_by_unpacking_is_not_taken_for_a_plain_value(tmp_path):
    _write(tmp_path, {"spool.py": """
        from pathlib import Path


        class Spool:
            def __init__(self, root: Path | None = None):
                self.root = root
                self.origin = root

            def reopen(self, opened):
                self.root, self.mode = opened

            def close(self):
                self.root = None
    """})
    assert _findings(tmp_path) == [("RL601", "spool.py", 13)]
