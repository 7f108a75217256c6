"""The real incidents retainlint exists for, checked on the real vLLM releases before and
after each fix (fetches four wheels, ~1.2 GB of downloads on first run):

- RL301 `_language_model_by_module` in models/interfaces.py: 0.28.0 yes, 0.29.0 no
- RL201 `weakref.finalize(..., model)` in v1/engine/llm_engine.py: 0.28.0 yes, 0.29.0 no
- RL501 discarded `register_bytecode_hook` handle in compilation/wrapper.py: 0.23.0 yes, 0.24.0 no

Exits 1 if any expectation fails."""

from __future__ import annotations

import json
import subprocess
import sys

from corpus import fetch

CASES = [
    ("RL301", "vllm/model_executor/models/interfaces.py", "0.28.0", "0.29.0"),
    ("RL201", "vllm/v1/engine/llm_engine.py", "0.28.0", "0.29.0"),
    ("RL501", "vllm/compilation/wrapper.py", "0.23.0", "0.24.0"),
]


def findings(root, path, code):
    out = subprocess.run(
        [sys.executable, "-m", "retainlint", "check", path, "--select", code,
         "--output-format", "json", "--exit-zero"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout
    return [f"{f['filename']}:{f['location']['row']}: {f['message']}" for f in json.loads(out)]


def main() -> int:
    failed = 0
    for code, path, buggy, fixed in CASES:
        before = findings(fetch(f"vllm=={buggy}"), path, code)
        after = findings(fetch(f"vllm=={fixed}"), path, code)
        ok = bool(before) and not after
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {code} {path}: {buggy} -> {len(before)} finding(s), "
              f"{fixed} -> {len(after)}")
        for line in before:
            print(f"       {buggy}: {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
