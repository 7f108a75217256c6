"""scripts/corpus_fix.py lists the fixes a tree was offered, by rule and applicability,
for a reviewer: run on a real folder as a user runs the script (a subprocess)."""

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

TREE = {
    # RL610: a private buffer nothing reads after close(): a safe fix
    "pool.py": """\
        import torch


        class Pool:
            def __init__(self):
                self._buf = torch.zeros(1 << 20)

            def close(self):
                pass
        """,
    # RL610: a public attribute: an unsafe fix, its help line saying what changes
    "runner.py": """\
        import torch


        class Runner:
            def __init__(self):
                self.cache = torch.zeros(1 << 20)

            def close(self):
                pass
        """,
}


def test_fixes_offered_are_listed_by_rule_and_applicability(tmp_path):
    for name, text in TREE.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "corpus_fix.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("fixes offered: 2 (1 safe, 1 unsafe)")
    assert lines[start + 1:start + 3] == ["  RL610 safe: 1", "  RL610 unsafe: 1"]
    assert lines[start + 3] == "  pool.py:8 RL610 safe: Add `self._buf = None` at the end of `close()`"
    assert lines[start + 4] == ("  runner.py:8 RL610 unsafe: Add `self.cache = None` at the end of "
                                "`close()`: `Runner.cache` is `None` after `close()`")
