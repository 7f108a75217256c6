"""`retainlint check --stdin-filename PATH -`: the source comes from standard input (an
editor's unsaved buffer) and is checked as the file PATH of its project: the project
index covers the project's other files, with this source in place of PATH's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from retainlint.core.config import Settings
from retainlint.core.finding import Finding
from retainlint.core.source import confine, read_source
from retainlint.engine.cache import Store, SummaryCache
from retainlint.engine.registry import all_rules, catalog
from retainlint.engine.runner import FileOutcome, Mode, build_index, check_file, fix_bytes


def check_source(name: str, data: bytes, codes: Sequence[str], settings: Settings, mode: Mode,
                 context: Sequence[str], cache_dir: Path | None,
                 jobs: int | None = None) -> tuple[list[Finding], bytes, int]:
    """The findings left, the source after fixes (`data` itself unless `mode.fix`), and how
    many fixes were applied. Nothing is written."""
    confine(settings.root)
    codes = [code for code, _ in catalog() if code in set(codes)]
    contents = {name: data}
    own = os.path.realpath(name)
    for path in context:
        if os.path.realpath(path) != own:
            try:
                contents[path] = read_source(path)
            except OSError:
                continue
    store = Store.open(cache_dir) if cache_dir is not None else None
    summaries = SummaryCache(store) if store is not None else None
    index = build_index(list(contents), settings, jobs or os.cpu_count() or 1, contents, summaries,
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
