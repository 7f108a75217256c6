"""Run leak mode on the test suites of real projects, from their released sources.

    python scripts/leak_suites.py --python /tmp/leakvenv/bin/python [--only accelerate]

For each project: download its sdist (`pip download --no-deps --no-binary :all:`), unpack it
under --work, run a subset of its tests that works offline on the CPU twice - plainly, then
with `--retainlint-leaks --retainlint-leaks-json` - and print the wall times, their ratio
(the overhead of the mode) and each leak reported. Their code is never copied into this
repository. The interpreter given must have torch, pytest, retainlint (`pip install -e`)
and the project's dependencies; its pip does the downloading.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

# name: (pinned release, source folders for PYTHONPATH (relative to the unpacked sdist),
# pytest arguments). Subsets chosen to run offline (no model hub) in a few minutes. ENV: what
# a suite needs set to run at all.
SUITES = {
    "accelerate": ("1.16.0", ["src"], ["tests/test_memory_utils.py", "tests/test_hooks.py"]),
    "einops": ("0.8.2", ["."], ["einops/tests/test_ops.py", "einops/tests/test_layers.py"]),
    # needs transformers, diffusers, datasets, scipy; accelerate from its own sdist or installed
    "peft": ("0.21.2", ["src"], ["tests/test_custom_models.py", "-k", "test_forward_output_finite and Vanilla"]),
}
ENV = {
    "einops": {"EINOPS_TEST_BACKENDS": "numpy,torch"},
}


def fetch(python: str, name: str, version: str, work: Path) -> Path:
    root = work / f"{name}-{version}"
    if root.is_dir():
        return root
    sdists = work / "sdists"
    subprocess.run([python, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                    f"{name}=={version}", "-d", str(sdists)], check=True)
    archive = next(sdists.glob(f"{name}-{version}.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    # Some sdists leave out tests/__init__.py, which their tests' relative imports need.
    tests = root / "tests"
    if tests.is_dir() and not (tests / "__init__.py").exists() and any(
            "from ." in p.read_text(errors="replace") for p in tests.glob("test_*.py")):
        (tests / "__init__.py").write_text("")
    return root


def run(python: str, root: Path, paths: list[str], args: list[str], extra: list[str],
        more_env: dict) -> tuple[float, str]:
    env = dict(os.environ, **more_env, PYTHONPATH=os.pathsep.join(str(root / p) for p in paths),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", CUDA_VISIBLE_DEVICES=os.environ.get(
                   "CUDA_VISIBLE_DEVICES", ""))
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *args, *extra]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done.stdout + done.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter with torch, pytest and retainlint")
    ap.add_argument("--work", default="/tmp/leak_suites", help="where the sdists are unpacked")
    ap.add_argument("--only", action="append", choices=sorted(SUITES), help="run only these projects")
    ap.add_argument("--out", default=None, help="write the figures and leaks of every project as JSON here")
    opts = ap.parse_args()
    work = Path(opts.work)
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in opts.only or sorted(SUITES):
        version, paths, args = SUITES[name]
        root = fetch(opts.python, name, version, work)
        plain, out_plain = run(opts.python, root, paths, args, [], ENV.get(name, {}))
        leaks_json = work / f"{name}-leaks.json"
        timed, out_leaks = run(opts.python, root, paths, args,
                               ["--retainlint-leaks", "--retainlint-leaks-json", str(leaks_json)],
                               ENV.get(name, {}))
        last = lambda text: (text.strip().splitlines() or ["(no output)"])[-1]  # noqa: E731
        print(f"== {name} {version}: plain {plain:.1f} s ({last(out_plain)}), leak mode {timed:.1f} s "
              f"({last(out_leaks)}): overhead x{timed / plain:.2f}")
        found = json.loads(leaks_json.read_text())["leaks"] if leaks_json.exists() else None
        if found is None:
            print("   leak mode wrote no JSON: the run did not finish")
            print("\n".join(out_leaks.splitlines()[-30:]))
        for leak in found or []:
            print(f" - {leak['test']} [{leak['when']}]: {leak['what']}, {leak['cpu_bytes']} B, "
                  f"created at {leak['created_at']}\n   held by: {leak['held_by']}\n   {leak['verdict']}")
        results[name] = {"version": version, "plain_s": round(plain, 1), "leak_mode_s": round(timed, 1),
                         "overhead": round(timed / plain, 2), "plain": last(out_plain),
                         "leak_mode": last(out_leaks), "leaks": found}
    if opts.out:
        Path(opts.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
