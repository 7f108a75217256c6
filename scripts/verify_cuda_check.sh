#!/usr/bin/env bash
# The whole runtime verifier on CUDA: every rule's scenario, buggy and after retainlint's own
# fix, each in a fresh process on the GPU (torch.cuda.memory_allocated as the figure), then
# --target and the pytest plugin's example on the GPU. Prints the table; about 2 minutes on
# one GPU. Needs a python with torch (a CUDA build), libcst, astroid, click, rich and
# platformdirs; no network (this checkout is installed with --no-deps into a scratch folder).
# Usage: bash scripts/verify_cuda_check.sh [more `retainlint verify` options]
set -euo pipefail
cd "$(dirname "$0")/.."
python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'torch sees no CUDA device')"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python -m pip install --quiet --no-deps --no-build-isolation --target "$scratch/site" . 2>/dev/null
export PYTHONPATH="$scratch/site" NO_COLOR=1
out="${OUT:-$scratch}"
echo "== retainlint verify --device cuda --model torch-mlp --repeat 2"
python -m retainlint verify --device cuda --model torch-mlp --repeat 2 -j 8 "$@" || status=$?
python -m retainlint verify --device cuda --model torch-mlp -j 8 --output-format json "$@" > "$out/verify_cuda.json" || true
echo "== JSON rows in $out/verify_cuda.json: $(python -c "import json,sys; rows=json.load(open(sys.argv[1])); print(len(rows), 'rows,', sum(r['verdict']=='freed' for r in rows), 'freed, devices', sorted({r['device'] for r in rows}), 'probes', sorted({r['probe'] for r in rows}))" "$out/verify_cuda.json")"
echo "== --target on CUDA: an engine whose model sits in a dict keyed by it"
mkdir -p "$scratch/proj/enginepkg" && : > "$scratch/proj/enginepkg/__init__.py"
cat > "$scratch/proj/enginepkg/engine.py" <<'PY'
import torch.nn as nn

_layers_by_model: dict[nn.Module, int] = {}


class LLMEngine:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(4096, 4096), nn.Linear(4096, 4096)).cuda()
        _layers_by_model[self.model] = 2

    def shutdown(self):
        self.model = None


def make_engine():
    return LLMEngine()
PY
(cd "$scratch/proj" && python -m retainlint verify --target enginepkg.engine:make_engine --release shutdown) || true
exit "${status:-0}"
