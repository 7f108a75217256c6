"""An object a call makes, stores in a slot and returns from that slot
(`self._connections[c] = Connection(c); return self._connections[c]`) is handed out as
`c = Connection(); ...; return c` is: the holder keeps every one after its user is done."""

from pathlib import Path

from conftest import run_rules

RADIO = """\
    class Connection:
        def __init__(self, peer):
            self.peer = peer


    class Radio:
        def __init__(self):
            self._connections = {{}}

        def connect(self, peer):
            {body}
    """


def _found(root: Path, body: str) -> list[tuple[int, str, str]]:
    return [(f.start.line, f.code, f.message) for f in run_rules(root, {"radio.py": RADIO.format(body=body)})
            if f.code == "RL307"]


def test_a_fresh_object_returned_from_its_slot_is_handed_out(tmp_path):
    found = _found(tmp_path, "self._connections[peer] = Connection(peer)\n"
                             "            return self._connections[peer]")
    assert [(line, code) for line, code, _ in found] == [(11, "RL307")]
    assert "keeps every object it hands out" in found[0][2]


def test_a_memo_that_returns_the_stored_one_again_is_not(tmp_path):
    assert _found(tmp_path, "if peer not in self._connections:\n"
                            "                self._connections[peer] = Connection(peer)\n"
                            "            return self._connections[peer]") == []


def test_returning_another_slot_hands_out_nothing(tmp_path):
    assert _found(tmp_path, "self._connections[peer] = Connection(peer)\n"
                            "            return self._connections.get(None)") == []
