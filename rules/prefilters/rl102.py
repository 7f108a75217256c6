"""RL102's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl102_cached_instance_method/` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import ast
import re

from retainlint.project.names import NOT_INSTANCE_DECORATORS
from retainlint.project.index import CACHE_DECORATORS
from retainlint.project.nodes import FileNodes
from retainlint.project.prefilter import Prefilter
from retainlint.project.ast_facts import absolute, decorator_name, file_imports, qualify


ENUM_BASES = frozenset(
    {
        "enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag",
        "enum.ReprEnum", "enum.EnumMeta", "enum.EnumType", "aenum.Enum", "aenum.IntEnum",
        "aenum.StrEnum", "aenum.Flag", "aenum.IntFlag", "strenum.StrEnum",
    }
)

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)

_INDENTED_CACHE = re.compile(rb"^[ \t]+@[\w.]*\b(?:lru_cache|cache|alru_cache)\b", re.MULTILINE)

_CACHE_ALIAS = re.compile(rb"\b(?:lru_cache|cache|alru_cache) as \w+")


class CachedInstanceMethodPrefilter(Prefilter):
    code = "RL102"

    triggers = ("cache",)

    scans = True

    @classmethod
    def scan(cls, nodes: FileNodes) -> frozenset[str]:
        """The qualified decorators of instance methods (first parameter `self`) that no
        decorator makes static or class methods, in classes that are not enums
        by their own bases: one of them must be a cache decorator."""
        found: set[str] = set()
        imports = None
        for klass in nodes.of(ast.ClassDef):
            methods = [s for s in klass.body if isinstance(s, _DEFS) and s.decorator_list]
            if not methods:
                continue
            if imports is None:
                imports = file_imports(nodes)
            if any(qualify(imports, b) in ENUM_BASES for b in klass.bases) or any(
                    k.arg == "metaclass" and qualify(imports, k.value) in ENUM_BASES
                    for k in klass.keywords):
                continue
            for fn in methods:
                params = fn.args.posonlyargs or fn.args.args
                if not params or params[0].arg != "self":
                    continue
                names = [decorator_name(imports, d) for d in fn.decorator_list]
                if any(n in NOT_INSTANCE_DECORATORS for n in names if n):
                    continue
                found.update(n for n in names if n)
        return frozenset(found)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """A cache decorator among the decorators `scan` found (bytes alone when the file
        has no "cache": an indented decorator naming one, or a cache decorator imported
        under another name)."""
        summary = getattr(data, "summary", None)
        found = summary.scans.get(cls.code) if summary is not None else None
        if found is not None:
            return any(q in CACHE_DECORATORS or index.is_cache_decorator(absolute(q, summary))
                       for q in found)
        if b"@" not in data:
            return False
        if b"cache" in data and (_INDENTED_CACHE.search(data) or _CACHE_ALIAS.search(data)):
            return True
        return any(
            name in data
            and re.search(rb"^[ \t]+@[\w.]*\b" + re.escape(name) + rb"\b", data, re.MULTILINE)
            for name in index.cache_decorator_names
        )
