"""A small version of scripts/corpus_fix.py: every fix on a generated mini-corpus of
realistic files (the rule fixtures, alone and combined, several fixable findings each).
The full run over vLLM and transformers is the script's job, not the default suite's."""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import corpus_fix  # noqa: E402

FIXTURES = sorted(p for p in (REPO / "fixtures").glob("RL*/*.py")
                  if not p.name.endswith(".fixed.py") and p.with_suffix(".fixed.py").exists())


def _mini_corpus(root: Path) -> int:
    texts = [p.read_text() for p in FIXTURES]
    files = {f"pkg/{p.parent.name.lower()}_{p.stem}.py": t for p, t in zip(FIXTURES, texts)}
    # Modules that mix rules: each fixture's code after another's, as real files grow.
    for i in range(len(texts)):
        files[f"pkg/mixed/m{i}.py"] = texts[i] + "\n\n" + texts[(i + 3) % len(texts)]
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "pkg" / "__init__.py").write_text("")
    return len(files)


def test_fix_everything_on_a_mini_corpus(tmp_path, capsys):
    assert len(FIXTURES) >= 5
    count = _mini_corpus(tmp_path)
    assert corpus_fix.main(str(tmp_path)) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    figures = dict(part.rsplit(": ", 1) for line in out.splitlines()[:2]
                   for part in line.split("; ") if ": " in part)
    assert int(figures["changed files"]) == count  # every file had something to fix
    assert int(figures["findings after"]) < int(figures["findings before"].split()[0])
    for key in ("not compiling", "changes outside fix edits", "still fixable"):
        assert figures[key].split()[0] == "0", out


@pytest.mark.parametrize("after,ok", [
    (b"a = 1\nB = 2\nc = 3\n", True),  # exactly the predicted edit
    (b"a = 1\nB = 2\nC = 3\n", False),  # and a line no edit mentions
    (b"a = 1\nb = 2\nc = 3\nimport os\n", False),  # a line added where no edit is
])
def test_changes_outside_predicted_edits_are_caught(after, ok):
    edit = {"location": {"row": 2, "column": 1}, "end_location": {"row": 3, "column": 1},
            "content": "B = 2\n"}
    problems = corpus_fix.unpredicted(b"a = 1\nb = 2\nc = 3\n", after, [edit])
    assert (problems == []) is ok, problems
