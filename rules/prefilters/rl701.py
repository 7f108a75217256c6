"""RL701's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl701_self_cycle_callback/` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast
import re
from typing import Optional

from retainlint.project.names import name_words
from retainlint.project.hook_names import HANDLE_HOOKS
from retainlint.project.prefilter import Prefilter


_CLASS_NAMES = re.compile(rb"class[ \t]+(\w+)[ \t]*[(:]")

# `self.x = self.method`, `self.x = closure`, `p.cb = self.method` (the name must be a
# `def` of the file)
_STORED_NAME = re.compile(
    rb"self\.[\w.]+(?:\[[^\]\n]*\])?[ \t]*(?::[^=\n]*)?=[ \t]*(?:self\.)?(\w+)[ \t]*(?:#[^\n]*)?\r?$",
    re.MULTILINE)

_STORED_BOUND = re.compile(rb"\w[ \t]*=[ \t]*self\.(\w+)[ \t]*(?:#[^\n]*)?\r?$", re.MULTILINE)

# a partial / MethodType / lambda that mentions `self` on the same line
_SELF_CALLABLES = (
    (b"partial(", re.compile(rb"partial\([^\n]*\bself\b")),
    (b"MethodType(", re.compile(rb"MethodType\([^\n]*\bself\b")),
    (b"lambda", re.compile(rb"lambda\b[^\n:]*:[^\n]*\bself\b")),
    (b"setattr(", re.compile(rb"setattr\([^\n]*\bself\.")),
    # a lambda stored or registered whose body starts on a later line
    (b"lambda", re.compile(rb"self\.[\w.]+[ \t]*=[ \t]*lambda\b|(?:append|add|hook|register\w*)\([ \t]*lambda\b")),
)

# Shapes reported in any class, heavy or not (`SelfCycleCallback._worth_reporting`): a
# cache around a bound method, a hook on an autograd node, a callback handed to a holder
# built or set on `self` in a class with a release method.
_METHOD_CACHE = re.compile(rb"cache\b(?:\([^()\n]*\))?\(\s*self\.\w+\s*\)")
_GRAPH_HOOK = re.compile(rb"\.register_\w*hook\(")
# a constructor's result assigned, or a setter called (arguments may span lines, so the
# argument `self.<name>` is looked for on its own)
_HOLDER = re.compile(rb"=\s*[\w.]*\b[A-Z]\w*[a-z]\w*\(|\.set\w*\(")
_SELF_ARGUMENT = re.compile(rb"\bself\.\w+\s*[,)]")


# `super().__init__(self.propose, ...)`: a bound method handed to a base class's method
_SUPER_BOUND = re.compile(rb"super\([^)\n]*\)\.\w+\([^\n]*?\b\w+\.\w+\s*[,)]")
# `module.forward = partial(fn, module.forward)`: an object's own method stored on it
_OWN_METHOD_STORED = re.compile(
    rb"^[ \t]*(\w+)\.\w+[ \t]*=[ \t]*(?:[\w.]*\b(?:partial|MethodType)\(|lambda\b)[^\n]*\b\1\b", re.MULTILINE)


# a partial / lambda over `self` connected to a Qt signal (held in C++)
_QT_IMPORTS = (b"qtpy", b"PyQt5", b"PyQt6", b"PySide2", b"PySide6", b"pyqtgraph")
_SELF_SLOT = re.compile(rb"\.connect\(\s*(?:[\w.]*partial\(|lambda\b|\w+\s*[,)])")


def _light_shapes(data: bytes, settings) -> bool:
    if b"cache" in data and _METHOD_CACHE.search(data):
        return True
    if b"super(" in data and _SUPER_BOUND.search(data):
        return True
    if b".connect(" in data and any(q in data for q in _QT_IMPORTS) and _SELF_SLOT.search(data):
        return True
    if (b"partial(" in data or b"MethodType(" in data or b"lambda" in data) and _OWN_METHOD_STORED.search(data):
        return True
    if b"grad_fn" in data and _GRAPH_HOOK.search(data):
        return True
    return False


def _released_holder_text(data: bytes, settings) -> bool:
    """For a file `ast` cannot parse: a release method, and a callback over `self` handed
    to a holder built or set (`self.timer = Timer(self.tick)`, `self.curl.setopt(.., self.cb)`)."""
    return any(b"def " + name.encode() + b"(" in data for name in settings.release_methods) \
        and _HOLDER.search(data) is not None and _SELF_ARGUMENT.search(data) is not None


def _mentions_self(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and _is_self(n.value) for n in ast.walk(node))


def _holder_site(node: ast.AST) -> bool:
    """`<x>.<a> = Capitalised(..., self.m, ...)` (a class built around a callback over `self`)
    or `<x>.set_handler(self.m)` (a setter keeping it): a callback handed to a holder."""
    if isinstance(node, ast.Assign):
        value = node.value
        if not isinstance(value, ast.Call) or not any(
                isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets):
            return False
        last = _last_name(value.func) or ""
        return last[:1].isupper() and not last.isupper() and _argument_mentions_self(value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr.lstrip("_").lower().startswith("set") and not _is_self(node.func.value):
        return _argument_mentions_self(node)
    return False


def _argument_mentions_self(call: ast.Call) -> bool:
    """Does an argument, positional or keyword, use `self.<attr>` (`send=self._send`)?"""
    return any(_mentions_self(a) for a in (*call.args, *(k.value for k in call.keywords)))


def _holder_classes(nodes) -> tuple[frozenset[str], ...]:
    """The method names of each class with a method handing a callback over `self` to a
    holder (`_holder_site`): the rule reports it when a release method uses that holder."""
    found: dict[int, frozenset[str]] = {}
    for node in (*nodes.of(ast.Assign), *nodes.of(ast.Call)):
        if not _holder_site(node):
            continue
        cls = next((o for o in nodes.owners(node) if isinstance(o, ast.ClassDef)), None)
        if cls is not None and id(cls) not in found:
            found[id(cls)] = frozenset(f.name for f in cls.body if isinstance(f, _FUNCTIONS))
    return tuple(found.values())


_TOKENS = (b"append(self.", b"add(self.", b"extend([self.", b"insert(0, self.", b"callback(self.",
           b"register(self.")

CONTAINER_ADD = frozenset({"append", "appendleft", "add", "insert", "extend", "setdefault",
                            "update", "__setitem__"})

# Bound methods every `nn.Module` has, even when the class does not define them.
MODULE_METHODS = frozenset({"forward", "__call__", "_call_impl", "_wrapped_call_impl"})

CALLBACK_WORDS = frozenset({"callback", "callbacks", "listener", "listeners", "handler", "handlers",
                             "observer", "observers", "hook", "hooks"})

REGISTER_VERBS = frozenset({"register", "add", "append", "set", "subscribe", "connect", "install", "attach"})


def _heavy_names(index, settings) -> frozenset[bytes]:
    names = getattr(index, "heavy_names", None)
    if names is None:
        names = frozenset(q.rsplit(".", 1)[-1].encode() for q in getattr(index, "heavy_classes", ()))
    configured = frozenset(t.rsplit(".", 1)[-1].encode() for t in settings.heavy_types)
    return names | configured if configured else names


_PARTIAL_NAMES = frozenset({"partial", "partialmethod", "MethodType"})

# decorators (as written) that make a def no bound method; so do `@x.setter` and the like
_STATIC_DECORATORS = frozenset({"staticmethod", "classmethod", "builtins.staticmethod",
                                "builtins.classmethod"})

_NOT_BOUND = _STATIC_DECORATORS | {"property", "cached_property", "builtins.property",
                                   "functools.cached_property"}

_ACCESSORS = frozenset({"setter", "getter", "deleter"})

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

_CLOSURE_OWNERS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda})

_CALLBACKISH = re.compile("callback|listener|handler|observer|hook", re.IGNORECASE)


def _last_name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _dotted_text(node: ast.AST) -> str:
    if isinstance(node, ast.Subscript):
        node = node.value
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _decorated(fn: ast.AST, kinds: frozenset, accessors: bool = False) -> bool:
    """Is `fn` decorated with one of `kinds` (or, with `accessors`, `@x.setter`...)?"""
    for d in fn.decorator_list:
        if isinstance(d, ast.Call):
            d = d.func
        if _dotted_text(d) in kinds or accessors and isinstance(d, ast.Attribute) and d.attr in _ACCESSORS:
            return True
    return False


_REGISTERS: dict[str, bool] = {}


def _registers(name: str) -> bool:
    """Can a method of this name store its argument (`_Sites.visit_Call`)?"""
    found = _REGISTERS.get(name)
    if found is None:
        found = name in CONTAINER_ADD or name in HANDLE_HOOKS or (
            "hook" in name and name.lstrip("_").startswith("register")) or bool(
            _CALLBACKISH.search(name) and name_words(name) & CALLBACK_WORDS and name_words(name) & REGISTER_VERBS)
        if len(_REGISTERS) < 65536:
            _REGISTERS[name] = found
    return found


def _bound_names(targets) -> list[str]:
    """Names an assignment or loop target binds (`a`, `a, (b, *c)`)."""
    out, todo = [], list(targets)
    while todo:
        t = todo.pop()
        kind = type(t)
        if kind is ast.Name:
            out.append(t.id)
        elif kind is ast.Tuple or kind is ast.List:
            todo.extend(t.elts)
        elif kind is ast.Starred:
            todo.append(t.value)
    return out


def _names_in(value: ast.AST) -> list[str]:
    """The names `_Scan.refers` may look up in `value`."""
    kind = type(value)
    if kind is ast.Name:
        return [value.id]
    if kind is ast.List or kind is ast.Tuple or kind is ast.Set:
        return [n for e in value.elts for n in _names_in(e)]
    if kind is ast.Dict:
        return [n for v in value.values for n in _names_in(v)]
    if kind is ast.Starred:
        return _names_in(value.value)
    if kind is ast.Call:
        return [n for a in (*value.args, *(k.value for k in value.keywords)) for n in _names_in(a)]
    return []


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _rooted(node: ast.AST) -> bool:
    """Could `node` be an object reached from `self` (`_owned`): a chain of attributes,
    subscripts and calls ending in a name."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name)


def _mentions_self(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(node))


class _Scan:
    """The shapes `_Sites` reports, read from the `ast` of a file: in a method (first
    parameter `self`, also inside its closures and lambdas), a callback that may reference
    `self` (`self.<method>`, a lambda or nested function using `self`, a partial or
    `MethodType` over one of those, a local bound to one, containers of those) assigned to
    an attribute or item, handed to `setattr`, added to a container, registered as a hook
    or handed to a `register_callback`-style method. Coarser than the rule: any name may
    be the root of what is owned, and locals count file-wide."""

    def __init__(self, nodes) -> None:
        self.nodes = nodes
        self.partials = set(_PARTIAL_NAMES)
        for node in nodes.of(ast.ImportFrom):  # `from functools import partial as p`
            self.partials.update(a.asname for a in node.names if a.asname and a.name in _PARTIAL_NAMES)
        self._bound: Optional[set[str]] = None
        # what names are bound to (assignments; loops are added when first needed)
        self.values_of: dict[str, list] = {}
        self._loops = False
        # name -> None: holds a callback over `self`; the `self.<attr>`s it holds; or False
        self.taint: dict[str, object] = {}
        self._closures: Optional[dict[str, list]] = None
        self.classes: dict[int, tuple[ast.ClassDef, list]] = {}  # id -> (class, [definite, attrs])

    @property
    def bound(self) -> set[str]:
        """Names of the bound methods some class of the file defines."""
        if self._bound is None:
            nodes = self.nodes
            self._bound = set(MODULE_METHODS)
            for kind in _FUNCTIONS:
                for fn in nodes.of(kind):
                    if type(nodes.owner(fn)) is ast.ClassDef and not (
                            fn.decorator_list and _decorated(fn, _NOT_BOUND, accessors=True)):
                        self._bound.add(fn.name)
        return self._bound

    def method_class(self, node: ast.AST) -> Optional[ast.ClassDef]:
        """The class of the method `node` is in (through closures and lambdas)."""
        inner = None
        for owner in self.nodes.owners(node):
            if type(owner) is ast.ClassDef:
                if not isinstance(inner, _FUNCTIONS):
                    return None
                args = inner.args.posonlyargs or inner.args.args
                if not args or args[0].arg != "self" or _decorated(inner, _STATIC_DECORATORS):
                    return None
                return owner
            inner = owner
        return None

    def closure(self, name: str) -> bool:
        """Is `name` a function nested in a method that uses `self` (`_Locals.closures`)?"""
        if self._closures is None:
            nodes = self.nodes
            self._closures = {}
            for kind in _FUNCTIONS:
                for fn in nodes.of(kind):
                    if type(nodes.owner(fn)) in _CLOSURE_OWNERS:
                        self._closures.setdefault(fn.name, []).append(fn)
        fns = self._closures.get(name)
        return bool(fns) and any(self.method_class(fn) is not None and _mentions_self(fn) for fn in fns)

    def held(self, name: str) -> object:
        """What a local `name` holds (`_Locals.bindings`, file-wide): None, a callback
        over `self`; a frozenset, one if one of these `self.<attr>` is inherited; False.
        Solved for `name` and the names it is bound from, together, to a fixpoint."""
        taint = self.taint
        if name in taint:
            return taint[name]
        if not self._loops:
            self._loops = True
            for kind in (ast.For, ast.AsyncFor, ast.comprehension):
                for node in self.nodes.of(kind):
                    if self.maybe_refers(node.iter):
                        for bound in _bound_names((node.target,)):
                            self.values_of.setdefault(bound, []).append(node.iter)
        if name not in self.values_of:  # a parameter, say
            taint[name] = found = None if self.closure(name) else False
            return found
        group, todo = [], [name]
        while todo:
            n = todo.pop()
            if n in taint:
                continue
            taint[n] = None if self.closure(n) else False
            group.append(n)
            for value in self.values_of.get(n, ()):
                todo.extend(_names_in(value))
        changed = True
        while changed:
            changed = False
            for n in group:
                old = taint[n]
                if old is None:
                    continue
                new = old
                for value in self.values_of.get(n, ()):
                    attrs: set[str] = set()
                    found = self.refers(value, attrs)
                    if found:
                        new = None
                        break
                    if found is None:
                        new = frozenset(attrs).union(new or ())
                if new != old:
                    taint[n] = new
                    changed = True
        return taint[name]

    def maybe_refers(self, value: ast.AST) -> bool:
        """A quick look at the kind of `value`: could `refers` say yes?"""
        kind = type(value)
        if kind is ast.Call:
            func = value.func
            kind = type(func)
            return (func.attr if kind is ast.Attribute else func.id if kind is ast.Name else None) \
                in self.partials
        if kind is ast.Attribute:
            value = value.value
            return type(value) is ast.Name and value.id == "self"
        if kind is ast.Name or kind is ast.Lambda:
            return True
        if kind is ast.List or kind is ast.Tuple or kind is ast.Set:
            return bool(value.elts)
        return kind is ast.Dict and bool(value.values)

    def refers(self, value: ast.AST, attrs: set) -> Optional[bool]:
        """True: `value` references `self`; None: it does if one of the `self.<attr>` it
        added to `attrs` is an inherited method; False: it does not."""
        kind = type(value)
        if kind is ast.Attribute:
            if not _is_self(value.value):
                return False
            if value.attr in self.bound:
                return True
            attrs.add(value.attr)
            return None
        if kind is ast.Name:
            held = self.held(value.id)
            if held is None or held is False:
                return held is None
            attrs.update(held)
            return None
        if kind is ast.Lambda:
            return _mentions_self(value.body)
        if kind is ast.Call:
            if _last_name(value.func) not in self.partials:
                return False
            return self.any_refers([*value.args, *(k.value for k in value.keywords)], attrs, self_too=True)
        if kind is ast.List or kind is ast.Tuple or kind is ast.Set:
            return self.any_refers(value.elts, attrs)
        if kind is ast.Dict:
            return self.any_refers(value.values, attrs)
        if kind is ast.Starred:
            return self.refers(value.value, attrs)
        return False

    def any_refers(self, values, attrs: set, self_too: bool = False) -> Optional[bool]:
        result: Optional[bool] = False
        for v in values:
            if self_too and _is_self(v):
                return True
            found = self.refers(v, attrs)
            if found:
                return True
            if found is None:
                result = None
        return result

    def site(self, node: ast.AST, values) -> None:
        attrs: set[str] = set()
        found = self.any_refers(values, attrs)
        if found is False:
            return
        cls = self.method_class(node)
        if cls is None:
            return
        entry = self.classes.setdefault(id(cls), (cls, [False, set()]))[1]
        if found:
            entry[0] = True
        else:
            entry[1] |= attrs

    def found(self) -> tuple:
        nodes = self.nodes
        if not nodes.of(ast.ClassDef):
            return ()
        sites = []
        maybe_refers, values_of, partials = self.maybe_refers, self.values_of, self.partials
        # every Assign and Call of the file: the node types as locals (a measurable saving)
        Attribute, Call, Name, Subscript, Constant = ast.Attribute, ast.Call, ast.Name, ast.Subscript, ast.Constant
        for node in nodes.of(ast.Assign):
            value = node.value
            kind = type(value)
            if kind is Call:  # most values: `maybe_refers`, inlined
                func = value.func
                kind = type(func)
                if (func.attr if kind is Attribute else func.id if kind is Name else None) not in partials:
                    continue
            elif kind is Constant or not maybe_refers(value):
                continue
            for t in node.targets:
                kind = type(t)
                if kind is Attribute or kind is Subscript:
                    if _rooted(t):
                        sites.append((node, (value,)))
                else:
                    for name in _bound_names((t,)):
                        values_of.setdefault(name, []).append(value)
        for node in nodes.of(ast.AnnAssign):
            t = node.target
            if node.value is not None and type(t) is not Name and maybe_refers(node.value) and _rooted(t):
                sites.append((node, (node.value,)))
        registers = _REGISTERS
        for node in nodes.of(Call):
            func = node.func
            kind = type(func)
            if kind is Attribute:
                name = func.attr
                found = registers.get(name)
                if found is None:
                    found = _registers(name)
                if not found or name in CONTAINER_ADD and _is_self(func.value):
                    continue
                if (node.args or node.keywords) and _rooted(func.value):
                    sites.append((node, [*node.args, *(k.value for k in node.keywords)]))
            elif kind is Name and func.id == "setattr" and len(node.args) + len(node.keywords) == 3:
                args = [*node.args, *(k.value for k in node.keywords)]
                if _rooted(args[0]):
                    sites.append((node, args[2:] if len(node.args) == 3 else args))
        for node, values in sites:
            self.site(node, values)
        out = []
        for cls, (definite, attrs) in self.classes.values():
            if definite or attrs:
                out.append((cls.name, nodes.owner(cls) is None,
                            tuple(_dotted_text(b) for b in cls.bases),
                            None if definite else tuple(sorted(attrs))))
        return tuple(out)


STATIC = frozenset({"staticmethod", "builtins.staticmethod", "classmethod", "builtins.classmethod"})

# -- structural prefilter (`ast`, from the index's pass) -------------------------------------
# Bases that make a class heavy whatever the index knows (unresolved spellings of `nn.Module`).
_TORCH_PREFIXES = ("torch.", "nn.", "Module", "PreTrainedModel")

_INHERITED_EXCLUDED = STATIC | {"property", "builtins.property", "functools.cached_property"}


def inherited_bound_method(decorators) -> bool:
    """Do a project base class's method's decorators (as the index records them) leave it
    a bound method? Not a static or class method, nor a property - the index keeps a
    name's last `def`, which for a property with a setter is `@<name>.setter`."""
    return not any(d in _INHERITED_EXCLUDED or d.rpartition(".")[2] in _ACCESSORS for d in decorators)


def _inherits_method(index, bases, attrs) -> bool:
    """Is one of `attrs` a bound method of a project base class (`_method_names`)?"""
    for summary in index.ancestors(bases):
        for attr in attrs:
            method = summary.methods.get(attr)
            if method is not None and inherited_bound_method(method.decorators):
                return True
    return False


class SelfCycleCallbackPrefilter(Prefilter):
    code = "RL701"

    # every callback the rule reports references `self` (the scan needs no more)
    triggers = ("self",)

    scans = True

    @classmethod
    def scan(cls, nodes) -> tuple:
        """Per class with a method that stores, adds or registers a callback over `self`
        (see `_Scan`): (name, top level?, base names, None when the callback surely
        references the instance, else the `self.<attr>`s that do if they are methods
        inherited from another file); and the method names of each class handing such a
        callback to a holder (`_holder_classes`)."""
        return _Scan(nodes).found(), _holder_classes(nodes)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """From the scan (`_scanned`); for a file `ast` cannot parse, from the bytes: a
        heavy class's name, and a line that looks like one of the shapes."""
        if _light_shapes(data, settings):
            return True
        summary = getattr(data, "summary", None)
        if summary is not None:
            scanned = summary.scans.get(cls.code)
            releases = set(settings.release_methods)
            return bool(scanned) and (cls._scanned(scanned[0], summary, settings, index) or any(
                not releases.isdisjoint(methods) for methods in scanned[1]))
        if _released_holder_text(data, settings):
            return True
        heavy = _heavy_names(index, settings)
        if not any(name in heavy for name in _CLASS_NAMES.findall(data)):
            return False
        if any(t in data for t in _TOKENS) or (b"register" in data and b"hook(" in data):
            return True
        if any(token in data and pattern.search(data) for token, pattern in _SELF_CALLABLES):
            return True
        return any(b"def " + name + b"(" in data
                   for pattern in (_STORED_NAME, _STORED_BOUND) for name in pattern.findall(data))

    @classmethod
    def _scanned(cls, found, summary, settings, index) -> bool:
        """A class with a self-cycle shape that may be heavy (the rule's test: its name,
        or a base, among the heavy classes), whose callback is a method of its own (or,
        for `self.<attr>` not defined in the file, of a project base class)."""
        if not found:
            return False
        heavy = _heavy_names(index, settings)
        for name, top, bases, attrs in found:
            if name.encode() not in heavy and not any(
                    b.startswith(_TORCH_PREFIXES) or b.rsplit(".", 1)[-1].encode() in heavy for b in bases):
                continue
            if attrs is None or not top:
                return True
            klass = summary.classes.get(name)
            if klass is None or _inherits_method(index, klass.bases, attrs):
                return True
        return False
