"""The lookup tables of the project index (files, modules, classes, functions): a dict
that notes, while a lint is recorded, which files' facts it consulted, and that loads
an entry of an index restored from a snapshot on demand."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from retainlint.project.index import Consulted


class _Recorded(dict):
    """A lookup table of the index that, while a lint is recorded, notes which files'
    facts were consulted (values carry their `path`; `modules` and `files` values are
    file summaries). In an index restored from a snapshot, an entry is loaded with its
    file's summary the first time it is looked up (`pending`: key -> that file)."""

    log: Optional[Consulted] = None
    name: str = ""
    pending: Optional[dict[str, str]] = None
    load: Optional[Callable[[Optional[str]], None]] = None  # a file's summary; None: all

    def _note(self, key, value) -> None:
        if value is None:
            self.log.absent.add((self.name, key))
        else:
            self.log.files.setdefault(value.path, None)

    def _value(self, key):
        value = dict.get(self, key)
        if value is None and self.pending:
            path = self.pending.get(key)
            if path is not None:
                self.load(path)
                value = dict.get(self, key)
        return value

    def _complete(self) -> None:
        if self.pending:
            self.load(None)

    def get(self, key, default=None):
        value = self._value(key)
        if self.log is not None:
            self._note(key, value)
        return default if value is None else value

    def __getitem__(self, key):
        value = self._value(key)
        if self.log is not None:
            self._note(key, value)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key) -> bool:
        value = self._value(key)
        if self.log is not None:
            self._note(key, value)
        return value is not None

    def __iter__(self):
        self._complete()
        if self.log is not None:
            self.log.everything = True
        return dict.__iter__(self)

    def items(self):
        self._complete()
        if self.log is not None:
            self.log.everything = True
        return dict.items(self)

    def values(self):
        self._complete()
        if self.log is not None:
            self.log.everything = True
        return dict.values(self)
