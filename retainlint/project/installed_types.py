"""Heavy types, heavy factories and cache decorators of the packages a project imports.

A user project is built on other libraries (`class Denoiser(diffusers.ModelMixin)`,
`timm.create_model(...)`): whether such a name is a model is read from the installed
package's source with astroid - parsed, never imported or run - and kept as a fact of
the distribution's version, so that astroid runs once per (distribution, version) and
name, never on a warm run. A package that is not installed is judged by a small shipped
table of the major libraries' heavy bases (`KNOWN_HEAVY_TYPES`, listed in the README).

Files are found by walking `sys.path` (a package directory or module file, and the
`*.dist-info` beside it), never with `importlib`, which runs a package's `__init__` to
find its submodules. astroid is imported only when a name is not yet known.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Optional, Protocol

from retainlint.project.names import HEAVY_TYPES

if TYPE_CHECKING:
    from astroid import nodes

log = logging.getLogger("retainlint.installed_types")

# Well-known heavy bases and factories of major libraries: the answer when the package
# is not installed where retainlint runs (pre-commit's own environment, a CI job).
KNOWN_HEAVY_TYPES = frozenset({
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.jit.ScriptModule",
    "torch.fx.GraphModule",
    "diffusers.ModelMixin",
    "diffusers.models.modeling_utils.ModelMixin",
    "diffusers.DiffusionPipeline",
    "diffusers.pipelines.pipeline_utils.DiffusionPipeline",
    "timm.models.vision_transformer.VisionTransformer",
    "peft.PeftModel",
    "peft.peft_model.PeftModel",
    "peft.tuners.tuners_utils.BaseTuner",
    "lightning.LightningModule",
    "lightning.pytorch.LightningModule",
    "lightning.pytorch.core.module.LightningModule",
    "pytorch_lightning.LightningModule",
    "pytorch_lightning.core.module.LightningModule",
    "sentence_transformers.SentenceTransformer",
    "sentence_transformers.SentenceTransformer.SentenceTransformer",
    "transformers.PreTrainedModel",
    "transformers.Pipeline",
    "transformers.pipelines.base.Pipeline",
})
KNOWN_HEAVY_FACTORIES = frozenset({
    "timm.create_model",
    "timm.models.create_model",
    "timm.models._factory.create_model",
    "peft.get_peft_model",
    "peft.mapping_func.get_peft_model",
    "transformers.pipeline",
    "accelerate.utils.extract_model_from_parallel",
})

_CACHES = frozenset({"functools.lru_cache", "functools.cache"})

# What a name is, as cached: a class deriving from a heavy type, a function returning
# one, a decorator applying a cache, or none of those ("").
HEAVY, FACTORY, CACHE, NOTHING = "heavy", "factory", "cache", ""

# Packages never read: torch's heavy types are known by name (names.py, the table), and
# its two thousand modules would take the whole budget.
_NOT_READ = frozenset({"torch", "builtins", "__future__", "typing", "typing_extensions"})
_MAX_FILE_BYTES = 4 << 20
_TEXTS_KEPT = 32 << 20  # bytes of source text kept for _might_define
_STAR_IMPORT = re.compile(rb"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\*", re.M)
_MAX_DEPTH = 12
DEFAULT_BUDGET_S = 5.0


@dataclass(frozen=True)
class Verdicts:
    """What the installed packages (and the table) say about the names a project uses."""
    heavy_types: frozenset[str] = frozenset()
    heavy_factories: frozenset[str] = frozenset()
    cache_decorators: frozenset[str] = frozenset()


class FactStore(Protocol):
    """Where the facts of one (distribution, version) are kept between runs. `stamp`
    (`source_stamp`) says which source they were read from: facts of another are unknown."""

    def load(self, dist: str, version: str, stamp: str) -> dict[str, str]: ...

    def save(self, dist: str, version: str, stamp: str, facts: dict[str, str]) -> None: ...


def known_verdicts(names: Iterable[str]) -> Verdicts:
    """The shipped table's answer, installed or not."""
    names = set(names)
    return Verdicts(frozenset(names & KNOWN_HEAVY_TYPES), frozenset(names & KNOWN_HEAVY_FACTORIES))


def installed_verdicts(names: Iterable[str], decorators: Iterable[str], store: FactStore,
                       budget_s: float = DEFAULT_BUDGET_S) -> Verdicts:
    """Verdicts on `names` (bases, annotations, constructors, callees) and `decorators`
    that belong to installed distributions. Known facts come from `store`; the rest are
    read with astroid until `budget_s` is spent (those left are asked again next run)."""
    decorators = set(decorators)
    by_dist: dict[Distribution, list[str]] = {}
    for name in sorted(set(names) | decorators):
        top = name.partition(".")[0]
        if top in _NOT_READ or top in sys.stdlib_module_names:
            continue
        dist = distribution_of(top)
        if dist is not None:
            by_dist.setdefault(dist, []).append(name)
    found: dict[str, str] = {}
    reader: Optional[Reader] = None
    deadline = time.process_time() + budget_s
    left = 0
    for dist, asked in sorted(by_dist.items(), key=lambda item: item[0].name):
        stamp = source_stamp(dist)
        facts = store.load(dist.name, dist.version, stamp)
        unknown = [n for n in asked if n not in facts
                   and (n in decorators or dist.may_define_models)]
        new = 0
        for name in unknown:
            if time.process_time() > deadline:
                left += 1
                continue
            if reader is None:
                reader = Reader()
            verdict = reader.verdict(name, dist, deadline)
            if verdict is None:  # the budget ran out on the way: asked again next run
                left += 1
                continue
            facts[name] = verdict
            new += 1
        if new:
            store.save(dist.name, dist.version, stamp, facts)
        found.update((n, facts[n]) for n in asked if n in facts)
    if reader is not None:
        log.info("installed types: %d names read with astroid in %.2fs",
                 reader.asked, reader.seconds)
    if left:
        log.info("installed types: time budget spent, %d names left for the next run", left)
    return Verdicts(
        frozenset(n for n, v in found.items() if v == HEAVY),
        frozenset(n for n, v in found.items() if v == FACTORY),
        frozenset(n for n, v in found.items() if v == CACHE and n in decorators))


# -- where installed packages are ---------------------------------------------------------

@dataclass(frozen=True)
class Distribution:
    name: str  # as its .dist-info folder spells it (normalized by the installer)
    version: str
    root: str  # the sys.path entry holding it
    info: str = field(compare=False, default="")  # its .dist-info folder

    @property
    def may_define_models(self) -> bool:
        """Is it torch, or does it require torch or a library built on it? Any other
        package cannot define a model, and is not read for one."""
        return _requires_torch(self.info)


@lru_cache(maxsize=None)
def _dist_info_dirs(entry: str) -> list[str]:
    try:
        return [n for n in os.listdir(entry) if n.endswith(".dist-info")]
    except OSError:
        return []


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


@lru_cache(maxsize=None)
def _declared_tops(entry: str) -> dict[str, str]:
    """Top-level module -> .dist-info folder, from the `top_level.txt` of the
    distributions in one sys.path entry (a distribution without one is found by name)."""
    found: dict[str, str] = {}
    for name in _dist_info_dirs(entry):
        try:
            with open(os.path.join(entry, name, "top_level.txt"), encoding="utf-8") as f:
                for line in f:
                    found.setdefault(line.strip(), name)
        except OSError:
            continue
    return found


@lru_cache(maxsize=None)
def distribution_of(top: str) -> Optional[Distribution]:
    """The installed distribution providing top-level module `top`, found on `sys.path`
    beside the package itself (by its name, or its `top_level.txt`); None when it is
    not installed from a wheel or sdist there."""
    here = os.getcwd()
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue  # the checked tree (`python -m`) is not an installed package
        if not (os.path.isdir(os.path.join(entry, top)) or os.path.isfile(os.path.join(entry, top + ".py"))):
            continue
        infos = [n for n in _dist_info_dirs(entry) if _normalized(n.split("-", 1)[0]) == _normalized(top)]
        info = infos[0] if infos else _declared_tops(entry).get(top)
        if info is None:
            return None  # the first match on the path is what Python would import
        dist, _, rest = info[:-len(".dist-info")].partition("-")
        return Distribution(dist, rest or "0", entry, os.path.join(entry, info))
    return None


@lru_cache(maxsize=None)
def source_stamp(dist: Distribution) -> str:
    """What changes when the distribution's source does, though its name and version do
    not (an editable install, an edited site-packages): the path, size and modification
    time of each of its top-level modules' files, as a digest."""
    tops = {dist.name, dist.name.lower(), _normalized(dist.name)}  # as `distribution_of` finds it
    try:
        with open(os.path.join(dist.info, "top_level.txt"), encoding="utf-8") as f:
            tops |= {line.strip() for line in f if line.strip()}
    except OSError:
        pass
    h = hashlib.sha1()
    for top in sorted(tops):
        base = os.path.join(dist.root, top)
        for path in [base + ".py", base + ".pyi", *_files_under(base)]:
            try:
                st = os.stat(path)
            except OSError:
                continue
            h.update(f"{os.path.relpath(path, dist.root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _files_under(directory: str) -> list[str]:
    """Source files in a package directory, never through a link out of it."""
    found: list[str] = []
    for here, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += (os.path.join(here, f) for f in sorted(files) if f.endswith((".py", ".pyi")))
    return found


@lru_cache(maxsize=None)
def _requires_torch(info: str) -> bool:
    try:
        with open(os.path.join(info, "METADATA"), encoding="utf-8", errors="replace") as f:
            head = f.read(200_000).partition("\n\n")[0]
    except OSError:
        return True
    name = re.search(r"^Name:\s*(\S+)", head, re.M)
    if name and _normalized(name.group(1)) == "torch":
        return True
    return any(_normalized(req) in _BUILT_ON_TORCH
               for req in re.findall(r"^Requires-Dist:\s*([A-Za-z0-9_.-]+)", head, re.M))


_BUILT_ON_TORCH = frozenset({"torch", "transformers", "diffusers", "timm", "peft", "accelerate",
                             "lightning", "pytorch_lightning", "sentence_transformers"})


def module_file(root: str, module: str) -> Optional[str]:
    """The source file of `module` under sys.path entry `root` (a package's
    `__init__.py`), or None; a namespace package's directory has none."""
    base = os.path.join(root, *module.split("."))
    for candidate in (os.path.join(base, "__init__.py"), base + ".py",
                      os.path.join(base, "__init__.pyi"), base + ".pyi"):
        if os.path.isfile(candidate):
            return candidate
    return None


# -- reading them with astroid ------------------------------------------------------------

class _OutOfTime(Exception):
    """The time budget ran out in the middle of a name's lookup."""


def _heavy_by_name(qualified: str) -> bool:
    if qualified in HEAVY_TYPES or qualified in KNOWN_HEAVY_TYPES:
        return True
    return (qualified.startswith("torch.nn.") and qualified.count(".") == 2
            and qualified.rsplit(".", 1)[1][:1].isupper())


class Reader:
    """Resolves names through installed source with astroid: a module is parsed at most
    once, without astroid's transforms (they infer, which builds torch: seconds per class),
    and a class's ancestors are followed by their qualified names, stopping at heavy types
    known by name rather than reading torch."""

    def __init__(self) -> None:
        from astroid.builder import AstroidBuilder
        from astroid.manager import AstroidManager

        class Builder(AstroidBuilder):
            # Nothing is inferred while parsing: instance attributes and star imports
            # (followed on demand, below) would otherwise build every module they touch.
            def delayed_assattr(self, node: Any) -> None:
                return None

            def add_from_names_to_locals(self, node: Any, *rest: Any) -> None:  # astroid 3 and 4
                if node.names[0][0] != "*":
                    super().add_from_names_to_locals(node, *rest)

        self._builder = Builder(AstroidManager(), apply_transforms=False)
        self._modules: dict[str, Optional[nodes.Module]] = {}
        self._verdicts: dict[str, str] = {}
        self._texts: dict[str, Optional[bytes]] = {}  # see _might_define
        self._text_bytes = 0
        self._stars: dict[str, list[str]] = {}  # module -> the modules it star-imports
        # qualified name -> (depth it was looked up at, `_definition`'s answer)
        self._definitions: dict[str, tuple[int, Optional[tuple[str, Any]]]] = {}
        self._looking: set[str] = set()  # `_definition`s under way (cycles of star imports)
        self._cut = 0  # how many lookups met one under way: their answers are not kept
        self._root = ""
        self._deadline = float("inf")
        self.asked = 0
        self.seconds = 0.0

    def verdict(self, qualified: str, dist: Distribution,
                deadline: float = float("inf")) -> Optional[str]:
        """The verdict on `qualified`; None when the CPU time `deadline`
        (`time.process_time()`) passed before it was known."""
        started = time.process_time()
        self.asked += 1
        self._root = dist.root
        self._deadline = deadline
        try:
            return self._verdict(qualified, 0)
        except _OutOfTime:
            self._verdicts.clear()  # some may be the cycle guard's NOTHING, never judged
            return None
        except Exception as e:  # noqa: BLE001 - a package's odd source costs its verdict, not the run
            log.info("installed types: %s not read: %s: %s", qualified, type(e).__name__, e)
            return NOTHING
        finally:
            self.seconds += time.process_time() - started

    def _in_time(self) -> None:
        if time.process_time() > self._deadline:
            raise _OutOfTime

    def _verdict(self, qualified: str, depth: int) -> str:
        if qualified in _CACHES:
            return CACHE
        if _heavy_by_name(qualified):
            return HEAVY
        if qualified in KNOWN_HEAVY_FACTORIES:
            return FACTORY
        if qualified.partition(".")[0] in _NOT_READ or depth > _MAX_DEPTH:
            return NOTHING
        if qualified not in self._verdicts:
            self._verdicts[qualified] = NOTHING  # guards cycles
            self._verdicts[qualified] = self._judge(qualified, depth)
        return self._verdicts[qualified]

    def _judge(self, qualified: str, depth: int) -> str:
        from astroid import nodes

        found = self._definition(qualified, depth)
        if found is None:
            return FACTORY if self._heavy_constructor(qualified, depth) else NOTHING
        canonical, node = found
        if canonical != qualified:
            return self._verdict(canonical, depth + 1)
        if isinstance(node, nodes.ClassDef):
            return HEAVY if any(self._verdict(b, depth + 1) == HEAVY
                                for b in self._bases(node)) else NOTHING
        if isinstance(node, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            if self._applies_cache(node):
                return CACHE
            if self._returns_heavy(node, depth):
                return FACTORY
        if isinstance(node, nodes.AssignName) and isinstance(node.parent, nodes.Assign):
            value = node.parent.value
            if isinstance(value, nodes.Call) and self._qualify(value.func) in _CACHES:
                return CACHE  # `cache = functools.lru_cache(maxsize=None)`
        return NOTHING

    def _heavy_constructor(self, qualified: str, depth: int) -> bool:
        """`Model.from_pretrained`: a classmethod of a heavy class (or of its bases) that
        returns an instance of the class it is called on (`-> Self`, a TypeVar, or
        `cls(...)`)."""
        from astroid import nodes

        owner, _, method = qualified.rpartition(".")
        if not owner or self._verdict(owner, depth + 1) != HEAVY:
            return False
        todo, seen = [owner], set()
        while todo and len(seen) < _MAX_DEPTH:
            name = todo.pop(0)
            if name in seen or name.partition(".")[0] in _NOT_READ:
                continue
            seen.add(name)
            found = self._definition(name, depth + 1)
            while found is not None and found[1] is None:  # a re-export
                name = found[0]
                found = self._definition(name, depth + 1)
            if found is None or not isinstance(found[1], nodes.ClassDef):
                continue
            cls = found[1]
            for node in cls.locals.get(method, []):
                if isinstance(node, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                    return node.type == "classmethod" and self._returns_own_class(node)
            todo.extend(self._bases(cls))
        return False

    def _returns_own_class(self, fn: Any) -> bool:
        from astroid import nodes

        ann = fn.returns
        if ann is not None:
            if self._qualify(ann) in ("typing.Self", "typing_extensions.Self"):
                return True
            if isinstance(ann, nodes.Name):  # `-> ModelT`, a TypeVar bound to the class
                return any(isinstance(d, nodes.AssignName) and isinstance(d.parent, nodes.Assign)
                           and isinstance(d.parent.value, nodes.Call)
                           and self._qualify(d.parent.value.func) in ("typing.TypeVar", "typing_extensions.TypeVar")
                           for d in ann.root().locals.get(ann.name, []))
            return False
        cls_name = fn.args.args[0].name if fn.args.args else "cls"
        made: set[str] = set()
        for node in fn.nodes_of_class((nodes.Assign, nodes.Return)):
            if node.scope() is not fn or node.value is None:
                continue
            value = node.value
            builds = (isinstance(value, nodes.Call) and isinstance(value.func, nodes.Name)
                      and value.func.name == cls_name)
            if isinstance(node, nodes.Assign):
                if builds:
                    made.update(t.name for t in node.targets if isinstance(t, nodes.AssignName))
            elif builds or (isinstance(value, nodes.Name) and value.name in made):
                return True
        return False

    # -- modules and names --------------------------------------------------------------
    def _module(self, name: str) -> Optional[nodes.Module]:
        if name not in self._modules:
            self._modules[name] = None
            path = self._file(name)
            if path is not None and os.path.getsize(path) <= _MAX_FILE_BYTES:
                try:
                    self._modules[name] = self._builder.file_build(path, name)
                except Exception as e:  # noqa: BLE001 - unparsable or undecodable source: unknown
                    log.info("installed types: cannot read %s: %s", path, e)
        return self._modules[name]

    def _file(self, module: str) -> Optional[str]:
        owner = distribution_of(module.partition(".")[0])  # a base may live in another package
        return module_file(owner.root if owner is not None else self._root, module)

    def _definition(self, qualified: str, depth: int) -> Optional[tuple[str, Any]]:
        """(qualified name where it is defined, its node) for a class, function or
        assigned name; following imports, re-exports, aliases and star imports. Each
        name is looked up once (again only nearer the start, with more depth left), so
        star imports in diamonds cost a lookup per module, not one per way through them."""
        self._in_time()
        known = self._definitions.get(qualified)
        if known is not None and (known[1] is not None or known[0] <= depth):
            return known[1]
        if qualified in self._looking:
            self._cut += 1  # the lookup under way sees everything this one would
            return None
        self._looking.add(qualified)
        cut = self._cut
        try:
            found = self._lookup(qualified, depth)
        finally:
            self._looking.discard(qualified)
        if found is not None or self._cut == cut:  # not an answer made short by a cycle
            self._definitions[qualified] = (depth, found)
        return found

    def _lookup(self, qualified: str, depth: int) -> Optional[tuple[str, Any]]:
        from astroid import nodes

        module_name, _, name = qualified.rpartition(".")
        module = self._module(module_name) if module_name else None
        if module is None or depth > _MAX_DEPTH:
            return None
        for node in reversed(module.locals.get(name, [])):
            if isinstance(node, (nodes.ClassDef, nodes.FunctionDef, nodes.AsyncFunctionDef)):
                return qualified, node
            if isinstance(node, nodes.ImportFrom):
                target = self._import_target(module, node, name)
                if target and target != qualified:
                    return target, None
            if isinstance(node, nodes.AssignName) and isinstance(node.parent, nodes.Assign):
                value = node.parent.value
                if isinstance(value, (nodes.Name, nodes.Attribute)):
                    target = self._qualify(value)
                    if target and target != qualified:
                        return target, None
                return qualified, node
            if isinstance(node, nodes.AssignName):  # `X: T = ...`, a loop variable: a value
                return qualified, node
        if self._file(qualified) is not None:
            return None  # a submodule: not a class nor a function, and no star import to scan
        # `from .models import *`, also under `if TYPE_CHECKING:` (lazy packages)
        for node in module.nodes_of_class(nodes.ImportFrom):
            if node.names[0][0] == "*" and node.scope() is module:
                base = module.relative_to_absolute_name(node.modname, node.level)
                if not self._might_define(base, name):
                    continue
                found = self._definition(f"{base}.{name}", depth + 1)
                if found is not None:
                    return found
        return None

    def _might_define(self, module: str, name: str) -> bool:
        """Does `module`'s text, or that of a module it star-imports (at most `_MAX_DEPTH`
        star imports away), name `name`? A lazy package star-imports hundreds of modules:
        only those on the way to the name are parsed, and each file is read once. Breadth
        first, each module once, at its nearest: diamonds of star imports cost a visit per
        module, not one per way through them."""
        wanted = name.encode()
        seen = {module}
        layer = [module]
        for _ in range(_MAX_DEPTH + 1):
            following: list[str] = []
            for current in layer:
                self._in_time()
                text = self._text(current)
                if text is None:
                    continue
                if wanted in text:
                    return True
                for target in self._star_targets(current, text):
                    if target not in seen:
                        seen.add(target)
                        following.append(target)
            layer = following
        return False

    def _star_targets(self, module: str, text: bytes) -> list[str]:
        """The modules `module` star-imports (`from .x import *`), from its text."""
        if module not in self._stars:
            package = module if (self._file(module) or "").endswith(("__init__.py", "__init__.pyi")) \
                else module.rpartition(".")[0]
            targets = []
            for dots, target in _STAR_IMPORT.findall(text):
                base = package
                for _ in range(len(dots) - 1):
                    base = base.rpartition(".")[0]
                full = (f"{base}.{target.decode()}" if base else target.decode()) if dots else target.decode()
                if full.strip("."):
                    targets.append(full.rstrip("."))
            self._stars[module] = targets
        return self._stars[module]

    def _text(self, module: str) -> Optional[bytes]:
        if module in self._texts:
            return self._texts[module]
        try:
            with open(self._file(module) or "", "rb") as f:
                text: Optional[bytes] = f.read(_MAX_FILE_BYTES + 1)
        except OSError:
            text = None
        if self._text_bytes < _TEXTS_KEPT:  # past that, read again when asked
            self._texts[module] = text
            self._text_bytes += len(text or b"")
        return text

    @staticmethod
    def _import_target(module: nodes.Module, node: Any, name: str) -> Optional[str]:
        base = module.relative_to_absolute_name(node.modname, node.level)
        for original, alias in node.names:
            if (alias or original) == name:
                return f"{base}.{original}"
        return None

    def _qualify(self, expr: Any) -> Optional[str]:
        """A dotted name as written in a module, qualified through that module's imports
        (`nn.Module` -> `torch.nn.Module`)."""
        from astroid import nodes

        parts = []
        while isinstance(expr, nodes.Attribute):
            parts.append(expr.attrname)
            expr = expr.expr
        if not isinstance(expr, nodes.Name):
            return None
        module = expr.root()
        head = expr.name
        for node in module.locals.get(head, []):
            if isinstance(node, nodes.ImportFrom):
                target = self._import_target(module, node, head)
                if target:
                    return ".".join([target, *reversed(parts)])
            if isinstance(node, nodes.Import):
                for original, alias in node.names:
                    if alias == head:
                        return ".".join([original, *reversed(parts)])
                    if alias is None and original.partition(".")[0] == head:
                        return ".".join([head, *reversed(parts)])
            if isinstance(node, (nodes.ClassDef, nodes.FunctionDef, nodes.AssignName)):
                return ".".join([module.name, head, *reversed(parts)])
        return None

    def _bases(self, cls: nodes.ClassDef) -> list[str]:
        return [q for q in map(self._qualify, cls.bases) if q]

    # -- what a function does -------------------------------------------------------------
    def _annotation_names(self, ann: Any) -> list[str]:
        """`X`, `X | None`, `Optional[X]`, `Union[X, Y]` -> qualified X (and Y)."""
        from astroid import nodes

        if ann is None:
            return []
        if isinstance(ann, nodes.Const) and isinstance(ann.value, str):
            return []  # a string annotation: its names are not bound at runtime here
        if isinstance(ann, nodes.BinOp) and ann.op == "|":
            return self._annotation_names(ann.left) + self._annotation_names(ann.right)
        if isinstance(ann, nodes.Subscript):
            if self._qualify(ann.value) in ("typing.Optional", "typing.Union"):
                items = ann.slice.elts if isinstance(ann.slice, nodes.Tuple) else [ann.slice]
                return [q for item in items for q in self._annotation_names(item)]
            return []
        q = self._qualify(ann)
        return [q] if q else []

    def _returns_heavy(self, fn: Any, depth: int) -> bool:
        from astroid import nodes

        if any(self._verdict(q, depth + 1) == HEAVY for q in self._annotation_names(fn.returns)):
            return True
        if fn.returns is not None:
            return False  # annotated with something else: believed
        made: dict[str, bool] = {}
        for node in fn.nodes_of_class((nodes.Assign, nodes.Return)):
            if node.scope() is not fn or node.value is None:
                continue
            value = node.value
            heavy = isinstance(value, nodes.Call) and self._call_heavy(value, depth)
            if isinstance(node, nodes.Assign):
                for target in node.targets:
                    if isinstance(target, nodes.AssignName):
                        made[target.name] = made.get(target.name, False) or heavy
            elif heavy or (isinstance(value, nodes.Name) and made.get(value.name)):
                return True
        return False

    def _call_heavy(self, call: Any, depth: int) -> bool:
        q = self._qualify(call.func)
        return q is not None and self._verdict(q, depth + 1) in (HEAVY, FACTORY)

    def _applies_cache(self, fn: Any) -> bool:
        """A decorator whose body applies `functools.lru_cache`/`cache`: called on the
        function it wraps, or decorating a nested function it returns."""
        from astroid import nodes

        for statement in fn.body:  # not its own decorators: those make it cached
            for node in statement.nodes_of_class((nodes.Call, nodes.FunctionDef)):
                if isinstance(node, nodes.Call):
                    func = node.func.func if isinstance(node.func, nodes.Call) else node.func
                    if self._qualify(func) in _CACHES:
                        return True
                elif node.decorators is not None:
                    for d in node.decorators.nodes:
                        if self._qualify(d.func if isinstance(d, nodes.Call) else d) in _CACHES:
                            return True
        return False
