"""`retainlint check --stdin-filename PATH -`: the source comes from standard input (an
editor's unsaved buffer) and is checked as the file PATH of its project: the project
index covers the project's other files, with this source in place of PATH's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from retainlint.core.config import Settings
from retainlint.core.finding import Finding
from retainlint.core.finding import source_error
from retainlint.core.source import confined
from retainlint.engine import notebook
from retainlint.engine.notebook import NotebookError, read_python
from retainlint.engine.cache import Store, SummaryCache
from retainlint.engine.registry import all_rules, catalog
from retainlint.engine.runner import FileOutcome, Mode, build_index, check_file, fix_bytes
from retainlint.engine.workers import Workers


def check_source(name: str, data: bytes, codes: Sequence[str], settings: Settings, mode: Mode,
                 context: Sequence[str], cache_dir: Path | None,
                 jobs: int | None = None) -> tuple[list[Finding], bytes, int]:
    """The findings left, the source after fixes (`data` itself unless `mode.fix`), and how
    many fixes were applied. Nothing is written."""
    with confined(settings.root):
        codes = [code for code, _ in catalog() if code in set(codes)]
        if notebook.is_notebook(name):  # its code cells are checked; --fix prints the notebook
            try:
                source = notebook.parse(data).source.encode("utf-8")
            except NotebookError as e:
                return [source_error(name, str(e))], data, 0
            findings, fixed, count = _check_python(name, source, codes, settings, mode, context,
                                                   cache_dir, jobs)
            try:
                out = notebook.rebuild(data, fixed.decode("utf-8")) if count else data
            except NotebookError as e:
                findings.append(source_error(name, f"cannot write fix: {e} (left unchanged)"))
                out, count = data, 0
            notebook.checked_from_buffer(name, out)  # where the findings are, for the output
            return findings, out, count
        return _check_python(name, data, codes, settings, mode, context, cache_dir, jobs)


def _check_python(name: str, data: bytes, codes: Sequence[str], settings: Settings, mode: Mode,
                  context: Sequence[str], cache_dir: Path | None,
                  jobs: int | None) -> tuple[list[Finding], bytes, int]:
    contents = {name: data}
    own = os.path.realpath(name)
    for path in context:
        if os.path.realpath(path) != own:
            try:
                contents[path] = read_python(path)
            except (OSError, NotebookError):
                continue
    store = Store.open(cache_dir) if cache_dir is not None else None
    summaries = SummaryCache(store) if store is not None else None
    with Workers(jobs or os.cpu_count() or 1) as workers:
        index = build_index(list(contents), settings, workers, contents, summaries,
                            unsaved={name: data})
    if store is not None:
        store.save()
    if not mode.fix:
        outcome = check_file(name, codes, settings, Mode(edits=mode.edits), data=data, index=index)
        return outcome.findings, data, 0
    rules = [r for r in all_rules() if r.code in codes]
    fixing = FileOutcome(name)
    result, fixed = fix_bytes(name, data, rules, settings, mode, fixing, index)
    return result.findings + fixing.fix_errors, fixed, fixing.fixed
