"""The facts read from installed packages (project/installed_types.py), kept between
runs: one file per (distribution, version) in the user cache directory, in the result
cache's format - `marshal` of plain strings, signed with the machine's key, written
atomically, never through a link - so astroid reads a package version once. Facts are
kept with the stamp of the source they were read from (`source_stamp`): a package
edited in place under the same version is read again."""

from __future__ import annotations

import hmac
import hashlib
import marshal
import re
from functools import lru_cache, partial
from pathlib import Path
from typing import Callable, Optional

from retainlint import __version__
from retainlint.core.config import Settings
from retainlint.engine.cache import _MAGIC, SCHEMA, _read_regular, _write_atomic, machine_key, user_cache_root
from retainlint.project import installed_types as reader, names
from retainlint.project.installed_types import Verdicts, installed_verdicts

_SAFE = re.compile(r"[^A-Za-z0-9_.+-]")


@lru_cache(maxsize=1)
def reader_digest() -> str:
    """A digest of the code that makes the facts: an edited reader does not meet facts
    its old code made (and an edit elsewhere does not make every package read again)."""
    h = hashlib.sha1()
    for module in (reader, names):
        h.update(Path(module.__file__ or "").read_bytes())
    return h.hexdigest()


class SignedFacts:
    """A `FactStore` in `directory` (default: the user cache directory's
    `installed-types/`); without a key nothing is kept and every fact is read again."""

    def __init__(self, directory: Optional[Path] = None) -> None:
        self.directory = directory or user_cache_root() / "installed-types"
        self.key = machine_key()

    def _file(self, dist: str, version: str) -> Path:
        return self.directory / _SAFE.sub("_", f"{dist}-{version}-{__version__}-{SCHEMA}.bin")

    def _sign(self, payload: bytes) -> bytes:
        assert self.key is not None
        return hmac.new(self.key, payload, hashlib.sha256).digest()

    def load(self, dist: str, version: str, stamp: str) -> dict[str, str]:
        if self.key is None:
            return {}
        try:
            data = _read_regular(self._file(dist, version))
        except OSError:
            return {}
        tag, payload = data[len(_MAGIC):len(_MAGIC) + 32], data[len(_MAGIC) + 32:]
        if not data.startswith(_MAGIC) or not hmac.compare_digest(tag, self._sign(payload)):
            return {}  # not written here: a miss, and nothing of it is decoded
        try:
            code, kept_stamp, facts = marshal.loads(payload)
        except (ValueError, EOFError, TypeError):
            return {}
        if code != reader_digest() or kept_stamp != stamp or type(facts) is not dict or not all(
                type(k) is str and type(v) is str for k, v in facts.items()):
            return {}
        return facts

    def save(self, dist: str, version: str, stamp: str, facts: dict[str, str]) -> None:
        if self.key is None:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            if self.directory.is_symlink():
                return
            payload = marshal.dumps((reader_digest(), stamp, facts))
            _write_atomic(self._file(dist, version), _MAGIC + self._sign(payload) + payload)
        except (OSError, ValueError):
            pass  # facts that cannot be kept are read again next run


class NoFacts:
    """A `FactStore` that keeps nothing: a run without the cache (`--no-cache`) believes
    nothing an earlier run wrote, and leaves nothing behind."""

    def load(self, dist: str, version: str, stamp: str) -> dict[str, str]:
        return {}

    def save(self, dist: str, version: str, stamp: str, facts: dict[str, str]) -> None:
        return None


def installed_types(settings: Settings,
                    kept: bool = True) -> Optional[Callable[[set[str], set[str]], Verdicts]]:
    """What the project index asks about names from outside the checked tree; None when
    the `installed-types` setting (or `--no-installed-types`) turns it off. `kept`: facts
    are read from and written to the user cache directory (not with `--no-cache`)."""
    if not settings.installed_types:
        return None
    store: SignedFacts | NoFacts = SignedFacts() if kept else NoFacts()
    return partial(installed_verdicts, store=store)  # picklable: it may run in another process
