"""The on-disk cache: per-file project-index summaries keyed by content hash, so a
re-run only re-reads what changed. Lives in `.retainlint_cache/` (tagged as a cache
directory and git-ignored); `--no-cache` skips it. A missing, corrupt or foreign cache
is simply a miss; writes are atomic, so concurrent runs (pre-commit) never see a torn
file."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Optional

from retainlint import __version__
from retainlint.source import interrupts_deferred

_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This directory is retainlint's cache.\n"


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


class SummaryCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.file = directory / f"index-{__version__}.pickle"
        self.entries: dict[str, tuple[str, object]] = {}
        try:
            with open(self.file, "rb") as f:
                loaded = pickle.load(f)
            if isinstance(loaded, dict):
                self.entries = loaded
        except Exception:  # noqa: BLE001 - any unreadable cache is a miss
            self.entries = {}
        self.dirty = False

    def get(self, path: str, data: bytes) -> Optional[object]:
        entry = self.entries.get(os.path.abspath(path))
        if entry is not None and entry[0] == digest(data):
            return entry[1]
        return None

    def put(self, path: str, data: bytes, summary: object) -> None:
        self.entries[os.path.abspath(path)] = (digest(data), summary)
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            for name, content in (("CACHEDIR.TAG", _TAG), (".gitignore", "*\n")):
                marker = self.directory / name
                if not marker.exists():
                    marker.write_text(content)
            with interrupts_deferred():  # Ctrl-C must not strand the temp file
                fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
                try:
                    with os.fdopen(fd, "wb") as f:
                        pickle.dump(self.entries, f, protocol=pickle.HIGHEST_PROTOCOL)
                    os.replace(tmp, self.file)
                except BaseException:
                    os.unlink(tmp)
                    raise
        except OSError:
            pass  # a cache that cannot be written only costs time
