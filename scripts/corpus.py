"""Fetch the .py files of a pinned wheel from PyPI into a cache outside the repository.

    python scripts/corpus.py vllm==0.28.0      # prints the directory

Nothing fetched here is ever committed; the cache defaults to ~/.cache/retainlint-corpora
(override with RETAINLINT_CORPORA)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

CACHE = Path(os.environ.get("RETAINLINT_CORPORA", Path.home() / ".cache" / "retainlint-corpora"))


def fetch(requirement: str) -> Path:
    name, _, version = requirement.partition("==")
    target = CACHE / f"{name}-{version}"
    if (target / ".complete").exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        "-d", tmp, requirement], check=True)
        [wheel] = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as z:
            for member in z.namelist():
                if member.endswith(".py"):
                    z.extract(member, target)
    (target / ".complete").touch()
    return target


if __name__ == "__main__":
    for req in sys.argv[1:]:
        print(fetch(req))
