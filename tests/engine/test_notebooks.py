"""Jupyter notebooks through the real CLI: code cells read as one module (magics and shell
escapes masked), findings at cell and line, --fix writing the cells back with outputs,
metadata and ids untouched, broken notebooks reported in one line, directories walked
into notebooks."""

import json
import os
import shutil
from pathlib import Path

from conftest import check_here, run_cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "notebooks"
CLASS_CACHE = "class_cache.ipynb"  # RL301 in cell 2 line 2; `%matplotlib`, `!pip`, `model?`


def copy(tmp_path, name=CLASS_CACHE, to=None):
    target = tmp_path / (to or name)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / name, target)
    return target


def test_finding_in_a_notebook_points_at_its_cell_and_line(tmp_path):
    copy(tmp_path)
    r = run_cli("check", "--no-cache", CLASS_CACHE, cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{CLASS_CACHE}:cell 2:2:5: RL301 strong-module-keyed-cache" in r.stdout
    assert f"heavy key written here ({CLASS_CACHE}:cell 2:5:9)" in r.stdout
    assert "RL000" not in r.stdout  # the magics and `!pip` were masked, not parsed
    # The code frame stays in the cell, numbered as the cell's lines.
    frame = [line for line in r.stdout.splitlines() if " | " in line]
    assert frame[:3] == ["  1 | class Registry:", "  2 |     _owners = {}  # expect: RL301",
                         "    |     ^^^^^^^"], r.stdout
    r = run_cli("check", "--no-cache", "--output-format", "json", CLASS_CACHE, cwd=tmp_path)
    [finding] = json.loads(r.stdout)
    assert finding["code"] == "RL301" and finding["filename"] == CLASS_CACHE
    # `location.row` is the line in the notebook's virtual module (a marker line per cell).
    assert finding["cell"] == {"number": 2, "row": 2}
    assert finding["location"] == {"row": 8, "column": 5}


def test_fix_writes_the_cells_back_and_keeps_everything_else(tmp_path):
    notebook = copy(tmp_path)
    os.chmod(notebook, 0o640)
    original = notebook.read_text()
    r = run_cli("check", "--no-cache", "--fix", CLASS_CACHE, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 fixed, 0 remaining" in r.stdout

    expected = json.loads(original)
    setup, registry = expected["cells"][1], expected["cells"][2]
    setup["source"] = ["import weakref\n", "\n"] + setup["source"]
    registry["source"][1] = "    _owners = weakref.WeakKeyDictionary()  # expect: RL301\n"
    # Byte for byte: outputs, metadata, ids, key order, one-space indent, final newline.
    assert notebook.read_text() == json.dumps(expected, indent=1, ensure_ascii=False) + "\n"
    assert setup["source"][2:4] == ["%matplotlib inline\n", "!pip install torch\n"]
    assert os.stat(notebook).st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == [CLASS_CACHE]  # no temp file left

    again = run_cli("check", "--no-cache", CLASS_CACHE, cwd=tmp_path)
    assert again.returncode == 0 and "All checks passed!" in again.stdout, again.stdout


def test_a_broken_notebook_is_one_line_and_exit_1(tmp_path):
    (tmp_path / "broken.ipynb").write_text('{"cells": [')
    r = run_cli("check", "--no-cache", "broken.ipynb", cwd=tmp_path)
    assert r.returncode == 1
    assert "broken.ipynb:1:1: RL000 cannot read notebook: Expecting value" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr and "All checks passed!" not in r.stdout
    (tmp_path / "list.ipynb").write_text('["not", "a", "notebook"]')
    r = run_cli("check", "--no-cache", "list.ipynb", cwd=tmp_path)
    assert r.returncode == 1 and "list.ipynb:1:1: RL000 cannot read notebook: no list of cells" \
        in r.stdout


def test_a_named_notebook_passes_only_once_analysed(tmp_path):
    notebook = copy(tmp_path)
    clean = notebook.read_text().replace("_owners = {}", "_owners = weakref.WeakKeyDictionary()") \
        .replace('"import torch\\n"', '"import torch\\n",\n    "import weakref\\n"')
    notebook.write_text(clean)
    r = run_cli("check", "--no-cache", CLASS_CACHE, cwd=tmp_path)
    assert r.returncode == 0 and "All checks passed!" in r.stdout, r.stdout
    # The same notebook with a syntax error in its last cell: its code was parsed.
    notebook.write_text(clean.replace('"model?"', '"model = (\\n"'))
    r = run_cli("check", "--no-cache", CLASS_CACHE, cwd=tmp_path)
    assert r.returncode == 1 and "All checks passed!" not in r.stdout
    assert f"{CLASS_CACHE}:cell 3:3:" in r.stdout and "RL000 cannot parse" in r.stdout, r.stdout


def test_directories_include_notebooks_and_honour_excludes(tmp_path):
    copy(tmp_path, to="work/analysis.ipynb")
    copy(tmp_path, to="work/scratch/old.ipynb")
    copy(tmp_path, to="work/.ipynb_checkpoints/analysis-checkpoint.ipynb")
    r = run_cli("check", "--no-cache", "--output-format", "concise", "--exclude", "scratch",
                "work", cwd=tmp_path)
    lines = [line for line in r.stdout.splitlines() if ": RL" in line]
    assert len(lines) == 1, r.stdout  # not the excluded one, nor Jupyter's checkpoint
    assert lines[0].startswith(f"{os.path.join('work', 'analysis.ipynb')}:cell 2:2:5: RL301 ")


def test_findings_from_the_cache_point_at_the_notebook_as_it_is(tmp_path):
    # Only outputs change between runs: the code is the same, the cached finding still
    # points at cell 2 line 2.
    notebook = copy(tmp_path)
    cache = str(tmp_path / ".cache")
    first = run_cli("check", "--cache-dir", cache, "--output-format", "concise", CLASS_CACHE,
                    cwd=tmp_path)
    document = json.loads(notebook.read_text())
    document["cells"][3]["outputs"] = []
    notebook.write_text(json.dumps(document, indent=1) + "\n")
    second = run_cli("check", "--cache-dir", cache, "--output-format", "concise", CLASS_CACHE,
                     cwd=tmp_path)
    assert first.stdout == second.stdout and f"{CLASS_CACHE}:cell 2:2:5: RL301" in second.stdout
    # A line added above the bug moves it; the cache is not fooled.
    document["cells"][2]["source"].insert(0, "# the registry\n")
    notebook.write_text(json.dumps(document, indent=1) + "\n")
    third = run_cli("check", "--cache-dir", cache, "--output-format", "concise", CLASS_CACHE,
                    cwd=tmp_path)
    assert f"{CLASS_CACHE}:cell 2:3:5: RL301" in third.stdout, third.stdout


def test_add_noqa_writes_the_directive_into_the_cell(tmp_path):
    notebook = copy(tmp_path)
    r = run_cli("check", "--no-cache", "--add-noqa", CLASS_CACHE, cwd=tmp_path)
    assert r.returncode == 0 and "Added 1 noqa directive" in r.stderr, r.stdout + r.stderr
    registry = json.loads(notebook.read_text())["cells"][2]["source"]
    assert registry[1] == "    _owners = {}  # expect: RL301  # noqa: RL301\n"
    again = run_cli("check", "--no-cache", CLASS_CACHE, cwd=tmp_path)
    assert again.returncode == 0 and "All checks passed!" in again.stdout, again.stdout


def test_only_magics_are_masked(tmp_path):
    # A comment ending in `?` is code, and `%%time` times Python: both are analysed;
    # `%%bash` is not Python and is masked whole.
    notebook = copy(tmp_path)
    document = json.loads(notebook.read_text())
    registry = document["cells"][2]["source"]
    registry[1] = "    _owners = {}  # shared?\n"
    document["cells"][2]["source"] = ["%%time\n"] + registry
    document["cells"].append({"cell_type": "code", "execution_count": None, "id": "shell",
                              "metadata": {}, "outputs": [],
                              "source": ["%%bash\n", "for f in *; do\n", "  echo $f\n", "done"]})
    notebook.write_text(json.dumps(document, indent=1) + "\n")
    r = run_cli("check", "--no-cache", "--output-format", "concise", CLASS_CACHE, cwd=tmp_path)
    assert [line.split(" ", 2)[:2] for line in r.stdout.splitlines() if ": RL" in line] == [
        [f"{CLASS_CACHE}:cell", "2:3:5:"]], r.stdout


def test_a_model_cached_in_a_notebook_global(tmp_path):
    # RL302 across cells: the dict in cell 2, filled by a function a `%%time` cell calls.
    # Its fix would let the model vanish at once, so none is offered: --fix writes nothing.
    notebook = copy(tmp_path, "global_model_cache.ipynb")
    before = notebook.read_bytes()
    r = run_cli("check", "--no-cache", "--fix", "--output-format", "concise", notebook.name,
                cwd=tmp_path)
    assert r.returncode == 1
    assert "global_model_cache.ipynb:cell 2:1:1: RL302 `_models` (module global) keeps " \
        "`nn.Module` values alive" in r.stdout, r.stdout
    assert notebook.read_bytes() == before


def test_baseline_fingerprints_read_the_cell_line(tmp_path):
    # A baseline entry survives an edit that moves the finding down a cell.
    notebook = copy(tmp_path)
    r = run_cli("check", "--no-cache", "--write-baseline", "base.json", CLASS_CACHE, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    document = json.loads(notebook.read_text())
    document["cells"][1]["source"].insert(0, "import os\n")
    notebook.write_text(json.dumps(document, indent=1) + "\n")
    r = run_cli("check", "--no-cache", "--baseline", "base.json", CLASS_CACHE, cwd=tmp_path)
    assert r.returncode == 0 and "All checks passed!" in r.stdout, r.stdout


def test_fix_keeps_the_layout_of_an_unusual_notebook(tmp_path):
    # Sources as one string, an empty cell, two-space indent with ASCII escapes, no final
    # newline, `files = !ls`, and a line that looks like retainlint's own cell mark.
    code = ("import weakref\nfrom torch import nn\nfiles = !ls\n# retainlint: cell 1\n"
            "class Registry:\n    _owners = {}\n\n"
            "    def own(self, layer: nn.Module) -> None:\n"
            "        self._owners[layer] = layer.out_features\n")
    document = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "Caf\u00e9 \u2615"},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ""},
        {"cell_type": "code", "execution_count": 7, "metadata": {"tags": ["x"]},
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "a.py\n"}],
         "source": code},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    notebook = tmp_path / "odd.ipynb"
    notebook.write_text(json.dumps(document, indent=2))
    r = run_cli("check", "--no-cache", "--output-format", "concise", "--fix", "odd.ipynb",
                cwd=tmp_path)
    assert r.returncode == 0 and "1 fixed, 0 remaining" in r.stdout, r.stdout + r.stderr
    document["cells"][2]["source"] = code.replace("_owners = {}",
                                                  "_owners = weakref.WeakKeyDictionary()")
    assert notebook.read_text() == json.dumps(document, indent=2)


def test_the_code_frame_shows_magics_as_written(tmp_path):
    notebook = copy(tmp_path)
    document = json.loads(notebook.read_text())
    document["cells"][2]["source"][2:2] = ["    !nvidia-smi\n"]
    notebook.write_text(json.dumps(document, indent=1) + "\n")
    r = run_cli("check", "--no-cache", CLASS_CACHE, cwd=tmp_path)
    assert f"{CLASS_CACHE}:cell 2:2:5: RL301" in r.stdout
    assert "  3 |     !nvidia-smi" in r.stdout.splitlines(), r.stdout


def test_diff_shows_each_changed_cell_and_writes_nothing(tmp_path):
    notebook = copy(tmp_path)
    before = notebook.read_bytes()
    r = run_cli("check", "--no-cache", "--diff", CLASS_CACHE, cwd=tmp_path)
    assert r.returncode == 1 and notebook.read_bytes() == before
    assert f"--- {CLASS_CACHE}:cell 1\n+++ {CLASS_CACHE}:cell 1\n@@ -1,3 +1,5 @@\n" \
           "+import weakref\n+\n %matplotlib inline\n !pip install torch\n" in r.stdout, r.stdout
    assert f"+++ {CLASS_CACHE}:cell 2\n" in r.stdout
    assert "-    _owners = {}  # expect: RL301\n" \
           "+    _owners = weakref.WeakKeyDictionary()  # expect: RL301\n" in r.stdout
    assert "retainlint: cell" not in r.stdout and "cell 3" not in r.stdout


def test_a_notebook_on_stdin(tmp_path):
    # An editor's buffer: checked as the notebook it names, --fix prints the notebook.
    notebook = copy(tmp_path)
    buffer = notebook.read_text()
    r = run_cli("check", "--no-cache", "--output-format", "concise", "--stdin-filename",
                CLASS_CACHE, "-", cwd=tmp_path, input=buffer)
    assert r.returncode == 1 and f"{CLASS_CACHE}:cell 2:2:5: RL301" in r.stdout, r.stdout
    r = run_cli("check", "--no-cache", "--fix", "--stdin-filename", CLASS_CACHE, "-",
                cwd=tmp_path, input=buffer)
    fixed = json.loads(r.stdout)
    assert fixed["cells"][2]["source"][1] == \
        "    _owners = weakref.WeakKeyDictionary()  # expect: RL301\n"
    assert fixed["cells"][3]["outputs"] == json.loads(buffer)["cells"][3]["outputs"]
    assert notebook.read_text() == buffer  # nothing written
    r = run_cli("check", "--no-cache", "--stdin-filename", CLASS_CACHE, "-", cwd=tmp_path,
                input='{"cells": [')
    assert r.returncode == 1 and f"{CLASS_CACHE}:1:1: RL000 cannot read notebook" in r.stdout


def test_a_deeply_nested_notebook_is_one_line_and_the_run_goes_on(tmp_path):
    copy(tmp_path)
    (tmp_path / "deep.ipynb").write_text('{"cells": ' + "[" * 200_000 + "]" * 200_000 + "}")
    r = run_cli("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert "Traceback" not in r.stdout + r.stderr
    [line] = [x for x in r.stdout.splitlines() if x.startswith("deep.ipynb")]
    assert line == "deep.ipynb:1:1: RL000 cannot read notebook: nested too deeply", line
    assert f"{CLASS_CACHE}:cell 2:2:" in r.stdout  # the other notebook was still checked
    assert r.returncode == 1


def test_a_notebook_past_the_size_cap_is_not_parsed(tmp_path):
    copy(tmp_path)
    big = json.loads((FIXTURES / CLASS_CACHE).read_text())
    big["cells"].append({"cell_type": "markdown", "metadata": {}, "source": "x" * (5 << 20)})
    (tmp_path / "big.ipynb").write_text(json.dumps(big))
    r = run_cli("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert "Traceback" not in r.stdout + r.stderr
    [line] = [x for x in r.stdout.splitlines() if x.startswith("big.ipynb")]
    assert line.startswith("big.ipynb:1:1: RL000 file too large to check (5.0 MB > 4 MB)"), line
    assert f"{CLASS_CACHE}:cell 2:2:" in r.stdout


def test_a_buffer_fixed_from_stdin_does_not_place_a_later_runs_findings(tmp_path):
    """One process (a watch, an editor's server), two runs: an editor's buffer of the
    notebook fixed on standard input (the fix adds `import weakref`), then the notebook of
    that name on disk in another folder. The second run's findings are placed in the file
    it read, not in the buffer the first one printed."""
    editor = tmp_path / "editor"
    buffer = copy(editor).read_text()
    r = check_here("check", "--no-cache", "--fix", "--stdin-filename", CLASS_CACHE, "-",
                   cwd=editor, input=buffer)
    assert "weakref.WeakKeyDictionary()" in r.stdout, r.stdout + r.stderr
    on_disk = tmp_path / "disk"
    copy(on_disk)
    r = check_here("check", "--no-cache", "--output-format", "concise", CLASS_CACHE, cwd=on_disk)
    assert f"{CLASS_CACHE}:cell 2:2:5: RL301" in r.stdout, r.stdout + r.stderr
