"""What the prefilters of the release checks (RL604 to RL609: cleanup code that frees
nothing) read of a file: its shape, from the project index's `ast` pass, worked out once
per file for all of them (`scan`), and the words and calls those checks share. No libcst."""

from __future__ import annotations

import ast
import re
from typing import ClassVar, Optional

from retainlint.project.names import name_words
from retainlint.core.config import DEFAULT_RELEASE_METHODS
from retainlint.project.prefilter import Prefilter
from retainlint.project.nodes import self_attr


# Function-name words that say "this frees something".
CLEANUP_WORDS = frozenset(
    {"free", "release", "cleanup", "clean", "delete", "destroy", "dispose", "teardown",
     "unload", "dealloc", "deallocate", "shutdown", "close", "drop", "purge", "evict", "gc"}
)

# Calls that reclaim memory: deleting a local just before them shows what was expected.
RECLAIM_CALLS = frozenset({"gc.collect", "torch.cuda.empty_cache", "torch.cuda.ipc_collect",
                            "torch.mps.empty_cache", "torch.xpu.empty_cache", "torch.npu.empty_cache"})

RECLAIM_NAMES = frozenset({"empty_cache", "ipc_collect", "malloc_trim", "clear_device_cache",
                            "release_memory", "free_memory"})

EMPTY_FACTORIES = frozenset({"dict", "list", "set", "collections.OrderedDict", "OrderedDict",
                              "collections.deque", "deque", "builtins.dict", "builtins.list",
                              "builtins.set"})

DEFAULTDICT = frozenset({"collections.defaultdict", "defaultdict"})

KEEPING_VERBS = frozenset({"register", "add", "append", "attach", "bind", "set", "insert", "track",
                            "subscribe", "store", "put", "push", "hold", "keep", "install", "use",
                            "share", "link", "connect", "adopt", "own"})


# Calls that read their arguments without keeping them (`len(x)`, `sorted(x)`).
NON_KEEPING = frozenset(
    {"len", "list", "dict", "tuple", "set", "frozenset", "sorted", "sum", "any", "all", "min", "max",
     "str", "repr", "print", "iter", "enumerate", "zip", "isinstance", "bool", "id", "hash",
     "copy.copy", "copy.deepcopy", "json.dumps", "reversed", "map", "filter", "getattr", "hasattr"}
)

# -- prefilter: the file's shape, from the project index's `ast` pass ------------------
RECLAIM_LAST = frozenset({name.rsplit(".", 1)[1] for name in RECLAIM_CALLS}) | RECLAIM_NAMES

_EMPTY_LAST = frozenset(name.rsplit(".", 1)[-1] for name in EMPTY_FACTORIES | DEFAULTDICT)

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Scan:
    """(1) `del <parameter>`: (function name, whether it surely counts as freeing
    something whatever the release methods are: `del self`, a cleanup name, a reclaim
    call); (2) whether the file calls a `WeakMethod`/`weakref.ref` and a
    `finalize`/`atexit.register`; (3) per class, `self.x = <empty container>` in a
    method, by (method, x), and methods that hand `self.x` to another object (only for
    classes that rebind in a method with a default release name; for the others, just
    the names of the methods that rebind)."""

    def __init__(self, nodes) -> None:
        self.nodes = nodes
        self._aliases: Optional[dict] = None
        self._lines: Optional[list] = None
        self._reclaim_tokens: list = []
        self._frees: dict[int, bool] = {}
        self._bound: dict[int, set] = {}
        self._deleted: Optional[tuple[tuple, bool]] = None

    def cleanup_reclaims(self) -> bool:
        """Does a cleanup function (its name says so) reclaim memory (`empty_cache()`, ...),
        where the cache may be emptied before the unload?"""
        return any(name_words(fn.name) & CLEANUP_WORDS and self._reclaims(fn)
                   for fn in self.nodes.of(*_FUNCTIONS))

    def reload_reclaims(self) -> bool:
        """Does a function reclaim memory after letting go of `self.x` (`= None`, `del`),
        and return something (what it returned last time may hold the old value)?"""
        for fn in self.nodes.of(*_FUNCTIONS):
            if not self._reclaims(fn):
                continue
            inside = [n for n in ast.walk(fn) if isinstance(n, (ast.Return, ast.Assign, ast.Delete))]
            returns = any(type(n) is ast.Return and n.value is not None for n in inside)
            lets_go = any(
                (type(n) is ast.Assign and type(n.value) is ast.Constant and n.value.value is None
                 and any(self_attr(t) for t in n.targets))
                or (type(n) is ast.Delete and any(self_attr(t) for t in n.targets)) for n in inside)
            if returns and lets_go:
                return True
        return False

    def aliases(self) -> dict[str, str]:
        """`import a.b as c`, `from a import b as c`: {"c": "b"} (a call of `c` is one of
        `b`: what its qualified name ends with)."""
        if self._aliases is None:
            self._aliases = {a.asname: a.name.rsplit(".", 1)[-1]
                             for node in self.nodes.of(ast.Import, ast.ImportFrom)
                             for a in node.names if a.asname}
        return self._aliases

    def _last(self, func: ast.AST) -> Optional[str]:
        """The last component of the callee's qualified name."""
        if type(func) is ast.Attribute:
            return func.attr
        if type(func) is ast.Name:
            return self.aliases().get(func.id, func.id)
        return None

    # -- (1) ---------------------------------------------------------------------------
    def deleted_parameters(self) -> tuple:
        """(function, whether a `del` of a parameter in it surely counts as meant to free,
        whatever the release methods are), for every function deleting a parameter."""
        return self._deletions()[0]

    def loop_deletions(self) -> bool:
        """Does a function meant to free delete the loop variable of a loop over one of its
        parameters (`for obj in objs: del obj`)?"""
        return self._deletions()[1]

    def _deletions(self) -> tuple[tuple, bool]:
        if self._deleted is None:
            self._deleted = self._find_deletions()
        return self._deleted

    def _find_deletions(self) -> tuple[tuple, bool]:
        found = set()
        loops = False
        for node in self.nodes.of(ast.Delete):
            names = []
            targets = list(node.targets)
            while targets:
                t = targets.pop()
                if type(t) is ast.Name:
                    names.append(t.id)
                elif isinstance(t, (ast.Tuple, ast.List)):
                    targets.extend(t.elts)
            if not names:
                continue
            fn = next((o for o in self.nodes.owners(node) if isinstance(o, _FUNCTIONS)), None)
            if fn is None:
                continue
            args = fn.args
            params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
            for name in names:
                if name not in params and self._loop_over_parameter(fn, name, params) and self._surely(fn):
                    loops = True  # `for obj in objs: del obj`
                    continue
                if name not in params or name == "cls":
                    continue
                if name == "self":
                    found.add((fn.name, True))
                    continue
                if fn.name in ("__exit__", "__aexit__"):
                    continue
                surely = self._surely(fn)
                # Rebinding exempts the `del` (`local_assignments`, loop targets); looked
                # for only where it matters (the walk is the cost): a `del` that frees
                # surely or may count by the function's name.
                if (surely or fn.name in DEFAULT_RELEASE_METHODS) and self._rebound(fn, name):
                    continue
                found.add((fn.name, surely))
        return (tuple(sorted(found)) if found else ()), loops

    def _loop_over_parameter(self, fn: ast.AST, name: str, params: set) -> bool:
        """Is `name` the target of a loop in `fn` over one of its parameters?"""
        if fn.args.vararg is not None:
            params = params | {fn.args.vararg.arg}
        return any(type(node.target) is ast.Name and node.target.id == name
                   and type(node.iter) is ast.Name and node.iter.id in params
                   and fn.lineno <= node.lineno <= fn.end_lineno
                   for node in self.nodes.of(ast.For))

    def _rebound(self, fn: ast.AST, name: str) -> bool:
        """Assigned in `fn` itself (`local_assignments`), or a loop target anywhere in it."""
        if id(fn) not in self._bound:
            bound = set()
            owner = self.nodes.owner
            for node in self.nodes.of(ast.Assign):
                for t in node.targets:
                    if type(t) is ast.Name and owner(node) is fn:
                        bound.add(t.id)
            for node in self.nodes.of(ast.AnnAssign, ast.NamedExpr):
                if type(node.target) is ast.Name and owner(node) is fn:
                    bound.add(node.target.id)
            for node in self.nodes.of(ast.For, ast.AsyncFor):
                if fn.lineno <= node.lineno <= fn.end_lineno:  # inside `fn`, nested ones too
                    bound.update(n.id for n in ast.walk(node.target) if type(n) is ast.Name)
            self._bound[id(fn)] = bound
        return name in self._bound[id(fn)]

    def _surely(self, fn: ast.AST) -> bool:
        """Does a `del` in `fn` count as meant to free, whatever the release methods are:
        a cleanup word in its name, or a reclaiming call in it (`_deletes_to_free`)?"""
        if id(fn) not in self._frees:
            self._frees[id(fn)] = bool(name_words(fn.name) & CLEANUP_WORDS) or self._reclaims(fn)
        return self._frees[id(fn)]

    def _reclaims(self, fn: ast.AST) -> bool:
        """Might `fn` call `gc.collect()`, `empty_cache()`, ...? Read from its source
        lines (a name imported under another one may be such a function)."""
        if self._lines is None:
            self._lines = self.nodes.source.split(b"\n")
            self._reclaim_tokens = [t.encode() for t in RECLAIM_LAST] + [
                alias.encode() for alias, name in self.aliases().items() if name in RECLAIM_LAST]
        text = b"\n".join(self._lines[fn.lineno - 1:fn.end_lineno])
        return any(t in text for t in self._reclaim_tokens)

    # -- (2) ---------------------------------------------------------------------------
    def weak_callbacks(self) -> bool:
        if b"weakref" not in self.nodes.source:
            return False  # `weakref.WeakMethod`/`weakref.ref` are imported from it
        weak = registers = False
        for call in self.nodes.of(ast.Call):
            last = self._last(call.func)
            if last in ("WeakMethod", "ref"):
                weak = True
            if last in ("finalize", "register"):
                registers = True
            if weak and registers:
                return True
        return False

    # -- (3) ---------------------------------------------------------------------------
    def rebound_containers(self) -> tuple:
        if not self.nodes.of(ast.ClassDef):
            return (), ()
        rebinds: dict[int, set] = {}  # id(class) -> {(method, attr)}
        aliases = self.aliases()
        for node in self.nodes.of(ast.Assign):  # `self.x = {}`, `self.x = defaultdict(list)`
            targets = node.targets
            if len(targets) != 1 or type(targets[0]) is not ast.Attribute:
                continue
            value = node.value
            kind = type(value)
            if kind is ast.Call:  # `_empty_container`
                func = value.func
                if type(func) is ast.Attribute:
                    last = func.attr
                elif type(func) is ast.Name:
                    last = aliases.get(func.id, func.id)
                else:
                    continue
                if last not in _EMPTY_LAST or len(value.args) + len(value.keywords) > 1:
                    continue
            elif kind is ast.Dict:
                if value.keys:
                    continue
            elif kind is not ast.List or value.elts:
                continue
            attr = self_attr(targets[0])
            if attr is None:
                continue
            for c, method in self._methods_around(node):
                rebinds.setdefault(id(c), set()).add((method, attr))
        if not rebinds:
            return (), ()
        # Who shares the attributes is looked for in classes that rebind in a method with
        # a default release name (the cost is there); for others, the methods that rebind.
        judged = {c for c, found in rebinds.items() if any(m in DEFAULT_RELEASE_METHODS for m, _ in found)}
        unjudged = tuple(sorted({m for c, found in rebinds.items() if c not in judged for m, _ in found}))
        attrs = {a for c in judged for _, a in rebinds[c]}
        if not attrs:
            return (), unjudged
        shares: dict[int, set] = {}

        def share(node, held) -> None:
            if not held:
                return
            for c, method in self._methods_around(node):
                shares.setdefault(id(c), set()).update((method, a) for a in held)

        def handed(call) -> set:
            """Those attributes handed to a call itself (`f(self.x)`, `f(cache=self.x)`)."""
            held = set()
            for a in (*call.args, *(k.value for k in call.keywords)):
                if type(a) is ast.Starred:
                    a = a.value
                if type(a) is ast.Attribute and a.attr in attrs and type(a.value) is ast.Name \
                        and a.value.id == "self":
                    held.add(a.attr)
            return held

        verbs: dict[str, bool] = {}
        for node in self.nodes.of(ast.Call):  # `runner.register(self.x)`
            func = node.func
            if type(func) is not ast.Attribute or not (node.args or node.keywords):
                continue
            keeps = verbs.get(func.attr)
            if keeps is None:
                keeps = verbs[func.attr] = bool(name_words(func.attr) & KEEPING_VERBS)
            if not keeps or (type(func.value) is ast.Name and func.value.id == "self"):
                continue
            held = handed(node)
            if held:
                held.discard(self_attr(func.value))  # `self.x.add(...)`: its own method
                share(node, held)
        for node in self.nodes.of(ast.Assign):
            value = node.value
            if type(value) is ast.Attribute:  # `obj.x = self.x`
                attr = self_attr(value)
                if attr in attrs and any(type(t) is ast.Attribute and not (
                        type(t.value) is ast.Name and t.value.id == "self") for t in node.targets):
                    share(node, {attr})
            elif type(value) is ast.Call and (value.args or value.keywords):  # `self.y = Runner(self.x)`
                targets = {self_attr(t) for t in node.targets} - {None}
                if targets:
                    share(node, {a for a in handed(value) if targets - {a}})
        judged_found = tuple((tuple(sorted(rebinds[c])), tuple(sorted(shares[c])))
                             for c in judged if c in shares)
        return judged_found, unjudged

    def _methods_around(self, node: ast.AST):
        """(class, method name) for each method of a class the node is inside."""
        for o in self.nodes.owners(node):
            if isinstance(o, _FUNCTIONS):
                c = self.nodes.owner(o)
                if type(c) is ast.ClassDef and o in c.body:
                    yield c, o.name


# prefilter patterns
_BARE_DEL = re.compile(rb"del[ \t]+[A-Za-z_]\w*[ \t]*(?:,[ \t]*[A-Za-z_]\w*[ \t]*)*(?:#[^\n]*)?\r?\n")

_CLEANUP_DEF = re.compile(
    rb"def[ \t]+\w*(?:free|release|clean|delet|destroy|dispos|teardown|unload|dealloc|shutdown|close"
    rb"|drop|purge|evict)")

_EMPTY_CUES = (b"= {}", b"= []", b"dict()", b"list()", b"set()", b"OrderedDict()", b"defaultdict(",
               b"deque()")

_CLEANUP_TOKENS = (b"empty_cache", b"collect(", b"malloc_trim", b"clear_device_cache", b"release_memory",
                   b"free_memory", b"del self")

_REBIND_EMPTY = re.compile(
    rb"self\.\w+[ \t]*(?::[^=\n]*)?=[ \t]*(?:\{\}|\[\]|dict\(\)|list\(\)|set\(\)"
    rb"|(?:collections\.)?(?:OrderedDict\(\)|defaultdict\(|deque\(\)))")


def scan_of(nodes) -> _Scan:
    """The file's scan, shared by the release checks' prefilters (each reads its part)."""
    return nodes.shared("release scan", _Scan)


class ScanPrefilter(Prefilter):
    """A release check's prefilter: its `part` of the file's shared scan decides (`decide`),
    or, for a file `ast` cannot parse, the bytes (`without_scan`)."""

    scans = True
    part: ClassVar[str]  # the `_Scan` method giving this check's part

    @classmethod
    def scan(cls, nodes) -> object:
        return getattr(scan_of(nodes), cls.part)()

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        found = cls.scanned(data)
        return cls.without_scan(data, settings) if found is None else cls.decide(found, settings)

    @classmethod
    def without_scan(cls, data: bytes, settings) -> bool:
        raise NotImplementedError

    @classmethod
    def decide(cls, found, settings) -> bool:
        return bool(found)


def deleted_parameter_in(data: bytes, settings) -> bool:
    """Without a scan (a file `ast` cannot parse): a `del name` in a function meant to
    free - one calling a reclaim, or one whose name says it frees something."""
    if b"del " not in data or not _BARE_DEL.search(data):
        return False
    if any(t in data for t in _CLEANUP_TOKENS):
        return True
    starts = [m.end() for m in _CLEANUP_DEF.finditer(data)]
    for name in settings.release_methods:
        token = b"def " + name.encode() + b"("
        at = data.find(token)
        while at != -1:
            starts.append(at + len(token))
            at = data.find(token, at + len(token))
    for start in starts:
        end = data.find(b"def ", start)
        if _BARE_DEL.search(data, start, end if end != -1 else len(data)):
            return True
    return False


def weak_callback_in(data: bytes) -> bool:
    """Without a scan: a `WeakMethod`, or a `weakref.ref` near a finalizer or atexit."""
    return b"WeakMethod" in data or (b".ref(" in data and (b"finalize(" in data or b"atexit" in data))


def reclaim_in(data: bytes) -> bool:
    """Without a scan: a reclaim call that may come too early or while the object is held."""
    return any(t in data for t in _CLEANUP_TOKENS[:6]) and (b"= None" in data or _CLEANUP_DEF.search(data)
                                                            is not None)


def rebound_container_in(data: bytes, settings) -> bool:
    """Without a scan: `self.x = {}` inside a release method."""
    if not any(cue in data for cue in _EMPTY_CUES):
        return False
    for name in settings.release_methods:
        token = b"def " + name.encode() + b"("
        start = data.find(token)
        while start != -1:
            end = data.find(b"def ", start + len(token))
            if _REBIND_EMPTY.search(data, start, end if end != -1 else len(data)):
                return True
            start = data.find(token, start + len(token))
    return False


def rebound_shared(found: tuple, settings) -> bool:
    """From `_Scan.rebound_containers()`: does a release method (by the settings) rebind
    an attribute that another method hands on?"""
    judged, unjudged = found
    names = settings.release_methods
    if any(release in names for release in unjudged):
        return True
    return any(release in names and any(a == attr and m != release for m, a in shared)
               for rebound, shared in judged for release, attr in rebound)
