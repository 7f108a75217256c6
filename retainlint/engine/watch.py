"""`retainlint check --watch`: check, then check again whenever a checked file changes.

Changes are found by polling: every half second, the modification time and size of each
checked file, of each configuration file, and of the folders holding them (a file added,
removed or renamed changes its folder). A new dependency (inotify and the like) would buy
little: a re-run is answered from the cache but for what changed. Ctrl-C or SIGTERM ends
the watch with exit status 0."""

from __future__ import annotations

import os
import time
from typing import Callable, Iterable, Optional

INTERVAL_S = 0.5

# What a path was like: (modification time, size), or None when it is gone.
Stamp = Optional[tuple[int, int]]


def snapshot(paths: Iterable[str]) -> dict[str, Stamp]:
    state: dict[str, Stamp] = {}
    for path in paths:
        try:
            st = os.stat(path)
            state[path] = (st.st_mtime_ns, st.st_size)
        except OSError:
            state[path] = None
    return state


def with_folders(files: Iterable[str]) -> list[str]:
    """The files, then the folders they are in."""
    files = list(files)
    folders = {os.path.dirname(os.path.abspath(f)) for f in files}
    return files + sorted(folders)


def changed(before: dict[str, Stamp]) -> list[str]:
    now = snapshot(before)
    return [path for path, stamp in now.items() if stamp != before[path]]


def watch(check: Callable[[], None], files: Callable[[], Optional[list[str]]],
          say: Callable[[str], None], interval: float = INTERVAL_S) -> int:
    """Runs `check` (whatever exit it makes), then again whenever one of `files()` (the
    checked files and the configuration files; None: they cannot be told now) changes,
    until interrupted. `say`: one line about each run. Returns the exit status, 0."""
    try:
        watched = files() or []
        say(f"{_now()} Checking; watching {len(watched)} files for changes (Ctrl-C to stop).")
        while True:
            state = snapshot(with_folders(watched))  # taken before: an edit made during the run counts
            _run(check)
            while True:
                time.sleep(interval)
                edited = changed(state)
                if not edited:
                    continue
                known = set(watched)
                plain = [p for p in edited if p in known]
                now = watched
                if len(plain) < len(edited):  # a folder changed: maybe a file added or removed
                    listed = files()
                    now = watched if listed is None else listed
                if plain or sorted(now) != sorted(watched):
                    break
                state = snapshot(with_folders(watched))  # an editor's temporary file, say
            what = plain or sorted(set(now) ^ set(watched))  # edited, else added or removed
            watched = now
            more = f" and {len(what) - 1} more" if len(what) > 1 else ""
            say(f"{_now()} {os.path.relpath(what[0])}{more} changed: checking again.")
    except KeyboardInterrupt:
        return 0


def _run(check: Callable[[], None]) -> None:
    try:
        check()
    except SystemExit:  # the check's exit status: the watch goes on
        pass


def _now() -> str:
    return time.strftime("[%H:%M:%S]")
