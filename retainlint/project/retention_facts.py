"""The retention model's facts about one module, as plain data the project index caches:
what adds to a holder (`Growth`), what an object keeps of itself (`SelfReference`), and
the module's other facts (`ModuleFacts`); `retention.py` builds them."""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

from retainlint.project.frames import FrameCycle


@dataclass(frozen=True)
class Site:
    """1-based start (line, character column), end, and the lines of the statement."""

    line: int
    column: int
    end_line: int
    end_column: int
    first: int
    last: int


@dataclass(frozen=True)
class Growth:
    """An edge that adds to a holder: `holder[key] = value`, `holder.append(value)`."""

    holder: str  # `module.name`, `module.Class.attr`, `module.Class().attr`
    kind: str  # "module", "class", "instance"
    shown: str  # the holder as the code spells it
    keyed: bool  # a slot per key (a dict) rather than one more item (a list, a set)
    key: str  # the key's code ("" when not keyed)
    value: str  # the added value's code ("" when not known)
    function: str  # the function that adds, as `Class.method` or `function`
    once: bool  # that function runs once per class or object (`__init_subclass__`, setup)
    in_init: bool  # the add is in `__init__`: one entry per instance made
    guarded: bool  # inside `if key not in holder` (a memo: one entry per distinct key)
    pins_self: bool  # the entry references the instance adding it (`self`, `self.m`)
    registers: bool  # the function exists to store what it is handed (see `FunctionFacts`)
    # the function itself removes the entry, but only once an `await` has returned, outside
    # `finally`: a call that fails or is cancelled there leaves its entry behind
    undone_on_success: bool
    # the key is a counter the adding function advances (`self._next_id += 1`): a new slot
    # per call, never the same key twice
    counted: bool
    # the function makes the value it adds and returns it (`c = Cursor(); self._cursors.append(c);
    # return c`), not a memo's: the holder keeps every object it hands out, however soon its
    # caller drops it
    handed_out: bool
    # the function waits for the value it adds (`await fut`, `q.get()`, `event.wait()`), a
    # reply some other code delivers, and does not itself remove the entry: when no reply
    # comes (a timeout, a cancellation, a lost connection) the entry stays
    awaits_reply: bool
    # the diagnostic switch the add runs under (`if TRACK_STEP_TIMES:`), or "": the growth is
    # there only while someone debugs or measures
    switch: str
    # the add is in an `except` block that then raises again: one entry per failed call
    failing: bool
    site: Site


@dataclass(frozen=True)
class SelfReference:
    """An object keeping a reference back to itself: `self.cb = self.method`."""

    cls: str  # `module.Class`
    attr: str  # where it is kept, as the code spells it (`self._on_done`)
    how: str  # "bound method", "closure", "partial", "back-reference", "held child" (`col.parent = self`)
    shown: str  # the value's code
    function: str
    keeps: str  # an attribute of the class holding an OS resource or bulk data (`self._transport`), or ""
    site: Site


def growth_of(plain: tuple[Any, ...]) -> Growth:
    """A growth as `ModuleFacts.plain()` stores it, decoded."""
    return Growth(*plain[:-1], Site(*plain[-1]))  # type: ignore[call-arg]


# Positions in `ModuleFacts.plain()`, for questions that read every file's facts without
# decoding them; a plain growth holds `Growth`'s fields in order.
# A holder's name with this suffix names the items in its entries (the list under each key
# of `d`, grown by `d[k].append(x)`): removing an item (`d[k].remove(x)`) empties those, not
# the slots; removing a slot, or emptying or handing on `d`, empties both.
ITEMS = "[]"

GROWTH, DROPS, BOUNDED, SELF_REFERENCES, LONG_LIVED, PER_CALL, COLLECTOR_OFF, FRAMES, \
    SUCCESS_DROPS, TEARDOWN_DROPS, SERVING, OWNED, ALIASES = range(13)
GROWTH_KIND = 1


@dataclass
class ModuleFacts:
    growth: list[Growth]
    # holders something here removes from, rebinds or hands elsewhere; `.attr` when it
    # removes from some object's `attr` (a base class's method on the same instance)
    drops: set[str]
    bounded: set[str]  # holders whose size something here checks (`len(h) > n`)
    self_references: list[SelfReference]
    long_lived: set[str]  # classes (`module.Class`) made at module level or in an entry point
    made_per_call: set[str]  # classes (as the module names them) it makes in a loop, a per-request function or their own methods
    collector_off: bool  # the module disables the cyclic collector
    frames: list[FrameCycle]  # functions whose frame keeps its own traceback (`frames.py`)
    # holders whose only drops here follow an `await` outside `finally` (a call cancelled or
    # failing there skips them), and those dropped only when the owner is torn down (`close()`)
    success_drops: set[str]
    teardown_drops: set[str]
    serving: set[str]  # classes (`module.Class`) whose methods serve requests (see `_serving`)
    # (class, owner): an instance of `class` made in `owner.__init__` and kept on the owner
    # (`self.publisher = Publisher()`), one per owner, living as long as it does
    owned: set[tuple[str, str]]
    # (property, attribute) pairs of read-only properties returning an attribute as it is
    # (`tasks` -> `_tasks`): a removal through the property is one from the attribute
    aliases: set[tuple[str, str]]

    def plain(self) -> tuple[object, ...]:
        """As stored in the index; the `GROWTH`... constants name its positions."""
        return ([astuple(g) for g in self.growth], sorted(self.drops), sorted(self.bounded),
                [astuple(r) for r in self.self_references], sorted(self.long_lived),
                sorted(self.made_per_call), self.collector_off,
                [astuple(f) for f in self.frames],
                sorted(self.success_drops), sorted(self.teardown_drops), sorted(self.serving),
                sorted(self.owned), sorted(self.aliases))

    @classmethod
    def from_plain(cls, plain: tuple[Any, ...]) -> "ModuleFacts":
        (growth, drops, bounded, refs, long_lived, per_call, collector_off, frames,
         success, teardown, serving, owned, aliases) = plain
        return cls([growth_of(g) for g in growth],
                   set(drops), set(bounded),
                   [SelfReference(*r[:-1], Site(*r[-1])) for r in refs],  # type: ignore[call-arg]
                   set(long_lived), set(per_call), collector_off,
                   [FrameCycle(*f[:-1], Site(*f[-1])) for f in frames],  # type: ignore[call-arg]
                   set(success), set(teardown), set(serving), {(made, owner) for made, owner in owned},
                   {(prop, attr) for prop, attr in aliases})
