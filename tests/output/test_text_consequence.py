"""The default text format (`full`) shows a finding's consequence - what stays alive, held
by what, for how long, how it grows - on one short line under it, as JSON, SARIF and GitHub
annotations carry it; `concise` stays one line a finding."""

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


def _consequences(lines):
    return [line for line in lines if line.startswith("  consequence: ")]


def test_full_output_says_the_consequence_under_the_finding(tmp_path):
    lines = _check(tmp_path, GROWS)
    assert lines[0].startswith("app.py:5:5: RL306 process-container-grows [warning] ")
    assert lines[1] == LINE
    assert lines[2] == "  4 | def handle_request(request):"


def test_concise_output_is_one_line_a_finding(tmp_path):
    lines = _check(tmp_path, GROWS, "--output-format", "concise")
    assert lines[0].startswith("app.py:5:5: RL306 ") and lines[0].endswith("[process-container-grows]")
    assert lines[1] == "Found 1 finding."


def test_a_long_consequence_is_cut_to_one_short_line(tmp_path):
    name = "handle_request_" + "with_a_very_long_name_" * 8
    [line] = _consequences(_check(tmp_path, GROWS.replace("handle_request", name)))
    assert line.startswith("  consequence: keeps `request` of every")
    assert "…" in line and len(line) <= 200
    assert line.endswith("; one more item per call")


def test_a_release_check_says_what_stays_after_the_release(tmp_path):
    source = (ROOT / "fixtures" / "RL610" / "holds_buffers.py").read_text()
    lines = _check(tmp_path, source)
    assert any(" RL610 " in line for line in lines)
    assert _consequences(lines) == [
        "  consequence: keeps the heavy object from `FfnRunner(...)`, held by `self.runner`, "
        "for as long as the `FfnExecutor` instance, after `close()`"]


def test_a_long_consequence_cuts_its_longest_part_and_keeps_the_others_whole(tmp_path):
    source = ("class Server:\n    def __init__(self):\n        self._clients = {}\n\n"
              "    async def serve(self, request):\n        self._clients[request.id] = request\n\n\n"
              "def main():\n    Server().run()\n")
    assert _consequences(_check(tmp_path, source)) == [
        "  consequence: keeps `request` of every `serve()` call, held by `self._clients` of a "
        "`Server`, for as long as the `Server`; one entry per distinct `request.id`"]
