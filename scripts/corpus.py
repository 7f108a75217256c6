"""Fetch the .py files of a pinned wheel (or sdist) from PyPI into a cache outside the repository.

    python scripts/corpus.py vllm==0.28.0      # prints the directory
    python scripts/corpus.py --development     # every development tree (see DEVELOPMENT)

Nothing fetched here is ever committed; the cache defaults to ~/.cache/retainlint-corpora
(override with RETAINLINT_CORPORA)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

CACHE = Path(os.environ.get("RETAINLINT_CORPORA", Path.home() / ".cache" / "retainlint-corpora"))

# The trees rule changes are judged on (triaged in docs/triage/): requirement -> the
# folders of it that are checked ("" for the whole tree).
DEVELOPMENT = {
    "vllm==0.33.0": [""],
    "transformers==5.23.0": [""],
    "sglang==0.5.23": [""],
    "diffusers==0.42.1": [""],
    "peft==0.21.2": [""],
    "timm==1.0.31": [""],
    "trl==1.16.0": [""],
    "ray==2.60.0": ["ray/train", "ray/serve", "ray/util"],
    "accelerate==1.15.0": [""],
    "deepspeed==0.19.8": ["deepspeed-0.19.8/deepspeed"],
    "pytorch-lightning==2.6.6": [""],
    # First run with v0.2.0 (commit 1545c0a), before the rule changes that followed it:
    # held-out precision.
    "lmdeploy==0.18.0": [""],
    "sentence-transformers==6.2.0": [""],
    "ultralytics==8.4.190": [""],
    "torchtune==0.6.1": [""],
    # Whole trees beyond model serving and training: vision, quantization, kernels, web
    # frameworks, messaging and plotting.
    "torchvision==0.29.2": [""],
    "torchao==0.18.0": [""],
    "bitsandbytes==0.50.2": [""],
    "optimum==2.3.0": [""],
    "xformers==0.0.35": [""],
    "kornia==0.9.0": [""],
    "mmdet==3.3.0": [""],
    "open-clip-torch==3.3.0": [""],
    "flask==3.1.3": [""],
    "fastapi==0.165.0": [""],
    "kombu==5.7.0": [""],
    "matplotlib==3.11.2": [""],
}


def fetch(requirement: str) -> Path:
    name, _, version = requirement.partition("==")
    target = CACHE / f"{name}-{version}"
    if (target / ".complete").exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        # A machine-wide pip configuration may cap versions it keeps on disk (torchvision):
        # only the source files are read here, so the pinned release is wanted whatever it says.
        env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        "-d", tmp, requirement], check=True, env=env)
        [archive] = Path(tmp).iterdir()
        if archive.suffix == ".whl":
            with zipfile.ZipFile(archive) as z:
                z.extractall(target, [m for m in z.namelist() if m.endswith(".py")])
        else:  # a project that publishes only an sdist (DeepSpeed)
            with tarfile.open(archive) as t:
                t.extractall(target, [m for m in t.getmembers()
                                      if m.isfile() and m.name.endswith(".py")], filter="data")
    (target / ".complete").touch()
    return target


def development_paths() -> list[Path]:
    """The folders of every development tree that are checked, fetched if needed."""
    return [fetch(req) / sub for req, subs in DEVELOPMENT.items() for sub in subs]


if __name__ == "__main__":
    if sys.argv[1:] == ["--development"]:
        for path in development_paths():
            print(path)
    else:
        for req in sys.argv[1:]:
            print(fetch(req))
