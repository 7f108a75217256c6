"""Check (and optionally fix) a list of files, in a process pool when there are many."""

from __future__ import annotations

import difflib
import logging
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from retainlint.core.config import Settings
from retainlint.core.gcpause import gc_paused
from retainlint.core.finding import Applicability, Finding, INTERNAL_ERROR, Position, Severity, source_error
from retainlint.engine.cache import Entry, FindingsCache, Store, SummaryCache, config_key, pack, unpack
from retainlint.engine.installed_facts import installed_types
from retainlint.engine.interrupts import (_Interrupted, _OverBudget, _analysing, _end_workers,
                                          _interrupts_between_files, _writing, file_budget)
from retainlint.engine.progress import TALLY, Progress, _no_progress
from retainlint.engine.workers import (Workers, _batches, _init_worker,
                                       _summarize_many, index_of, stopped)
from retainlint.project.index import Consulted, FileSummary, ProjectIndex, summarize
from retainlint.project.module_names import module_name
from retainlint.project.prefilter import rules_triggered
from retainlint.engine.registry import all_prefilters, all_rules, catalog
from retainlint.engine.suppress import unknown_noqa_codes, unused_in

if TYPE_CHECKING:
    from retainlint.analysis.rule import Rule
    from retainlint.engine.lint import FileResult

# retainlint.engine.lint and retainlint.engine.fixer (libcst, the rules) are imported where a file is
# linted: a run answered from the cache never needs them.
from retainlint.core.source import WriteError, confined, read_source, write_atomic
from retainlint.engine import notebook
from retainlint.engine.notebook import NotebookError, read_python

log = logging.getLogger("retainlint.runner")


@dataclass(frozen=True)
class Mode:
    fix: bool = False  # write fixed files
    diff: bool = False  # compute fixes, return a diff, write nothing
    unsafe_fixes: bool = False
    edits: bool = False  # attach line edits to each fix (json output)
    # Fix only findings of this severity or higher, those the output shows (None: all).
    floor: Optional[Severity] = None


@dataclass
class FileOutcome:
    path: str
    findings: list[Finding] = field(default_factory=list)
    fixed: int = 0
    diff: str = ""
    fix_errors: list[Finding] = field(default_factory=list)  # unwritable file, broken fix
    fixed_codes: list[str] = field(default_factory=list)  # the rule of each fix applied
    before: list[int] = field(default_factory=list)  # severity ranks of the findings before fixing
    consulted: Optional[Consulted] = None  # other files' facts its lint used (for the cache)
    abandoned: bool = False  # its time budget ran out: not a result to keep


@dataclass
class RunResult:
    files: int
    findings: list[Finding]
    fixed: int
    diffs: list[str]
    notes: list[str] = field(default_factory=list)  # warnings for stderr
    fixed_codes: dict[str, list[str]] = field(default_factory=dict)  # per file, with --fix/--diff
    before: list[int] = field(default_factory=list)  # severity ranks of findings before fixes

    @classmethod
    def merged(cls, results: Sequence["RunResult"]) -> "RunResult":
        """One result for runs over several projects."""
        return cls(sum(r.files for r in results),
                   sorted((f for r in results for f in r.findings), key=Finding.sort_key),
                   sum(r.fixed for r in results), [d for r in results for d in r.diffs],
                   [n for r in results for n in r.notes],
                   {p: c for r in results for p, c in r.fixed_codes.items()},
                   [b for r in results for b in r.before])


def _applies(finding: Finding, mode: Mode) -> bool:
    fix = finding.fix
    if fix is None or fix.applicability is Applicability.NONE:
        return False
    if mode.floor is not None and finding.severity.rank > mode.floor.rank:
        return False  # a finding the output hides: its fix is not applied either
    return fix.applicability is Applicability.SAFE or mode.unsafe_fixes


def check_file(path: str, codes: Sequence[str], settings: Settings, mode: Mode,
               data: bytes | None = None, index: ProjectIndex | None = None) -> FileOutcome:
    with gc_paused():  # the file's tree dies with `_check_file`'s frame, before collections resume
        return _check_file(path, codes, settings, mode, data, index)


def _check_file(path: str, codes: Sequence[str], settings: Settings, mode: Mode,
                data: bytes | None, index: ProjectIndex | None) -> FileOutcome:
    outcome = FileOutcome(path)
    if data is None:
        try:
            data = read_python(path)
        except OSError as e:
            outcome.findings.append(source_error(path, f"cannot read: {e.strerror or e}"))
            return outcome
        except NotebookError as e:
            outcome.findings.append(source_error(path, str(e)))
            return outcome
    from retainlint.engine import fixer
    from retainlint.engine.lint import lint_bytes

    rules = [r for r in all_rules() if r.code in codes]
    if mode.fix or mode.diff:
        result = _fix_and_write(path, data, rules, settings, mode, outcome, index)
    elif index is not None:
        with index.recording() as outcome.consulted:
            result = lint_bytes(path, data, rules, settings, keep_module=mode.edits, index=index)
    else:
        result = lint_bytes(path, data, rules, settings, keep_module=mode.edits, index=index)
    if mode.edits and result.module is not None:
        for finding in result.findings:
            if finding.fix is not None and finding.fix.applicability is not Applicability.NONE:
                finding.fix.edits = fixer.edits_of(result.module, finding.fix)
    for finding in result.findings:
        if finding.fix is not None:
            finding.fix.replacements = {}  # CST nodes do not need to cross processes
    outcome.findings.extend(result.findings + outcome.fix_errors)
    return outcome


def fix_bytes(path: str, data: bytes, rules: Sequence[type[Rule]], settings: Settings,
              mode: Mode, outcome: FileOutcome,
              index: ProjectIndex | None = None) -> tuple[FileResult, bytes]:
    """Apply fixes round after round until none applies; returns the final lint result
    and the fixed source (which always parses)."""
    from retainlint.engine import fixer
    from retainlint.engine.lint import lint_bytes, parse

    result = lint_bytes(path, data, rules, settings, keep_module=True, index=index)
    outcome.before = [f.severity.rank for f in result.findings]
    for _ in range(fixer.MAX_ROUNDS):
        fixes = [f.fix for f in result.findings if f.fix is not None and _applies(f, mode)]
        if not fixes or result.module is None:
            break
        code_of = {id(f.fix): f.code for f in result.findings if f.fix is not None}
        new_module, applied = fixer.apply(result.module, fixes)
        if not applied:
            break
        new_data = new_module.bytes
        _, error = parse(path, new_data)
        if error is not None:
            outcome.fix_errors.append(_internal(path, f"a fix produced code that does not parse "
                                                    f"({error.message}); not applied"))
            break
        data = new_data
        outcome.fixed += len(applied)
        outcome.fixed_codes += [code_of[id(fix)] for fix in applied]
        result = lint_bytes(path, data, rules, settings, keep_module=True, index=index)
    return result, data


def _fix_and_write(path: str, original: bytes, rules: Sequence[type[Rule]], settings: Settings,
                   mode: Mode, outcome: FileOutcome, index: ProjectIndex | None) -> FileResult:
    from retainlint.engine.lint import lint_bytes

    result, data = fix_bytes(path, original, rules, settings, mode, outcome, index)
    if data == original:
        return result
    if mode.diff and notebook.is_notebook(path):
        outcome.diff = notebook.diff(path, original.decode("utf-8"), data.decode("utf-8"))
        return result
    if mode.diff:
        outcome.diff = "".join(difflib.unified_diff(
            original.decode("utf-8", "replace").splitlines(keepends=True),
            data.decode("utf-8", "replace").splitlines(keepends=True),
            fromfile=path, tofile=path,
        ))
        return result
    _writing()  # no budget nor interrupt cuts a write short (it is atomic, and short)
    try:
        if notebook.is_notebook(path):  # the fixed cells put back in the notebook
            raw = read_source(path)
            if notebook.parse(raw).source.encode("utf-8") != original:
                raise WriteError("cannot write fix: file changed while being fixed (left unchanged)")
            write_atomic(path, notebook.rebuild(raw, data.decode("utf-8")), expected=raw)
        else:
            write_atomic(path, data, expected=original)  # not over an edit saved meanwhile
    except (WriteError, NotebookError, OSError) as e:
        outcome.fixed = 0
        outcome.fixed_codes = []
        message = str(e) if isinstance(e, WriteError) else \
            f"cannot write fix: {e.strerror if isinstance(e, OSError) else e} (left unchanged)"
        outcome.fix_errors.append(source_error(path, message))
        return lint_bytes(path, original, rules, settings, keep_module=mode.edits, index=index)
    return result


def _internal(path: str, message: str) -> Finding:
    return Finding(INTERNAL_ERROR[0], INTERNAL_ERROR[1], message, path,
                   Position(1, 1), Position(1, 1), Severity.ERROR)


def _check_guarded(path: str, codes: Sequence[str], settings: Settings, mode: Mode,
                   index: ProjectIndex | None, data: bytes | None = None) -> FileOutcome:
    """One file's bug in retainlint must not end the run for the others, nor one file's
    size or shape hold it past the file's time budget."""
    budget = file_budget()
    with _analysing(budget) as expired:
        try:
            outcome = check_file(path, codes, settings, mode, data, index)
        except _OverBudget:
            outcome = FileOutcome(path)
        except Exception as e:  # noqa: BLE001 - reported to the user as an internal error
            outcome = FileOutcome(path, [_internal(path, f"internal error: {type(e).__name__}: "
                                                         f"{e}; please report it")])
    if expired:  # also when the library code it landed in turned it into another error
        return FileOutcome(path, [source_error(path, f"cannot check: time budget exceeded "
                                                     f"({budget:g} s of CPU); not checked")],
                           abandoned=True)
    return outcome


def _check_many(args: tuple[list[tuple[str, bytes]], Sequence[str], Settings, Mode, int]
                ) -> list[FileOutcome]:
    """In a worker. The last item: the number the project index was published under."""
    items, codes, settings, mode, published = args
    index = index_of(published)
    outcomes: list[FileOutcome] = []
    for p, data in items:
        if stopped():
            break  # interrupted: finish the file in hand (written whole or not at all), no more
        outcomes.append(_check_guarded(p, codes, settings, mode, index, data))
    return outcomes


def build_index(paths: Sequence[str], settings: Settings, workers: Workers,
                contents: dict[str, bytes] | None = None,
                cache: SummaryCache | None = None, progress: "Progress | None" = None,
                unsaved: dict[str, bytes] | None = None) -> ProjectIndex:
    """The project index over every checked file (the cross-file rules need all of them,
    even those no rule will parse); summaries of unchanged files come from the cache.
    `unsaved`: sources that differ from the files on disk (an editor's buffer)."""
    summaries: list[FileSummary] = []
    missing: list[tuple[str, bytes | None]] = []
    for path in paths:
        data = contents.get(path) if contents is not None else None
        hit = cache.get(path, data) if cache is not None and data is not None else None
        if unsaved is not None and path in unsaved:
            own = summarize(path, unsaved[path], all_prefilters())
            if own is not None:
                summaries.append(own)
        elif hit is None:
            missing.append((path, data))
        elif isinstance(hit, FileSummary):
            summaries.append(hit)
    advance = (progress or _no_progress)("Indexing", len(missing))
    TALLY.summarized += len(missing)
    fresh: list[tuple[str, FileSummary | None]] = []
    if workers.pooled(len(missing)):
        pool = workers.pool()
        # No cyclic collection here while the summaries pile up (each full collection
        # walked all of them); the workers pause it per batch.
        with gc_paused():
            try:
                for summarized in pool.map(_summarize_many, _batches(missing, workers.jobs)):
                    fresh.extend(summarized)
                    advance(len(summarized))
            except BrokenProcessPool:  # a worker crashed: summarize here, one by one
                workers.discard()
                fresh = _summarize_many(missing)
    else:
        for batch in _batches(missing, 1):
            fresh.extend(_summarize_many(batch))
            advance(len(batch))
    for path, summary in fresh:
        if summary is not None:
            summaries.append(summary)
        if cache is not None and contents is not None and path in contents:
            cache.put(path, contents[path], summary or False)  # False: does not parse
    # Without a cache (`--no-cache`) the facts of installed packages are read afresh too.
    (progress or _no_progress)("Reading installed packages", 0)
    installed = installed_types(settings, kept=cache is not None)
    return ProjectIndex(summaries, settings.heavy_types, installed and (
        lambda names, decorators: workers.apart(installed, names, decorators)))


def _check_all(contents: dict[str, bytes], paths: list[str], codes: Sequence[str],
               settings: Settings, mode: Mode, index: ProjectIndex, workers: Workers,
               progress: "Progress | None" = None) -> list[FileOutcome]:
    """`contents`: what this run read of `paths`. Each file is checked as read, never
    read again: its findings are cached under that content's digest."""
    pooled = workers.pooled(len(paths))
    stop = threading.Event()
    advance = (progress or _no_progress)("Fixing" if mode.fix else "Checking", len(paths))
    TALLY.linted += len(paths)
    outcomes: list[FileOutcome] = []
    if not pooled:
        with _interrupts_between_files(stop):
            for p in paths:
                if stop.is_set():
                    break
                try:
                    outcomes.append(_check_guarded(p, codes, settings, mode, index, contents[p]))
                except _Interrupted:
                    break  # `_interrupts_between_files` raises KeyboardInterrupt
                advance(1)
        return outcomes
    pool = workers.pool()
    with _interrupts_between_files(workers.stop, lambda: _end_workers(pool)):
        try:
            published = workers.publish(index)  # to each worker once, not with every batch
            items = [(p, contents[p]) for p in paths]
            for batch in pool.map(_check_many, [(b, codes, settings, mode, published)
                                                for b in _batches(items, workers.jobs)]):
                outcomes.extend(batch)
                advance(len(batch))
        except BrokenProcessPool:  # a worker died (say, a native crash): isolate the file
            workers.discard()
            done = {o.path for o in outcomes}
            outcomes.extend(_check_alone(p, contents[p], codes, settings, mode, workers)
                            for p in paths if p not in done and not workers.stop.is_set())
        return outcomes


def _check_alone(path: str, data: bytes, codes: Sequence[str], settings: Settings,
                 mode: Mode, workers: Workers) -> FileOutcome:
    """One file in a process of its own, so that a crash loses only that file."""
    published = workers.published()
    with ProcessPoolExecutor(max_workers=1, initializer=_init_worker,
                             initargs=(None, None, published)) as pool:
        try:
            [outcome] = pool.submit(_check_many, ([(path, data)], codes, settings, mode,
                                                  published[0])).result()
            return outcome
        except BrokenProcessPool:
            return FileOutcome(path, [_internal(path, "internal error: the process checking "
                                                      "this file crashed; please report it")])


def run(paths: Sequence[str], codes: Sequence[str], settings: Settings, mode: Mode,
        jobs: int | None = None, cache_dir: Path | None = None,
        progress: Progress | None = None, context: Sequence[str] = ()) -> RunResult:
    """`cache_dir`: where the caches live (None: no cache). `context`: the other files of
    the project, in the project index but neither checked nor reported. With a cache,
    --fix and --diff start from the findings a check of the tree would report (cached):
    only files with a fix to apply are parsed."""
    # This run reads and fixes only inside the project (symlinks too).
    with confined(settings.root), Workers(jobs or os.cpu_count() or 1) as workers:
        codes = [code for code, _ in catalog() if code in set(codes)]
        TALLY.summarized = TALLY.linted = 0
        store = None if cache_dir is None or not codes \
            else Store.open(cache_dir, config_key(settings, codes))
        if store is not None and not (mode.fix or mode.diff):
            same = _unchanged(store, paths, context)
            if same is not None:
                return same
        stats: dict[str, Stat] = {}
        readable, project, outcomes = _read(paths, context, stats if store is not None else None)
        noqa = unknown_noqa(readable)
        if store is None:
            found = _run_uncached(readable, project, codes, settings, mode, workers, progress)
        else:
            found, digests = _check_cached(store, readable, project, codes, settings, workers,
                                           progress, stats, noqa)
            if mode.fix or mode.diff:
                found = _fix_cached(store, found, readable, project, digests, codes, settings, mode,
                                    workers, progress, context)
            if not mode.edits:  # kept in the cache, but only json and sarif show them
                for fix in (f.fix for o in found for f in o.findings):
                    if fix is not None:
                        fix.edits = None
        log.info("%d files: %d summarized, %d parsed and linted, the rest answered from %s",
                 len(readable), TALLY.summarized, TALLY.linted,
                 "the cache" if store is not None else "the prefilters")
        return _result(paths, outcomes + [o for o in found if o.path in readable], noqa)


# What stands for a file's content from one run to the next, as in git's index and ruff's
# cache: size, modification and change times, inode, device.
Stat = tuple[int, int, int, int, int]
# A file changed this long before a run may change again within the same tick of the
# file system's clock after it was read, and keep its stat: it is read again next run.
RACY_NS = 2_000_000_000


def _stat(path: str) -> Optional[Stat]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev


def _unchanged(store: Store, paths: Sequence[str], context: Sequence[str]) -> Optional[RunResult]:
    """The last run's result when no file of the project changed since (by its stat, and
    the module name its folders give it), read from the cache without reading any file;
    None otherwise."""
    project = sorted({*paths, *context})
    last = _last_run(store, store.config, project, paths)
    if last is None or not last.get("stats"):
        return None
    stats: dict[str, Stat] = last["stats"]
    digests: dict[str, str] = last["digests"]
    for path in project:
        absolute = os.path.abspath(path)
        kept = stats.get(absolute)
        if kept is None or tuple(kept) != _stat(path) \
                or digests.get(absolute, "").partition(" ")[2] != module_name(path):
            return None
    findings: dict[str, bytes] = last["findings"]
    noqa: dict[str, list[tuple[int, str]]] = last.get("noqa", {})
    outcomes = [FileOutcome(p, unpack(findings[p]) if p in findings else []) for p in paths]
    store.save()  # nothing new, but this configuration is now the most recently used
    log.info("%d files: none changed since the last run, answered from the cache", len(paths))
    return _result(paths, outcomes, {p: noqa[p] for p in paths if p in noqa})


def _read(paths: Sequence[str], context: Sequence[str], stats: Optional[dict[str, Stat]] = None
          ) -> tuple[dict[str, bytes], dict[str, bytes], list[FileOutcome]]:
    """(the files to check that could be read, every file of the project index, the
    outcomes of those that could not be read). `stats`: filled with each file's stat, taken
    before it is read (a change after the read changes it), when it may stand for the
    content next run (see RACY_NS)."""
    outcomes: list[FileOutcome] = []
    readable: dict[str, bytes] = {}
    racy = time.time_ns() - RACY_NS

    def stat(path: str) -> None:
        if stats is None:
            return
        found = _stat(path)
        if found is not None and max(found[1], found[2]) < racy:
            stats[os.path.abspath(path)] = found

    for path in paths:
        stat(path)
        try:
            readable[path] = read_python(path)  # a notebook: its code cells as one module
        except OSError as e:
            outcomes.append(FileOutcome(path, [source_error(path, f"cannot read: {e.strerror or e}")]))
        except NotebookError as e:
            outcomes.append(FileOutcome(path, [source_error(path, str(e))]))
    project = dict(readable)  # every file the index covers
    for path in context:
        if path in project:
            continue
        stat(path)
        try:
            project[path] = read_python(path)
        except (OSError, NotebookError):
            continue  # not reported: an unreadable neighbour only leaves the index
    return readable, project, outcomes


# A check kept in the cache: the fixes' line edits (json, sarif) are always worked out, so
# that the output format is no part of the cache's key.
_CACHED_CHECK = Mode(edits=True)


def _check_cached(store: Store, readable: dict[str, bytes], project: dict[str, bytes],
                  codes: Sequence[str], settings: Settings, workers: Workers,
                  progress: Progress | None, stats: dict[str, Stat],
                  noqa: dict[str, list[tuple[int, str]]]) -> tuple[list[FileOutcome], dict[str, str]]:
    """Every file checked (no fixes), from the cache as far as it is valid; saves what
    this run learnt, with the files' `stats` and `noqa` notes, which let a run over an
    unchanged tree read no file (`_unchanged`). Returns the outcomes and each file's digest
    (absolute path)."""
    mode = _CACHED_CHECK
    # A file's identity is its content and its module name (an `__init__.py` deleted
    # elsewhere renames it, and every lookup of its names).
    absolute = {p: os.path.abspath(p) for p in project}  # once: each call asks for the cwd
    digests = {a: SummaryCache.key(a, project[p]) for p, a in absolute.items()}
    config = store.config
    patched = _since_last_run(store, readable, project, absolute, digests, config, codes,
                              settings, mode)
    if patched is not None:
        found = patched
        index = store.run["index"]
    else:
        found, snapshot = _run_cached(store, readable, project, digests, config, codes,
                                      settings, mode, workers, progress)
        index = pack(snapshot)
    crashed = any(o.abandoned or f.code == INTERNAL_ERROR[0] for o in found for f in o.findings)
    last = dict(  # a crash is not a result to keep: the next run starts afresh
        paths=sorted(project), checked=sorted(o.path for o in found),
        config=None if crashed else config, digests=digests,
        findings={o.path: pack(o.findings) for o in found if o.findings},
        depends={absolute[o.path]: sorted(o.consulted.files)
                 for o in found if o.consulted is not None and o.consulted.files},
        index=index, stats=stats, noqa=noqa)
    store.set_run(last)
    store.save()
    return found, digests


def _fix_cached(store: Store, found: list[FileOutcome], readable: dict[str, bytes],
                project: dict[str, bytes], digests: dict[str, str], codes: Sequence[str],
                settings: Settings, mode: Mode, workers: Workers, progress: Progress | None,
                context: Sequence[str]) -> list[FileOutcome]:
    """--fix or --diff, given what a check of the tree found (`found`): a file none of
    whose findings has a fix to apply is not parsed again."""
    for o in found:
        o.before = [f.severity.rank for f in o.findings]
    fixable = sorted((o.path for o in found if o.path in readable
                      and any(_applies(f, mode) for f in o.findings)),
                     key=lambda p: -len(readable[p]))  # largest first, as in a check
    if not fixable:
        return found
    if workers.pooled(len(fixable)):  # the workers need an index they can read
        index = build_index(list(project), settings, workers, project, SummaryCache(store))
    else:  # the index of the check just made, reading only the summaries it is asked for
        summaries = SummaryCache(store)
        index = ProjectIndex.restore(unpack(store.run["index"]),
                                     lambda path: summaries.stored(
                                         path, digests.get(os.path.abspath(path), "")) or None)
    fixing = {o.path: o for o in _check_all(readable, fixable, codes, settings, mode, index,
                                            workers, progress)}
    if not (mode.fix and any(o.fixed for o in fixing.values())):
        return [fixing.get(o.path, o) for o in found]
    # Fixes may change what other files see (a cached function made uncached), so what
    # remains is reported from a fresh check of the tree as it is now (from the cache but
    # for the files fixed and those that consulted them).
    stats: dict[str, Stat] = {}
    now, project_now, _ = _read(list(readable), context, stats)
    again = {o.path: o for o in _check_cached(store, now, project_now, codes, settings, workers,
                                              None, stats, unknown_noqa(now))[0]}
    outcomes = []
    for o in found:
        fresh = again[o.path].findings if o.path in again else []  # gone meanwhile
        if o.path in fixing:
            done = fixing[o.path]
            crashed = [f for f in done.findings if f.code == INTERNAL_ERROR[0] and f not in fresh]
            done.findings = fresh + done.fix_errors + crashed
            outcomes.append(done)
        else:
            o.findings = fresh
            outcomes.append(o)
    return outcomes


# Past this many files to re-lint, the last run is not worth patching.
FEW_CHANGED = 64


def _last_run(store: Store, config: str, project: list[str],
              checking: Iterable[str]) -> Optional[dict[str, Any]]:
    """The last run, if it was made under `config` over the same files (`project`,
    sorted) and checked each of the files to check now; else None."""
    last = store.run
    if last.get("config") != config or last.get("paths") != project \
            or not set(last.get("checked", ())).issuperset(checking):
        return None
    return last


def _since_last_run(store: Store, readable: dict[str, bytes], project: dict[str, bytes],
                    absolute: dict[str, str], digests: dict[str, str], config: str,
                    codes: Sequence[str], settings: Settings,
                    mode: Mode) -> Optional[list[FileOutcome]]:
    """The last run's outcomes brought up to date without validating every file, or None.
    Nothing changed: its findings. A few files changed but not what the index knows of
    them: the project index is the same, so only those files, and the files whose
    findings consulted them, can have other findings. Returns the outcomes of the files
    to check (`readable`) and of the other files the last run checked that are still
    valid (kept for a later run that names them)."""
    last = _last_run(store, config, sorted(project), readable)
    if last is None:
        return None
    checked = set(last.get("checked", ()))
    before: dict[str, str] = last["digests"]
    findings: dict[str, bytes] = last["findings"]
    depends: dict[str, list[str]] = last["depends"]
    changed = {p for p, a in absolute.items() if before.get(a) != digests[a]}

    def kept(p: str) -> FileOutcome:
        return FileOutcome(p, unpack(findings[p]) if p in findings else [],
                           consulted=Consulted(dict.fromkeys(depends.get(absolute[p], ()))))

    if not changed:
        return [kept(p) for p in sorted(checked)]
    changed_paths = {absolute[p] for p in changed}
    stale = {p for p in checked if p in changed
             or not changed_paths.isdisjoint(depends.get(absolute[p], ()))}
    again = [p for p in readable if p in stale]
    if len(again) > FEW_CHANGED:
        return None
    summaries = SummaryCache(store)
    # Every summary the last run's index was built from must still be here, made from
    # the content that run saw: the restored index reads them on demand.
    if not all(summaries.entries.get(a, ("",))[0] == before.get(a) for a in absolute.values()):
        return None
    TALLY.summarized += len(changed)
    for p in changed:
        now = summarize(p, project[p], all_prefilters())
        same = summaries.stored(p, before[absolute[p]]) == (now or False)
        summaries.put(p, project[p], now or False)  # made once: the full run reuses it
        if not same:
            return None
    # The same index as the last run's: restored, reading only the summaries it is asked for.
    index = ProjectIndex.restore(unpack(last["index"]),
                                 lambda path: summaries.stored(
                                     path, digests.get(os.path.abspath(path), "")) or None)
    fresh = _prefilter_and_check({p: readable[p] for p in again}, codes, settings, mode,
                                 index, Workers(1), None)  # a few files, one restored index
    for o in fresh:
        if o.consulted is not None:
            own = absolute[o.path]
            o.consulted.files = {p: digests.get(p) for p in o.consulted.files if p != own}
    return [kept(p) for p in sorted(checked - stale)] + fresh


def _run_uncached(readable: dict[str, bytes], project: dict[str, bytes], codes: Sequence[str],
                  settings: Settings, mode: Mode, workers: Workers, progress: Progress | None,
                  summaries: SummaryCache | None = None) -> list[FileOutcome]:
    index = build_index(list(project), settings, workers, project, summaries, progress) \
        if codes and readable else ProjectIndex([])
    return _prefilter_and_check(readable, codes, settings, mode, index, workers, progress,
                                list(project), summaries)


def _run_cached(store: Store, readable: dict[str, bytes], project: dict[str, bytes],
                digests: dict[str, str], config: str, codes: Sequence[str], settings: Settings,
                mode: Mode, workers: Workers,
                progress: Progress | None) -> tuple[list[FileOutcome], dict[str, Any]]:
    """Per file: reuse the cached findings while nothing they depend on changed. Also
    returns a snapshot of the project index."""
    results = FindingsCache(store)
    index = build_index(list(project), settings, workers, project, SummaryCache(store), progress)
    facts = index.fingerprint()
    reused: list[FileOutcome] = []
    left: dict[str, bytes] = {}
    for path, data in readable.items():
        entry = results.get(path, digests[os.path.abspath(path)], config, facts, index, digests)
        if entry is not None:
            reused.append(FileOutcome(path, entry.findings, consulted=entry.consulted))
        else:
            left[path] = data
    fresh = _prefilter_and_check(left, codes, settings, mode, index, workers, progress)
    _remember(results, fresh, digests, config, facts)
    snapshot = index.snapshot()
    for o in reused + fresh:  # answers worked out in the workers, or in earlier runs
        if o.consulted is not None:
            snapshot["answers"].update(o.consulted.answers)
    return reused + fresh, snapshot


def _prefilter_and_check(readable: dict[str, bytes], codes: Sequence[str], settings: Settings,
                         mode: Mode, index: ProjectIndex, workers: Workers,
                         progress: Progress | None, project: Sequence[str] = (),
                         summaries: SummaryCache | None = None) -> list[FileOutcome]:
    """`project`: the files of the index (default: `readable`'s), read again after fixes."""
    prefilters = [p for p in all_prefilters() if p.code in codes]
    # A cheap test decides which files are parsed at all.
    to_check: list[str] = []
    skipped: list[FileOutcome] = []
    planned = (progress or _no_progress)("Planning", len(readable))
    for p, data in readable.items():
        planned(1)
        with index.recording() as consulted:
            triggered = rules_triggered(data, prefilters, settings, index, p)
        if triggered:
            to_check.append(p)
        else:  # no rule runs here: a noqa naming one is unused
            unused = unused_in(p, data, catalog()) if settings.report_unused_noqa else []
            skipped.append(FileOutcome(p, unused, consulted=consulted))
    # Largest first: the few big files (model runners, engines) take most of the time,
    # and one of them taken last would leave the other workers idle.
    to_check.sort(key=lambda p: -len(readable[p]))
    checked = _check_all(readable, to_check, codes, settings, mode, index, workers, progress)
    fixed = sum(o.fixed for o in checked)
    if mode.fix and fixed:
        # Fixes may change what other files see (a cached function made uncached), so
        # what remains is reported from a fresh look at the whole tree.
        now: dict[str, bytes] = {}
        for path in project or readable:
            try:
                now[path] = read_python(path)
            except (OSError, NotebookError):
                continue
        index = build_index(list(now), settings, workers, now, summaries)
        again = {o.path: o for o in _check_all(now, [p for p in to_check if p in now], codes,
                                               settings, Mode(edits=mode.edits), index, workers)}
        for o in checked:
            fresh = again[o.path].findings if o.path in again else []  # gone meanwhile
            crashed = [f for f in o.findings if f.code == INTERNAL_ERROR[0] and f not in fresh]
            o.findings = fresh + o.fix_errors + crashed
    return checked + skipped


def _remember(results: FindingsCache, outcomes: list[FileOutcome], digests: dict[str, str],
              config: str, facts: str) -> None:
    for o in outcomes:
        if o.consulted is None or o.abandoned or any(f.code == INTERNAL_ERROR[0] for f in o.findings):
            continue  # a crash, or a file out of time, is not a result to keep
        own = os.path.abspath(o.path)
        o.consulted.files = {p: digests.get(p) for p in o.consulted.files if p != own}
        results.put(o.path, Entry(digests[own], config, facts, o.consulted, o.findings))


def unknown_noqa(readable: dict[str, bytes]) -> dict[str, list[tuple[int, str]]]:
    """(line, code) of each RL code a `# noqa` names that is no rule's, per file that has one."""
    found = {path: unknown_noqa_codes(data, catalog()) for path, data in readable.items()}
    return {path: codes for path, codes in found.items() if codes}


def _result(paths: Sequence[str], outcomes: list[FileOutcome],
            noqa: dict[str, list[tuple[int, str]]]) -> RunResult:
    findings = sorted((f for o in outcomes for f in o.findings), key=Finding.sort_key)
    diffs = [o.diff for o in sorted(outcomes, key=lambda o: o.path) if o.diff]
    notes = [f"{path}:{line}: `# noqa` names no rule of retainlint: {code}"
             for path, codes in noqa.items() for line, code in codes]
    return RunResult(len(paths), findings, sum(o.fixed for o in outcomes), diffs, notes,
                     {o.path: o.fixed_codes for o in outcomes if o.fixed_codes},
                     [rank for o in outcomes for rank in o.before])
