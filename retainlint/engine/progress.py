"""What a run tells of itself as it goes: the progress callback the CLI draws a bar with,
and the tally of files summarized and linted that `-v` shows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


# (what, how many) -> a function told how many more are done; the CLI draws a bar.
Progress = Callable[[str, int], Callable[[int], None]]


def _no_progress(what: str, total: int) -> Callable[[int], None]:
    return lambda done: None


@dataclass
class _Tally:
    """What the last run did besides answering from the cache (shown with `-v`)."""
    summarized: int = 0  # files read into the project index afresh
    linted: int = 0  # files parsed by libcst and linted (or fixed)


TALLY = _Tally()
