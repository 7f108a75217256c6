"""What an edge costs: does it grow per request or per object, does anything in the project
release it, and how long does its holder live. The checks ask these of the facts the
project index keeps per file (`FileSummary.retention`)."""

from __future__ import annotations

import ast
import os
import re
from typing import TYPE_CHECKING, Hashable, Optional

from retainlint.project.class_family import class_family
from retainlint.project.module_names import is_test_code
from retainlint.project.retention_facts import (
    ALIASES, BOUNDED, COLLECTOR_OFF, DROPS, ITEMS, LONG_LIVED, OWNED, PER_CALL, SERVING, SUCCESS_DROPS, TEARDOWN_DROPS, Growth, ModuleFacts,
    SelfReference)

if TYPE_CHECKING:
    from retainlint.project.index import ProjectIndex

# Words in a key that name something made per request or per object: a slot per such key
# is a slot per request (`_pending[request_id] = job`), never reused.
_PER_REQUEST_WORDS = frozenset({
    "request", "req", "rid", "session", "sid", "conn", "connection", "client", "peer", "addr",
    "task", "job", "future", "stream", "socket", "sock", "channel", "call", "msg", "message",
    "event", "tx", "transaction", "trace", "span", "user", "thread", "tid", "ident", "token",
    "handle", "obj", "instance", "self", "uuid", "uid", "id", "ids",
    "corr", "correlation", "query", "batch", "seq", "run", "ctx", "context",
})
# Words in a key that name something of the code or its configuration (a function, a class,
# a model, a dtype): as many keys as the program has such things, however many requests.
_CODE_WORDS = frozenset({
    "func", "fn", "function", "method", "callback", "cb", "handler", "endpoint", "cls", "class",
    "type", "module", "model", "layer", "name", "field", "attr", "dtype", "device", "op", "frame",
    "graph", "shape", "config", "kind", "path", "file", "pattern", "route", "hook", "prefix",
    "param", "parameter",
})
# Words in a key that name a member of the deployment (an engine, a rank, a host): as many
# keys as the deployment has members, however many requests it serves.
_DEPLOYMENT_WORDS = frozenset({"engine", "rank", "node", "host", "hostname", "replica", "gpu",
                               "shard", "world", "teacher", "actor"})
# First words of a count, a size or a flag, and the conversions around one.
_QUANTITY_PREFIXES = frozenset({"num", "n", "max", "min", "total", "use", "is", "has", "enable", "stride"})
_CONVERSIONS = frozenset({"int", "float", "bool", "round", "abs"})
_PER_REQUEST_CALLS = ("id(", "uuid", "time.", "get_ident", "current_thread", "current_task",
                      "next(", "count(", "monotonic", "perf_counter")
_WORD = re.compile(r"[A-Za-z]+|\d+")

# Class names for objects made per request, connection or job: many are made and dropped.
_PER_CALL_ROLES = ("Request", "Response", "Connection", "Protocol", "Stream", "Session", "Call",
                   "Job", "Task", "Transaction", "Context", "Batch", "Future", "Query", "Cursor",
                   "Message", "Operation", "Waiter", "Result")


def facts_of(index: "ProjectIndex", path: str) -> Optional[ModuleFacts]:
    summary = index.files.get(os.path.abspath(path))
    if summary is None or not summary.retention:
        return None
    return ModuleFacts.from_plain(summary.retention)


def _released(index: "ProjectIndex", holder: Hashable) -> Hashable:
    """Does any file of the project drop from, rebind, bound or hand away `holder`? An
    attribute (`Class().attr`, `Class.attr`) also counts as dropped when any code removes
    from an `attr` of some object: a base class's method may, on the same instance."""
    assert isinstance(holder, str)
    names = _drop_names(index, holder)
    return any(summary.retention and (not names.isdisjoint(summary.retention[DROPS])
                                      or not names.isdisjoint(summary.retention[BOUNDED]))
               for summary in dict.values(index.files))


def _names(holder: str) -> set[str]:
    """The names a drop of `holder` may be recorded under: itself, `.attr` for an
    attribute, and for the items in its entries (`h[]`) the container's own."""
    names = {holder}
    if holder.endswith(ITEMS):
        names |= _names(holder[:-len(ITEMS)])
    elif "()" in holder or holder.count(".") > 1:
        names.add("." + holder.rpartition(".")[2])
    return names


def _drop_names(index: "ProjectIndex", holder: str) -> set[str]:
    """`_names`, and `.tasks` for an attribute (`._tasks`) some class exposes through a
    read-only property (`@property def tasks(self): return self._tasks`): a removal through it."""
    names = _names(holder)
    return names | {"." + prop for name in names if name.startswith(".")
                    for prop in index.ask(_properties_returning, name[1:])}


def _properties_returning(index: "ProjectIndex", attr: Hashable) -> Hashable:
    return frozenset(prop for summary in dict.values(index.files) if summary.retention
                     for prop, returned in summary.retention[ALIASES] if returned == attr)


def _dropped_at(index: "ProjectIndex", holder: str, position: int) -> bool:
    names = _drop_names(index, holder)
    return any(summary.retention and not names.isdisjoint(summary.retention[position])
               for summary in dict.values(index.files))


def _dropped_on_success(index: "ProjectIndex", holder: Hashable) -> Hashable:
    assert isinstance(holder, str)
    return _dropped_at(index, holder, SUCCESS_DROPS)


def _dropped_at_teardown(index: "ProjectIndex", holder: Hashable) -> Hashable:
    assert isinstance(holder, str)
    return _dropped_at(index, holder, TEARDOWN_DROPS)


def how_dropped(index: "ProjectIndex", holder: str) -> Optional[str]:
    """How the project takes entries out of `holder`, when it does so on some paths only:
    "success" (only past an `await`, a `yield` or an `except` that leaves the function,
    outside `finally`: a call failing or cancelled there skips it), "teardown" (only when
    its owner is closed or stopped), or None when nothing removes one at all."""
    if index.ask(_dropped_on_success, holder):
        return "success"
    if index.ask(_dropped_at_teardown, holder):
        return "teardown"
    return None


def _serving(index: "ProjectIndex", cls: Hashable) -> Hashable:
    return any(summary.retention and any(c == cls or index.resolve(c) == cls for c in summary.retention[SERVING])
               for summary in dict.values(index.files))


def serves_requests(index: "ProjectIndex", cls: str) -> bool:
    """Do `cls`'s methods serve requests (handlers, a serve loop, start and stop, a worker
    pool), so that one instance outlives many requests?"""
    return bool(index.ask(_serving, index.resolve(cls) or cls))


# The modules GUI toolkits keep their widget classes in: a window shows its widgets, and they
# live as long as it does while the user's events call their methods again and again.
_WIDGET_MODULES = (".QtWidgets.", ".tkinter.", ".wx.", ".gi.repository.Gtk.")


def _widget(index: "ProjectIndex", cls: Hashable) -> Hashable:
    summary = index.classes.get(cls) if isinstance(cls, str) else None
    if summary is None:
        return False
    return any(any(m in "." + q for m in _WIDGET_MODULES) and q.rpartition(".")[2][:1].isupper()
               for s in (summary, *index.ancestors(summary.bases))
               for q in (index.resolve(b) or b for b in s.bases))


def is_widget(index: "ProjectIndex", cls: str) -> bool:
    """Is `cls` a GUI widget: a subclass (through the project's classes) of a class of a Qt,
    Tk, wx or GTK widget module?"""
    return bool(index.ask(_widget, index.resolve(cls) or cls))


def _collector_off(index: "ProjectIndex", _: Hashable) -> Hashable:
    return any(summary.retention and summary.retention[COLLECTOR_OFF] for summary in dict.values(index.files))


def collector_off_anywhere(index: "ProjectIndex") -> bool:
    """Does the project disable the cyclic collector (`gc.disable()`)? Then a cycle made
    per call is freed late, or never. (`gc.freeze()` exempts only what exists when it runs.)"""
    return bool(index.ask(_collector_off, ""))


def released_anywhere(index: "ProjectIndex", holder: str) -> bool:
    return bool(index.ask(_released, holder))


def _elements(key: str) -> list[str]:
    """The parts of a tuple key (`(fmt, hash_id)`, `fmt, hash_id`); `[key]` for any other key."""
    if "," not in key:
        return [key]
    try:
        node = ast.parse(key, mode="eval").body
    except SyntaxError:
        return [key]
    return [ast.unparse(e) for e in node.elts] if isinstance(node, ast.Tuple) and len(node.elts) > 1 else [key]


def key_per_request(key: str) -> bool:
    """Is a slot per distinct `key` a slot per request or per object (never reused)? A
    tuple key is new whenever any of its parts is (`(fmt, hash_id)`: a slot per id), unless
    a part names the code or the deployment (`(device, stream_id)`, `(rank, pg_id)`): then
    the parts are members of a fixed set."""
    words = [w.lower() for w in _WORD.findall(key.replace("_", " "))]
    if _CODE_WORDS.intersection(words) or _DEPLOYMENT_WORDS.intersection(words):
        return False
    parts = _elements(key)
    if len(parts) > 1:
        return any(key_per_request(part) for part in parts)
    if key.startswith("self.") and "(" not in key and "[" not in key:
        return False  # the instance's own value (`self.engine_id`): one key per instance
    if any(call in key for call in _PER_REQUEST_CALLS):
        return True
    if _quantity(words):
        return False  # a count or a flag (`max_blocks_per_seq`, `use_small_batch`): no identity
    if words[-2:] in (["token", "id"], ["token", "ids"]):
        return False  # `eos_token_id`: an entry of the vocabulary, as many as it has
    return bool(words) and (words[-1] in _PER_REQUEST_WORDS or key == "self")


def _table_of_code(g: Growth) -> bool:
    """Is a bare id (`function_refs[id]`) the key of a table the code names for functions,
    classes or members of the deployment? Then it has one entry per such thing, however
    many requests come: the table's name says what the id is of."""
    if {w.lower() for w in _WORD.findall(g.key.replace("_", " "))} - {"id", "ids", "uid", "ident"}:
        return False
    words = {w.lower().removesuffix("es" if w.lower().endswith("sses") else "s")
             for w in _WORD.findall(g.holder.rpartition(".")[2].replace("_", " "))}
    return bool(words & (_CODE_WORDS | _DEPLOYMENT_WORDS))


def _quantity(words: list[str]) -> bool:
    """Do a key's words name a count, a size, a stride or a flag - `num_*`, `max_*`, `*_per_*`,
    `use_*`, `is_*`, also converted (`int(num_partitions)`) - rather than an object?"""
    while words and words[0] in _CONVERSIONS:
        words = words[1:]
    return bool(words) and (words[0] in _QUANTITY_PREFIXES or "per" in words[:-1])


def keyed_by_each_request(g: Growth) -> bool:
    """Is each entry keyed by the identity of an object the adding call handles
    (`request.request_id`, `response.id`): one entry per request or response made, never
    the same key twice? A bare key the caller hands in (`sender_id`) may name one of a few
    senders, and `id(x)` may be that of an object that lives on: growth not proven."""
    if g.counted:
        return True
    item = _ITEM_KEY.fullmatch(g.key)  # `packet["request_id"]`: a field of a message it handles
    owner, dot, attr = (item[1], ".", item[3]) if item else g.key.partition(".")
    return bool(dot) and owner.isidentifier() and owner != "self" and attr.isidentifier() \
        and key_per_request(f"{owner}.{attr}")


_ITEM_KEY = re.compile(r"([A-Za-z_]\w*)\[(['\"])(\w+)\2\]")


def _fresh_keys(g: Growth) -> bool:
    """Does each add use a key no earlier add used: a request's, or a counter's?"""
    return g.counted or _key_per_request(g)


def _key_per_request(g: Growth) -> bool:
    """`key_per_request` of the growth's key, where an instance's own value (`self._id`) keys
    a table shared by every instance - module- or class-level - by what it names: one entry
    per instance, as `self` itself would be."""
    key = g.key
    if g.kind in ("module", "class") and key.startswith("self.") and key[5:].isidentifier():
        key = key[5:]
    return key_per_request(key)


def _role(name: str, roles: tuple[str, ...]) -> bool:
    short = name.rpartition(".")[2]
    return any(short.endswith(role) for role in roles)


def _made_at_start(index: "ProjectIndex", cls: Hashable) -> Hashable:
    """Is `cls` (`module.Class`, or `module.function()` for what a factory returns) made at
    start-up in some file?"""
    return _made_in_some_file(index, LONG_LIVED, cls)


def _made_per_call_somewhere(index: "ProjectIndex", cls: Hashable) -> Hashable:
    """Does some file of the product (not its tests, which make objects per case) make
    `cls` in a loop or a per-request function?"""
    return _made_in_some_file(index, PER_CALL, cls, tests=False)


def _made_in_some_file(index: "ProjectIndex", position: int, cls: Hashable, tests: bool = True) -> bool:
    return cls in _made_by_position(index, position, tests)


def _made_by_position(index: "ProjectIndex", position: int, tests: bool) -> set[str]:
    """Every class (or factory call) some file makes at `position` of its retention facts,
    as the file imports it and resolved through re-exports; test files only with `tests`.
    Read from every file once per index (inside an asked question: see `ProjectIndex.ask`)."""
    def make() -> set[str]:
        found: set[str] = set()
        for summary in dict.values(index.files):
            if summary.retention and (tests or not is_test_code(summary.path)):
                for made in summary.retention[position]:
                    found.add(made)
                    resolved = _resolved(index, made)
                    if resolved:
                        found.add(resolved)
        return found
    return index.memo(f"made at {position}, tests {tests}", make)


def _resolved(index: "ProjectIndex", made: str) -> Optional[str]:
    if made.endswith("()"):
        function = index.resolve(made[:-2])
        return function + "()" if function else None
    return index.resolve(made)


def _owned_by_one_that_lives(index: "ProjectIndex", key: Hashable) -> Hashable:
    """Is `cls` made in the `__init__` of a class that lives for the process, and kept on
    it? `key`: (cls, how many owners up this is asked)."""
    assert isinstance(key, tuple)
    cls: str = key[0]
    depth: int = key[1]
    if depth > 3:
        return False
    return any(index.ask(_made_at_start, index.resolve(o) or o)
               or index.ask(_owned_by_one_that_lives, (index.resolve(o) or o, depth + 1))
               for o in sorted(_owners(index, cls)))


def _owners(index: "ProjectIndex", cls: str) -> set[str]:
    """The classes that make an instance of `cls` in their `__init__` and keep it."""
    return {owner for made, owner in _owners_by_name(index).get(cls.rpartition(".")[2], ())
            if _same_class(index, made, cls)}


def _owned(index: "ProjectIndex", cls: Hashable) -> Hashable:
    assert isinstance(cls, str)
    return bool(_owners(index, cls))


def built_as_a_part(index: "ProjectIndex", cls: str) -> bool:
    """Is an instance of `cls` made in another class's `__init__` and kept on it (a layer a
    model builds: `self.position_embedding = PositionEmbedding(dim)`)?"""
    return bool(index.ask(_owned, index.resolve(cls) or cls))


def _owners_by_name(index: "ProjectIndex") -> dict[str, list[tuple[str, str]]]:
    """Class name -> (class, owner) of every instance kept by its owner in the project, read
    from every file once per index (read inside an asked question: see `ProjectIndex.ask`)."""
    def make() -> dict[str, list[tuple[str, str]]]:
        table: dict[str, list[tuple[str, str]]] = {}
        for summary in dict.values(index.files):
            for made, owner in (summary.retention[OWNED] if summary.retention else ()):
                table.setdefault(made.rpartition(".")[2], []).append((made, owner))
        return table
    return index.memo("owners by class name", make)


def _same_class(index: "ProjectIndex", imported: str, cls: str) -> bool:
    """Does `imported` (a class as another file imports it) name `cls`? Also through a
    folder without `__init__.py` above the class's package, which the importing file
    spells out (`pkg.srt.managers.part.Publisher` for `part.Publisher`)."""
    return imported == cls or index.resolve(imported) == cls or imported.endswith("." + cls)


def lives_for_the_process(index: "ProjectIndex", cls: str) -> bool:
    """Is an instance of `cls` (`module.Class`) made once, at start-up - at module level,
    in a class body, as a singleton, or in an entry point (`main()`, `serve()`) - in any
    file of the project, or made in `__init__` of such an object and kept on it?"""
    cls = index.resolve(cls) or cls
    return bool(index.ask(_made_at_start, cls) or index.ask(_owned_by_one_that_lives, (cls, 0)))


def made_per_call(cls: str, facts: ModuleFacts, index: Optional["ProjectIndex"] = None) -> bool:
    """Are instances of `cls` made per request or per call, so that many come and go: here,
    or (with the project's `index`) by any file of the project? A class named for a
    per-call role (`Session`) that the project makes once, at start-up, is not: where it
    is made says more than its name."""
    if seen_made_per_call(cls, facts, index):
        return True
    return _role(cls, _PER_CALL_ROLES) and not (index is not None and index.ask(_made_at_start, cls))


def seen_made_per_call(cls: str, facts: ModuleFacts, index: Optional["ProjectIndex"] = None) -> bool:
    """Does the code show instances of `cls` made per request or per call (its name aside)?"""
    return cls in facts.made_per_call or index is not None and index.ask(_made_per_call_somewhere, cls)


def instance_outlives_its_adds(index: "ProjectIndex", facts: ModuleFacts, g: Growth) -> Optional[str]:
    """Why the instance holding `g`'s container outlives the calls that add to it: "process"
    (one is made for the process), "serves" (its methods serve requests), "outlives" (the
    adding call removes its entry only when it succeeds, and instances are not made per
    call), "hands out" (the adding call makes the entry and returns it: each object it
    hands out stays as long as the holder, however soon its user is done with it, and the
    code makes no instance per call), "replies" (the adding call waits for a reply the table
    matches to it, and the code makes no instance per call), "siblings" (the adding call
    fills other tables of the instance under the same key, and the project removes those
    entries); None when none of these is shown (RL307 then says nothing)."""
    cls = g.holder.partition("()")[0]
    if lives_for_the_process(index, cls):
        return "process"
    if serves_requests(index, cls):
        return "serves"
    if g.undone_on_success and not made_per_call(cls, facts, index):
        return "outlives"
    if is_widget(index, cls) and not seen_made_per_call(cls, facts, index):
        return "widget"
    # An owner named for a per-call role (a `Connection`) still hands out many children
    # (cursors, channels, streams) in its life, and a table that matches each reply to the
    # request waiting for it exists to carry many requests: only code making one owner per
    # call says otherwise.
    if (g.handed_out or g.awaits_reply) and not seen_made_per_call(cls, facts, index):
        return "hands out" if g.handed_out else "replies"
    if _siblings_removed(facts, g):
        return "siblings"
    return None


def _siblings_removed(facts: ModuleFacts, g: Growth) -> bool:
    """Does the call adding `g` put entries under the same key into other tables of the same
    instance, which the project removes from (`self._tokens[uid] = []; self._cache[uid] =
    None`, then `self._tokens.pop(uid)` and no removal from `_cache`)? The project lets those
    entries go when the key is done with: the instance outlives its keys."""
    if not (g.keyed and g.kind == "instance"):
        return False
    owner = g.holder.partition("()")[0] + "()."
    return any(o.keyed and o.key == g.key and o.function == g.function and o.holder != g.holder
               and o.holder.startswith(owner) and o.holder in facts.drops for o in facts.growth)


def grows_per_call(g: Growth) -> Optional[str]:
    """Why each call of `g.function` adds an entry nothing reuses, or None when the
    growth is bounded in practice (a memo over a small domain, registration)."""
    if g.once and not (g.keyed and not g.in_init and _fresh_keys(g)):
        return None  # set-up, unless each call is handed a request's key: then it runs per request
    if g.undone_on_success:
        return "one entry per call that fails or is cancelled before it removes its own"
    if g.in_init:
        if g.pins_self and not (g.keyed and not _fresh_keys(g)):
            return "one per instance made, each entry keeping that instance"
        if not g.keyed and not (g.registers or g.guarded):
            return "one more item per instance made"
        return None  # a slot per name, overwritten by the next instance of that name
    if g.keyed:
        if g.counted:
            return f"one entry per call, under a new `{g.key}` each time"
        return f"one entry per distinct `{g.key}`" if _key_per_request(g) and not _table_of_code(g) else None
    if g.registers or g.guarded:
        return None  # registration (its callers decide how often), or one per distinct value
    return "one more item per call"


def literal(code: str) -> bool:
    """Is `code` a constant - a number, a string, `None`, `True` - that every add shares
    (no object made per add)?"""
    try:
        return not isinstance(ast.literal_eval(code), (tuple, list, dict, set))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def only_when(g: Growth) -> str:
    """For the message, when a growth happens at all, or "": under a diagnostic switch it
    costs only those who turn it on to debug; in an `except` that raises again, one entry per
    failed call, not per call. Either makes it negligible."""
    return ((f", only while `{g.switch}` is on" if g.switch else "")
            + (", only when the call fails (its `except` raises again)" if g.failing else ""))


def entry_kept(g: Growth, call: str) -> str:
    """What each add of `g` keeps, for the consequence line: its value, or, when the value is
    a literal (a count, a flag: `attempts[request] = 1`), its key - the request, the
    connection - which is what the entry holds on to."""
    if not g.value:
        return f"what every `{call}()` call adds"
    if literal(g.value) and g.keyed and g.key:
        return f"`{g.key}` (each entry's key) of every `{call}()` call"
    return f"`{g.value}` of every `{call}()` call"


def cycle_matters(ref: SelfReference, facts: ModuleFacts, index: "ProjectIndex") -> bool:
    """A self-cycle costs when many such objects are made and dropped: each waits for
    the cyclic collector instead of being freed when its last use ends. A cycle a class
    makes (in its `__init__`, say) is made for every instance of a class deriving from it."""
    return any(made_per_call(cls, facts, index) for cls in sorted(index.ask(class_family, ref.cls)))


def short(qualified: str) -> str:
    """`pkg.mod.Class().attr` -> `Class().attr`; `pkg.mod.name` -> `name`."""
    parts = qualified.removesuffix(ITEMS).split(".")
    for i, part in enumerate(parts):
        if part[:1].isupper():
            return ".".join(parts[i:])
    return parts[-1]
