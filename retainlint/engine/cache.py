"""The on-disk cache of a project, one generation per run that changed it.

It holds:
- per-file project-index summaries keyed by content hash, so the index of a re-run only
  re-reads what changed;
- per-file findings, valid while the file's content, the run's configuration (version,
  settings, selected rules), the project-wide facts (`ProjectIndex.fingerprint`) and
  every other file whose facts its lint consulted are unchanged;
- the last run as a whole, so an unchanged tree is answered without validating each file.
Findings and last runs are kept per configuration, side by side, for the few most
recently used (`KEPT_CONFIGS`); summaries are shared by all.

The checked tree is untrusted (the GitHub Action and pre-commit run on other people's
pull requests), so the cache is:
- kept outside it by default, in the user cache directory, one folder per project root;
- plain data (`marshal` of built-in values; our dataclasses travel as tagged tuples
  rebuilt only from a fixed list of types): nothing in it can name code to run;
- signed with a key that never leaves this machine's user cache directory: a file that
  was not written here by this version of retainlint fails its HMAC and is a miss,
  before anything in it is decoded;
- written atomically (temporary files and renames; see `Store`), so a reader sees one
  run's generation or another's, never a mix; a killed run leaves the previous one.
Symbolic links are never followed in the cache directory; a cache directory that is
itself a link is not used."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import marshal
import os
import sys
import secrets
import stat
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Optional, Union

from retainlint import __version__
from retainlint.core.finding import Applicability, Consequence, Finding, Fix, Position, Related, Severity
from retainlint.project.index import ClassSummary, Consulted, FileSummary, FunctionSummary, ProjectIndex, module_name
from retainlint.core.source import interrupts_deferred

if TYPE_CHECKING:
    from retainlint.core.config import Settings

_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This directory is retainlint's cache.\n"
_MAGIC = b"RLCACHE1"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

# Bumped when what is stored changes shape within one version.
SCHEMA = 8


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def user_cache_root() -> Path:
    from platformdirs import user_cache_path

    return user_cache_path("retainlint", appauthor=False)


def default_cache_dir(project_root: Path) -> Path:
    """Outside the checked tree: one folder per project root in the user cache directory."""
    key = hashlib.sha256(os.fsencode(os.path.realpath(project_root))).hexdigest()[:20]
    return user_cache_root() / "projects" / key


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of retainlint's own source: an edited rule (an editable install during
    development) must not meet summaries or findings its old code computed."""
    import retainlint.rules  # installed inside the package, but not always a subfolder of it

    h = hashlib.sha1()
    for folder in (Path(__file__).parent.parent, *map(Path, retainlint.rules.__path__)):
        for path in sorted(folder.rglob("*.py")):
            h.update(path.relative_to(folder).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


# -- the machine's signing key ---------------------------------------------------------

def _read_regular(path: Path) -> bytes:
    """A regular file's bytes, never through a symbolic link."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        return f.read()


@lru_cache(maxsize=1)
def machine_key() -> Optional[bytes]:
    """32 random bytes made once per user and machine, readable by that user only; None
    when it cannot be read or made (then nothing is cached)."""
    path = user_cache_root() / "key"
    for _ in range(2):
        try:
            key = _read_regular(path)
            return key if len(key) == 32 else None
        except FileNotFoundError:
            pass
        except OSError:
            return None
        try:  # publish it whole: written to a temporary file, then linked into place
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".key-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(secrets.token_bytes(32))
                os.link(tmp, path)  # fails if another run made it first: read theirs
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        except OSError:
            return None
    return None


# -- plain values ----------------------------------------------------------------------

# The only types a cache file can bring back, each as (Ellipsis, name, *fields): Ellipsis
# never occurs in the data itself, so a tagged tuple cannot be confused with a real one.
_CLASSES = {cls.__name__: cls for cls in (
    FileSummary, ClassSummary, FunctionSummary, Consulted, Finding, Fix, Related, Position,
    Consequence)}
_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _CLASSES.values()}
_ENUMS = {cls.__name__: cls for cls in (Severity, Applicability)}
_ATOMS = (str, int, float, bool, bytes, type(None))


# Values of any shape: the type checks below are on the exact type, which mypy does not
# follow (an isinstance test would take a str-valued enum or a dict subclass for plain data).
def to_plain(value: Any) -> Any:
    """`value` as built-in types only (raises TypeError on anything else)."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is list:
        return [to_plain(v) for v in value]
    if kind is tuple:
        return tuple(to_plain(v) for v in value)
    if kind is dict:
        return {to_plain(k): to_plain(v) for k, v in value.items()}
    if kind is set:
        return {to_plain(v) for v in value}
    if kind is frozenset:
        return frozenset(to_plain(v) for v in value)
    if kind in _FIELDS:
        return (..., kind.__name__, *(to_plain(getattr(value, f)) for f in _FIELDS[kind]))
    if kind.__name__ in _ENUMS and _ENUMS[kind.__name__] is kind:
        return (..., kind.__name__, value.value)
    raise TypeError(f"cannot cache a {kind.__name__}")


def from_plain(value: Any) -> Any:
    kind = type(value)
    if kind is list:
        return [from_plain(v) for v in value]
    if kind is tuple:
        if value and value[0] is ...:
            name, *fields = value[1:]
            if name in _ENUMS:
                return _ENUMS[name](*fields)
            return _CLASSES[name](*map(from_plain, fields))
        return tuple(from_plain(v) for v in value)
    if kind is dict:
        return {from_plain(k): from_plain(v) for k, v in value.items()}
    if kind is set:
        return {from_plain(v) for v in value}
    if kind is frozenset:
        return frozenset(from_plain(v) for v in value)
    return value


def pack(value: object) -> bytes:
    return marshal.dumps(to_plain(value))


def unpack(data: bytes) -> Any:
    """What `pack` was given: the caller knows its type."""
    return from_plain(marshal.loads(data))


# -- one generation --------------------------------------------------------------------

# How many configurations (rule selections, per-file ignores, configuration files...) keep
# their results side by side, the most recently used first: switching `--select` back and
# forth stays warm, while the disk a project takes stays bounded (each configuration costs
# its run file and its per-file findings in the data file, roughly a tenth of what the
# summaries all configurations share take).
KEPT_CONFIGS = 4


class Store:
    """The cache of one project, one generation at a time:
    - `head-*.bin`, small and signed: the SHA-256 of the newest data file, and the
      configurations kept, most recently used first (at most `KEPT_CONFIGS`);
    - `run-*-<config>.bin`, signed: the last cacheable run under one configuration (see
      runner.run), and the SHA-256 of the data file written with it;
    - `data-<sha256>.bin`, named by its content and read only when needed: `summaries`
      (absolute path -> (key, packed summary, or b"" when the file does not parse)),
      shared by every configuration, and `findings` (config -> path -> packed `Entry`
      fields).
    A data file never changes once written, so a signed file names exactly the data of one
    generation; a reader never mixes two runs' files. The data read is the newest (the
    head's), whichever configuration wrote it: what it holds is checked against the files
    before use (digests, and every other file a result consulted)."""

    def __init__(self, directory: Path, key: bytes, config: str = "") -> None:
        self.directory = directory
        self.key = key
        self.config = config  # "": only the summaries are used (no findings, no run)
        self.head_file = directory / f"head-{__version__}-{SCHEMA}.bin"
        self.file = directory / f"run-{__version__}-{SCHEMA}-{config or 'none'}.bin"
        self.run: dict[str, Any] = {}  # see runner.run
        self._data_sha = ""
        self.recent: list[str] = []  # configurations kept, most recently used first
        self._data: Optional[tuple[dict[str, tuple[str, bytes]],
                                   dict[str, dict[str, bytes]]]] = None
        self._run_dirty = self._data_dirty = False
        head = self._load(self.head_file)
        if head is not None:
            self._data_sha, recent = head
            self.recent = [c for c in recent if type(c) is str] if type(recent) is list else []
        if config:
            loaded = self._load(self.file)
            if loaded is not None:
                self._data_sha = self._data_sha or loaded[0]
                self.run = loaded[1]

    @classmethod
    def open(cls, directory: Path, config: str = "") -> Optional["Store"]:
        """None when there can be no cache: no key, or the directory is a symbolic link.
        `config`: the configuration whose findings and last run are read and written."""
        key = machine_key()
        if key is None or os.path.islink(directory):
            return None
        return cls(directory, key, config)

    def _sign(self, payload: bytes) -> bytes:
        return hmac.new(self.key, payload, hashlib.sha256).digest()

    def _load(self, path: Path) -> Optional[tuple[str, Any]]:
        """(a data file's SHA-256, a value) from a signed file written by this code."""
        try:
            data = _read_regular(path)
        except OSError:
            return None
        tag, payload = data[len(_MAGIC):len(_MAGIC) + 32], data[len(_MAGIC) + 32:]
        if not data.startswith(_MAGIC) or not hmac.compare_digest(tag, self._sign(payload)):
            return None  # not written here, or torn: a miss, and nothing of it is decoded
        try:
            code, data_sha, value = marshal.loads(payload)
        except (ValueError, EOFError, TypeError):
            return None
        if code != code_digest() or type(data_sha) is not str:
            return None
        return data_sha, value

    def _write_signed(self, path: Path, value: Any) -> None:
        payload = marshal.dumps((code_digest(), self._data_sha, value))
        _write_atomic(path, _MAGIC + self._sign(payload) + payload)

    def _data_file(self, sha: str) -> Path:
        return self.directory / f"data-{sha}.bin"

    @property
    def data(self) -> tuple[dict[str, tuple[str, bytes]], dict[str, dict[str, bytes]]]:
        """(summaries, findings per configuration) of this generation; empty when its
        file is gone."""
        if self._data is None:
            self._data = {}, {}
            if self._data_sha:
                try:
                    payload = _read_regular(self._data_file(self._data_sha))
                    if hashlib.sha256(payload).hexdigest() == self._data_sha:
                        summaries, findings = marshal.loads(payload)
                        if type(summaries) is dict and type(findings) is dict:
                            self._data = summaries, findings
                except (OSError, ValueError, EOFError, TypeError):
                    pass
        return self._data

    @property
    def summaries(self) -> dict[str, tuple[str, bytes]]:
        return self.data[0]

    @property
    def findings(self) -> dict[str, bytes]:
        """This configuration's per-file findings."""
        return self.data[1].setdefault(self.config, {})

    def changed_data(self) -> None:
        self._data_dirty = True

    def set_run(self, run: dict[str, Any]) -> None:
        if run != self.run:
            self.run = run
            self._run_dirty = True

    def save(self) -> None:
        recent = ([self.config] if self.config else []) + [c for c in self.recent if c != self.config]
        recent = recent[:KEPT_CONFIGS]
        if not (self._run_dirty or self._data_dirty or recent != self.recent):
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            if os.path.islink(self.directory):
                return
            for name, content in (("CACHEDIR.TAG", _TAG), (".gitignore", "*\n")):
                _create_once(self.directory / name, content.encode())
            _remove_stale(self.directory, keep=f"data-{self._data_sha}.bin")
            if self._data_dirty:
                summaries, findings = self.data
                kept = {c: findings[c] for c in recent if c in findings}  # the others go
                payload = marshal.dumps((summaries, kept))
                self._data_sha = hashlib.sha256(payload).hexdigest()
                _write_atomic(self._data_file(self._data_sha), payload)
            if self._run_dirty and self.config:
                self._write_signed(self.file, self.run)
            self._write_signed(self.head_file, recent)
            self.recent = recent
            _remove_runs(self.directory, {f"run-{__version__}-{SCHEMA}-{c}.bin" for c in recent})
        except (OSError, ValueError):
            pass  # a cache that cannot be written (or holds something odd) only costs time
        self._run_dirty = self._data_dirty = False


def _remove_runs(directory: Path, keep: set[str]) -> None:
    """The run files of configurations no longer kept."""
    prefix = f"run-{__version__}-{SCHEMA}-"
    for entry in os.scandir(directory):
        if entry.name.startswith(prefix) and entry.name not in keep:
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def _write_atomic(path: Path, content: bytes) -> None:
    with interrupts_deferred():  # Ctrl-C must not strand the temp file
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cache-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            os.replace(tmp, path)  # replaces a link itself, never its target
        except BaseException:
            os.unlink(tmp)
            raise


def _create_once(path: Path, content: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as f:
        f.write(content)


def _remove_stale(directory: Path, keep: str) -> None:
    """Temporary files a killed run left behind, and data files of older generations,
    once no run can still be writing or about to read them (ten minutes on; a reader
    that finds its data gone only loses time)."""
    horizon = time.time() - 600
    for entry in os.scandir(directory):
        name = entry.name
        if name != keep and (name.startswith("data-") or name.startswith(".cache-")):
            try:
                if entry.stat(follow_symlinks=False).st_mtime < horizon:
                    os.unlink(entry.path)
            except OSError:
                pass


class SummaryCache:
    """Summaries are stored packed one by one and unpacked only when asked for: a run
    that needs a few (the files that changed) does not pay for all of them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.entries = store.summaries

    def get(self, path: str, data: bytes) -> Union[FileSummary, Literal[False], None]:
        """The summary of this content of `path` (False: it does not parse), or None."""
        entry = self.entries.get(os.path.abspath(path))
        if entry is not None and entry[0] == self.key(path, data):
            return _summary(entry[1])
        return None

    def stored(self, path: str, key: str) -> Union[FileSummary, Literal[False], None]:
        """The summary stored for `path` if it was made from the content `key` names."""
        entry = self.entries.get(os.path.abspath(path))
        if entry is None or entry[0] != key:
            return None
        return _summary(entry[1])

    def put(self, path: str, data: bytes, summary: Union[FileSummary, Literal[False]]) -> None:
        try:
            blob = pack(summary) if summary else b""
        except TypeError:
            return  # not plain data: not kept
        self.entries[os.path.abspath(path)] = (self.key(path, data), blob)
        self.store.changed_data()

    @staticmethod
    def key(path: str, data: bytes) -> str:
        # The summary names the module, which depends on the `__init__.py` files around it.
        return f"{digest(data)} {module_name(path)}"


def _summary(blob: bytes) -> Union[FileSummary, Literal[False], None]:
    """A stored summary unpacked (b"": the file does not parse); None if it is not one."""
    if not blob:
        return False
    summary = unpack(blob)
    return summary if isinstance(summary, FileSummary) else None


@dataclasses.dataclass
class Entry:
    digest: str  # of the file's content
    config: str  # version, settings, rules
    facts: str  # ProjectIndex.fingerprint()
    consulted: Consulted  # other files' facts used, with their digests
    findings: list[Finding]


class FindingsCache:
    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, path: str, digest_: str, config: str, facts: str, index: ProjectIndex,
            digests: dict[str, str]) -> Optional[Entry]:
        packed = self.store.findings.get(path)
        if packed is None:
            return None
        entry = Entry(*unpack(packed))
        if (entry.digest != digest_ or entry.config != config or entry.facts != facts
                or not index.still_valid(entry.consulted, digests)):
            return None
        return entry

    def put(self, path: str, entry: Entry) -> None:
        try:
            self.store.findings[path] = pack(tuple(getattr(entry, f.name)
                                                   for f in dataclasses.fields(Entry)))
        except TypeError:
            return  # not plain data (say, a fix still holding its CST nodes): not kept
        self.store.changed_data()


def config_key(settings: Settings, codes: Iterable[str]) -> str:
    """What the findings depend on besides the files: not the output format (the fixes'
    line edits are always kept) nor the severity floor (applied when they are shown)."""
    installed = site_stamp() if settings.installed_types else ()
    return digest(repr((__version__, SCHEMA, settings, sorted(codes), installed)).encode())


def site_stamp() -> tuple[tuple[str, int], ...]:
    """The folders packages are found in, with their modification times: installing,
    upgrading or removing a package changes one, so what was learnt from installed packages
    (installed-types) is not reused across such a change. A stat per folder, no listing."""
    stamps = []
    here = os.getcwd()
    for folder in sys.path:
        if folder in ("", here):
            continue  # the working directory (`python -c`, `-m`): not where packages live
        try:
            stamps.append((folder, os.stat(folder).st_mtime_ns))
        except OSError:
            continue  # a zip file that is not there, a removed folder
    return tuple(stamps)
