#!/usr/bin/env bash
# Leak mode on CUDA: the incidents project with its models moved to the GPU, so that the
# sizes come from torch.cuda.memory_allocated (per survivor: CUDA storage bytes; per test:
# the change of memory_allocated). Needs a CUDA build of torch and a GPU; run from the
# repository root:  bash scripts/gpu_leak_mode.sh [OUT_DIR]
set -euo pipefail
out="${1:-/tmp/gpu_leak_mode}"
mkdir -p "$out"
python - <<'PY'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit("gpu_leak_mode: torch sees no CUDA device")
print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__)
PY
work="$(mktemp -d)"
cp -r fixtures/leak_projects/incidents "$work/"
cd "$work/incidents"
# The conftest moves every TinyNet to CUDA when it is built (the tests stay as they are).
cat >> conftest.py <<'PY'

import torch

from modelzoo import nets

_init = nets.TinyNet.__init__


def _on_cuda(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.to("cuda")


nets.TinyNet.__init__ = _on_cuda
torch.ones(1, device="cuda")  # the tests use CUDA: leak mode may read memory_allocated
PY
# forward passes need CUDA inputs too
sed -i 's/torch.ones(\(.*\), 64)/torch.ones(\1, 64, device="cuda")/' modelzoo/predictor.py modelzoo/predictor_fixed.py
sed -i 's/torch.ones(1, 64)/torch.ones(1, 64, device="cuda")/' tests/test_bugs.py tests/test_fixed.py
types="modelzoo.gradcam.ActivationsAndGradients,modelzoo.gradcam_fixed.ActivationsAndGradients,modelzoo.tracer.Writer,modelzoo.tracer_fixed.Writer"
python -m pytest -q -p no:cacheprovider --retainlint-leaks --retainlint-leaks-json "$out/leaks.json" \
    --retainlint-leak-types "$types" | tee "$out/summary.txt"
python - "$out/leaks.json" <<'PY'
import json, sys
leaks = json.load(open(sys.argv[1]))["leaks"]
for d in leaks:
    print(f"{d['test']}: {d['what']}: cuda_bytes={d['cuda_bytes']} cpu_bytes={d['cpu_bytes']} "
          f"test delta={d.get('cuda_allocated_delta')} rule={d['rule']} finding={d['finding']}")
bad = [d for d in leaks if d["kind"] == "module" and d["cuda_bytes"] == 0]
sys.exit(f"modules without CUDA bytes: {bad}" if bad else 0)
PY
