"""The real incidents retainlint exists for, checked on the real vLLM releases before and
after each fix (fetches the wheels, ~300 MB each, on first run):

- RL301 `_language_model_by_module` in models/interfaces.py: 0.28.0 yes, 0.29.0 no
- RL201 `weakref.finalize(..., model)` in v1/engine/llm_engine.py: 0.28.0 yes, 0.29.0 no
- RL501 discarded `register_bytecode_hook` handle in compilation/wrapper.py: 0.23.0 yes, 0.24.0 no
- RL101 bound methods passed to the cached `supports_kw` (call sites in other files than
  vllm/utils/func_utils.py; the whole tree is checked): 0.19.1 yes, 0.20.0 no
- RL401 `EngineCore.__init__` freezing the heap through `freeze_gc_heap()` from
  vllm/utils/gc_utils.py (whole tree): 0.19.1 yes, 0.20.0 no
- RL601 `shutdown()` of v1/worker/gpu/model_runner.py deleting `self.model` while
  `self.model_state` keeps it: 0.21.0 and 0.24.0 yes (the fix came later)
- RL602 the GPU worker's `shutdown()` in v1/worker/gpu_worker.py leaving the model runner
  (whole tree: the runner's class is heavy through other files): 0.19.1 yes, 0.20.0 no
- RL302 `_ROPE_DICT` in model_executor/layers/rotary_embedding/__init__.py (whole tree: the
  clear happens in another file): 0.19.1 yes, 0.20.0 no
- RL303 the workspace-manager singleton in v1/worker/workspace.py (whole tree: the reset
  must be called from somewhere): 0.19.1 yes, 0.20.0 no

Exits 1 if any expectation fails."""

from __future__ import annotations

import json
import subprocess
import sys

from corpus import fetch

# (code, path to check, text every counted finding's message contains, buggy, fixed)
CASES = [
    ("RL301", "vllm/model_executor/models/interfaces.py", "_language_model_by_module", "0.28.0", "0.29.0"),
    ("RL201", "vllm/v1/engine/llm_engine.py", "weakref.finalize", "0.28.0", "0.29.0"),
    ("RL501", "vllm/compilation/wrapper.py", "register_bytecode_hook", "0.23.0", "0.24.0"),
    ("RL101", "vllm", "`supports_kw`", "0.19.1", "0.20.0"),
    ("RL401", "vllm", "EngineCore.__init__", "0.19.1", "0.20.0"),
    ("RL601", "vllm/v1/worker/gpu", "`self.model_state`", "0.24.0", None),
    ("RL601", "vllm/v1/worker/gpu", "`self.model_state`", "0.21.0", None),
    ("RL602", "vllm", "`self.model_runner`", "0.19.1", "0.20.0"),
    ("RL302", "vllm", "`_ROPE_DICT`", "0.19.1", "0.20.0"),
    ("RL303", "vllm", "`_manager`", "0.19.1", "0.20.0"),
]


def findings(root, path, code, text):
    out = subprocess.run(
        [sys.executable, "-m", "retainlint", "check", path, "--select", code,
         "--output-format", "json", "--exit-zero", "--no-cache"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout
    return [f"{f['filename']}:{f['location']['row']}: {f['message']}"
            for f in json.loads(out) if text in f["message"]]


def main() -> int:
    failed = 0
    for code, path, text, buggy, fixed in CASES:
        before = findings(fetch(f"vllm=={buggy}"), path, code, text)
        after = findings(fetch(f"vllm=={fixed}"), path, code, text) if fixed else []
        ok = bool(before) and not after
        failed += not ok
        later = f", {fixed} -> {len(after)}" if fixed else ""
        print(f"{'ok  ' if ok else 'FAIL'} {code} {path}: {buggy} -> {len(before)} finding(s){later}")
        for line in before:
            print(f"       {buggy}: {line[:160]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
