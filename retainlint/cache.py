"""The on-disk cache, in `.retainlint_cache/` (tagged as a cache directory and
git-ignored; `--no-cache` skips it, `--cache-dir` moves it):

- per-file project-index summaries keyed by content hash, so the index of a re-run only
  re-reads what changed;
- per-file findings, valid while the file's content, the run's configuration (version,
  settings, selected rules), the project-wide facts (`ProjectIndex.fingerprint`) and
  every other file whose facts its lint consulted are unchanged.

A missing, corrupt or foreign cache is simply a miss; writes are atomic, so concurrent
runs (pre-commit) never see a torn file."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from retainlint import __version__
from retainlint.finding import Finding
from retainlint.index import Consulted, ProjectIndex, module_name
from retainlint.source import interrupts_deferred

_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This directory is retainlint's cache.\n"


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


# Bumped when what is stored changes shape within one version.
SCHEMA = 3
_CODE = "<code>"  # entry holding the digest of the retainlint code that wrote the cache


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of retainlint's own source: an edited rule (an editable install during
    development) must not meet summaries or findings its old code computed."""
    import retainlint.rules  # installed inside the package, but not always a subfolder of it

    h = hashlib.sha1()
    for folder in (Path(__file__).parent, *map(Path, retainlint.rules.__path__)):
        for path in sorted(folder.rglob("*.py")):
            h.update(path.relative_to(folder).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


class _PickleFile:
    kind = ""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.file = directory / f"{self.kind}-{__version__}-{SCHEMA}.pickle"
        self.entries: dict = {}
        try:
            with open(self.file, "rb") as f:
                loaded = pickle.load(f)
            if isinstance(loaded, dict) and loaded.get(_CODE) == code_digest():
                self.entries = loaded
        except Exception:  # noqa: BLE001 - any unreadable cache is a miss
            self.entries = {}
        self.entries[_CODE] = code_digest()
        self.dirty = False


class SummaryCache(_PickleFile):
    """Summaries are stored pickled one by one, and unpickled only when asked for: a run
    that needs a few (the files that changed) does not pay for all of them."""

    kind = "index"

    def get(self, path: str, data: bytes) -> Optional[object]:
        """The summary of this content of `path` (False: it does not parse), or None."""
        entry = self.entries.get(os.path.abspath(path))
        if entry is not None and entry[0] == self._key(path, data):
            return pickle.loads(entry[1]) if entry[1] else False
        return None

    def last(self, path: str) -> Optional[object]:
        """The summary stored for `path`, whatever content it was made from."""
        entry = self.entries.get(os.path.abspath(path))
        if entry is None:
            return None
        return pickle.loads(entry[1]) if entry[1] else False

    def put(self, path: str, data: bytes, summary: object) -> None:
        blob = pickle.dumps(summary, protocol=pickle.HIGHEST_PROTOCOL) if summary else b""
        self.entries[os.path.abspath(path)] = (self._key(path, data), blob)
        self.dirty = True

    @staticmethod
    def _key(path: str, data: bytes) -> str:
        # The summary names the module, which depends on the `__init__.py` files around it.
        return f"{digest(data)} {module_name(path)}"

    def save(self) -> None:
        if self.dirty:
            _store(self.directory, self.file, self.entries)


class RunCache(_PickleFile):
    """The last cacheable run as a whole, small enough to load first: `paths` (as given),
    `config`, `digests` (absolute path -> content and module name), `findings` (path ->
    its findings; files without any left out) and `depends` (absolute path -> the other
    files its findings consulted, absolute)."""

    kind = "run"

    def save(self) -> None:
        _store(self.directory, self.file, self.entries)


@dataclass
class Entry:
    digest: str  # of the file's content
    config: str  # version, settings, rules
    facts: str  # ProjectIndex.fingerprint()
    consulted: Consulted  # other files' facts used, with their digests
    findings: list[Finding]


class FindingsCache(_PickleFile):
    kind = "findings"

    def get(self, path: str, digest_: str, config: str, facts: str, index: ProjectIndex,
            digests: dict[str, str]) -> Optional[list[Finding]]:
        entry = self.entries.get(path)
        if (entry is None or entry.digest != digest_ or entry.config != config
                or entry.facts != facts or not index.still_valid(entry.consulted, digests)):
            return None
        return entry.findings

    def put(self, path: str, entry: Entry) -> None:
        self.entries[path] = entry
        self.dirty = True

    def save(self) -> None:
        if self.dirty:
            _store(self.directory, self.file, self.entries)


def config_key(settings, codes, edits: bool) -> str:
    return digest(repr((__version__, SCHEMA, settings, sorted(codes), edits)).encode())


def _store(directory: Path, file: Path, entries: dict) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, content in (("CACHEDIR.TAG", _TAG), (".gitignore", "*\n")):
            marker = directory / name
            if not marker.exists():
                marker.write_text(content)
        with interrupts_deferred():  # Ctrl-C must not strand the temp file
            fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    pickle.dump(entries, f, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(tmp, file)
            except BaseException:
                os.unlink(tmp)
                raise
    except OSError:
        pass  # a cache that cannot be written only costs time
