"""RL302's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl302_strong_module_valued_cache.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast

from retainlint.project.container_scan import (
    container_facts,
    might_be_heavy,
    might_define_container,
    names_heavy_type,
)
from retainlint.project.prefilter import Prefilter


class StrongModuleValuedCachePrefilter(Prefilter):
    code = "RL302"

    # As for RL301 (a literal or a call of dict/defaultdict/OrderedDict defines the dict;
    # the same triggers, so that both scan a file in turn: see `container_facts`).
    triggers = ("{", "dict", "Dict", "set")

    scans = True

    @classmethod
    def scan(cls, nodes):
        """The names that would make a value heavy: the value types annotated on dicts
        defined at module level and bound once, what functions write into a dict of such
        a name, and (when functions do write) its literal entries (see `Evidence`)."""
        facts = container_facts(nodes)
        dicts = {name: entries for (scope, name), entries in facts.candidates.items()
                 if scope is None and any(kind == "dict" for kind, _, _ in entries)}
        if not dicts:
            return None
        evidence = facts.evidence.fresh()
        for name, entries in dicts.items():
            for _, node, annotation in entries:
                evidence.container_slot(annotation, 1)
                if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Subscript):
                    evidence.container_slot(node.value.func, 1)  # `dict[K, V]()`
            for annotation in facts.bare.get((None, name), ()):
                evidence.container_slot(annotation, 1)
        written = set()
        for name, _, value, fn, method_class in facts.writes:
            if name in dicts and value is not None and fn is not None:
                evidence.value(value, fn, method_class)
                written.add(name)
        for name in written:  # `_c = {"identity": nn.Identity()}` counts once functions write
            for _, node, _ in dicts[name]:
                if isinstance(node.value, ast.Dict):
                    for value in node.value.values:
                        evidence.value(value, None, None)
        return evidence.result()

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """A dict defined at module level whose annotated value type, or the values
        functions write into it, may be heavy."""
        summary = getattr(data, "summary", None)
        if summary is None:
            return might_define_container(data) and names_heavy_type(data, ("torch", "transformers"), settings, index)
        found = summary.scans.get(cls.code)
        return found is not None and might_be_heavy(found, summary, settings, index)
