"""RL301's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl301_strong_module_keyed_cache.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast

from retainlint.project.container_scan import (
    container_facts,
    instance_memo,
    might_be_heavy,
    might_define_container,
    names_heavy_type,
)
from retainlint.project.prefilter import Prefilter


# the scan's answer for a file with an object-keyed instance memo (judged by the rule)
INSTANCE_MEMO = "instance memo"
# ... and for a module- or class-level container a method writes under `self`
INSTANCE_KEYED = "instance-keyed memo"
# ... and for one written in an override of a library callback (see `PER_CALL_ARGUMENTS`)
PER_CALL_KEYED = "per-call keyed"

# Library callbacks whose overrides are handed a fresh object on every call, which the
# library drops once the call is done: base class -> {method: positions of those
# arguments after `self`}; a method name ending in `*` stands for every method of that
# prefix. Known from the libraries' documented signatures, not from the code checked.
_LXML_LOOKUP = {"lookup": (1,)}  # lookup(type, doc, namespace, name): the parsed document
_LOG_HANDLER = {"emit": (0,), "handle": (0,), "format": (0,), "filter": (0,)}  # a LogRecord
_AST_VISITOR = {"visit*": (0,), "generic_visit": (0,)}  # a node of the tree being walked
PER_CALL_ARGUMENTS: dict[str, dict[str, tuple[int, ...]]] = {
    "lxml.etree.CustomElementClassLookup": _LXML_LOOKUP,
    "lxml.html.HtmlElementClassLookup": _LXML_LOOKUP,
    "lxml.etree.PythonElementClassLookup": {"lookup": (0, 1)},  # lookup(doc, element)
    "logging.Handler": _LOG_HANDLER,
    "logging.StreamHandler": _LOG_HANDLER,
    "logging.FileHandler": _LOG_HANDLER,
    "logging.handlers.BufferingHandler": _LOG_HANDLER,
    "logging.handlers.MemoryHandler": _LOG_HANDLER,
    "logging.handlers.QueueHandler": {**_LOG_HANDLER, "prepare": (0,), "enqueue": (0,)},
    "logging.Filter": {"filter": (0,)},
    "logging.Formatter": {"format": (0,), "formatMessage": (0,), "formatException": (0,)},
    "ast.NodeVisitor": _AST_VISITOR,
    "ast.NodeTransformer": _AST_VISITOR,
    # process_request(request, client_address): the connection's socket
    "socketserver.BaseServer": {"process_request": (0,), "finish_request": (0,),
                                "verify_request": (0,), "shutdown_request": (0,)},
}


def per_call_positions(base: str, method: str) -> tuple[int, ...]:
    """The positions (after `self`) of the arguments a library hands `method`, overridden
    in a subclass of `base`, afresh on every call; () when none are known."""
    methods = PER_CALL_ARGUMENTS.get(base, {})
    if method in methods:
        return methods[method]
    return next((found for name, found in methods.items()
                 if name.endswith("*") and method.startswith(name[:-1])), ())



def _instance_key(key: ast.AST, fn: ast.AST) -> bool:
    """`self`, or a local of the method assigned an expression that names `self` itself
    (not one of its attributes): a superset of what the rule accepts."""
    if isinstance(key, ast.Name) and key.id == "self":
        return True
    if not isinstance(key, ast.Name) or fn is None:
        return False
    for node in ast.walk(fn):
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == key.id
                                                 for t in node.targets)):
            parents = [n for n in ast.walk(node.value) if isinstance(n, (ast.IfExp, ast.Tuple))]
            if any(isinstance(c, ast.Name) and c.id == "self"
                   for n in [node.value, *parents] for c in ast.iter_child_nodes(n)) or (
                    isinstance(node.value, ast.Name) and node.value.id == "self"):
                return True
    return False


def _callback_method(fn: ast.AST) -> bool:
    """Might `fn` override a library callback of `PER_CALL_ARGUMENTS` (by its name only)?"""
    name = getattr(fn, "name", "")
    return any(name == m or (m.endswith("*") and name.startswith(m[:-1]))
               for methods in PER_CALL_ARGUMENTS.values() for m in methods)


class StrongModuleKeyedCachePrefilter(Prefilter):
    code = "RL301"

    # A container is defined by a literal (`{}`, `{...}`) or a call of dict/set/
    # defaultdict/OrderedDict, however imported: one of these is in every flagged file.
    triggers = ("{", "dict", "Dict", "set")

    scans = True

    @classmethod
    def scan(cls, nodes):
        """The names that would make a key heavy: the key types annotated on containers
        defined outside functions and bound once, and what keys written to a container of
        such a name are (see `Evidence`); or `INSTANCE_MEMO` when a class fills an
        instance container from its `__init__` under a method's parameter."""
        if instance_memo(nodes):
            return INSTANCE_MEMO
        facts = container_facts(nodes)
        if not facts.candidates:
            return None
        evidence = facts.evidence.fresh()
        for (scope, name), entries in facts.candidates.items():
            for _, node, annotation in entries:
                evidence.container_slot(annotation, 0)
                if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Subscript):
                    evidence.container_slot(node.value.func, 0)  # `dict[K, V]()`
            for annotation in facts.bare.get((scope, name), ()):
                evidence.container_slot(annotation, 0)
        for _, key, _, fn, method_class in facts.writes:
            evidence.value(key, fn, method_class)
        if any(method_class is not None and _instance_key(key, fn)
               for _, key, _, fn, method_class in facts.writes):
            return INSTANCE_KEYED
        if any(method_class is not None and method_class.bases and _callback_method(fn)
               for _, _, _, fn, method_class in facts.writes):
            return PER_CALL_KEYED
        return evidence.result()

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """A container defined at module level or in a class body whose annotated key
        type or written keys may be heavy (a heavy type, a heavy project class, ...)."""
        summary = getattr(data, "summary", None)
        if summary is None:
            return (might_define_container(data) and names_heavy_type(data, ("torch", "transformers"), settings, index)) \
                or b"self." in data
        found = summary.scans.get(cls.code)
        if found in (INSTANCE_MEMO, INSTANCE_KEYED, PER_CALL_KEYED):
            return True
        return found is not None and might_be_heavy(found, summary, settings, index)
