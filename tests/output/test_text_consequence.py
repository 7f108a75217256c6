"""The text formats (`full`, the default, and `concise`) show a finding's consequence - what
stays alive, held by what, for how long, how it grows - on one short line, as JSON, SARIF
and GitHub annotations carry it; a finding without one shows no such line."""

from pathlib import Path

from conftest import check_here

ROOT = Path(__file__).resolve().parents[2]
GROWS = "_seen = []\n\n\ndef handle_request(request):\n    _seen.append(request)\n    return len(_seen)\n"
LINE = ("  consequence: keeps `request` of every `handle_request()` call, held by `_seen` (module-level), "
        "for the process; one more item per call")


def _check(tmp_path, source, *args):
    (tmp_path / "app.py").write_text(source)
    done = check_here("check", "app.py", "--no-cache", *args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    return done.stdout.splitlines()


def test_full_output_says_the_consequence_under_the_finding(tmp_path):
    lines = _check(tmp_path, GROWS)
    assert lines[0].startswith("app.py:5:5: RL306 process-container-grows [warning] ")
    assert lines[1] == LINE
    assert lines[2] == "  4 | def handle_request(request):"


def test_concise_output_says_it_on_one_line_under_the_finding(tmp_path):
    lines = _check(tmp_path, GROWS, "--output-format", "concise")
    assert lines[0].startswith("app.py:5:5: RL306 ") and lines[0].endswith("[process-container-grows]")
    assert lines[1] == LINE
    assert lines[2] == "Found 1 finding."


def test_a_long_consequence_is_cut_to_one_short_line(tmp_path):
    name = "handle_request_" + "with_a_very_long_name_" * 8
    lines = _check(tmp_path, GROWS.replace("handle_request", name), "--output-format", "concise")
    assert lines[1].startswith("  consequence: keeps `request` of every")
    assert "…" in lines[1] and len(lines[1]) <= 200
    assert lines[1].endswith("; one more item per call")


def test_a_finding_without_a_consequence_has_no_such_line(tmp_path):
    source = (ROOT / "fixtures" / "RL610" / "holds_buffers.py").read_text()
    for fmt in ("full", "concise"):
        lines = _check(tmp_path, source, "--output-format", fmt)
        assert any(" RL610 " in line for line in lines)
        assert not any("consequence:" in line for line in lines)


def test_a_long_consequence_cuts_its_longest_part_and_keeps_the_others_whole(tmp_path):
    source = ("class Server:\n    def __init__(self):\n        self._clients = {}\n\n"
              "    async def serve(self, request):\n        self._clients[request.id] = request\n\n\n"
              "def main():\n    Server().run()\n")
    lines = _check(tmp_path, source, "--output-format", "concise")
    assert lines[1] == ("  consequence: keeps `request` of every `serve()` call, held by `self._clients` of a "
                        "`Server`, for as long as the `Server`; one entry per distinct `request.id`")
