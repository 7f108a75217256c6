"""The shape of the package: no import cycle among its modules, each layer imports only
layers below it, and the layers that decide what to parse never load libcst."""

import ast
import subprocess
import sys
from pathlib import Path

import retainlint
import retainlint.rules

PACKAGE = Path(retainlint.__file__).parent
RULES = Path(retainlint.rules.__path__[0])


def _modules() -> dict[str, Path]:
    found = {}
    for base, prefix in ((PACKAGE, "retainlint"), (RULES, "retainlint.rules")):
        for path in base.rglob("*.py"):
            parts = path.relative_to(base).with_suffix("").parts
            if base == PACKAGE and parts[:1] == ("rules",):
                continue  # a development checkout's link, if any
            name = ".".join((prefix, *parts)).removesuffix(".__init__")
            found[name] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules `path` imports, at any depth, but under `if TYPE_CHECKING:`."""
    found = set()

    def visit(node):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return {m for m in found if m in modules}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, modules) - {name} for name, path in modules.items()}


def test_no_import_cycle():
    graph = _graph()
    cycles = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def walk(name, path):
        state[name] = 1
        for target in sorted(graph[name]):
            if target == "retainlint" or target.count(".") < name.count(".") and name.startswith(target + "."):
                continue  # a package's own __init__ (the version), not a cycle of modules
            if state.get(target) == 1:
                cycles.append(path[path.index(target):] + [target])
            elif target not in state:
                walk(target, path + [target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])
    assert cycles == []


_NO_PREFILTER = '''\
from retainlint.core.finding import Severity
from retainlint.analysis.rule import Rule


class Forgotten(Rule):
    name = "forgotten"
    summary = "a rule added without its prefilter"
    docs = ""
'''


def _run_with_extra_rule(tmp_path, source: str, *args: str) -> subprocess.CompletedProcess:
    """`retainlint check` with one more rule module (rl998_forgotten.py) beside the real ones."""
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "rl998_forgotten.py").write_text(source)
    (tmp_path / "m.py").write_text("x = 1\n")
    probe = ("import sys, retainlint.rules as r\n"
             f"r.__path__.append({str(extra)!r})\n"
             "from retainlint.cli import main\n"
             f"main(['check', '--no-cache', *{list(args)!r}])\n")
    return subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)


def test_a_rule_without_its_prefilter_is_refused(tmp_path):
    done = _run_with_extra_rule(tmp_path, _NO_PREFILTER, "--select", "RL998", "m.py")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "retainlint: error: rule RL998 (forgotten) has no prefilter: add "
        "rules/prefilters/rl998.py and set `prefilter = ...` on the rule"]
    assert "All checks passed" not in done.stdout


# Lowest first: a module imports only from its own layer and the layers before it.
LAYERS = ["core", "project", "rules.prefilters", "analysis", "rules", "engine", "output",
          "integrations", "top"]


def _layer(module: str) -> int:
    rest = module.removeprefix("retainlint").lstrip(".")
    for i, layer in reversed(list(enumerate(LAYERS))):
        if rest == layer or rest.startswith(layer + "."):
            return i
    return LAYERS.index("top")  # cli, docs, __main__, verify


def test_each_layer_imports_only_layers_below_it():
    upward = sorted(f"{name} -> {target}" for name, targets in _graph().items()
                    for target in targets
                    if target != "retainlint" and _layer(target) > _layer(name))
    assert upward == []


LIBCST_FREE = ["retainlint.core", "retainlint.project", "retainlint.rules.prefilters",
               "retainlint.output", "retainlint.integrations", "retainlint.engine.registry",
               "retainlint.engine.discover", "retainlint.engine.cache", "retainlint.engine.runner"]


def test_the_layers_that_decide_what_to_parse_never_load_libcst():
    names = sorted(m for m in _modules() if any(m == p or m.startswith(p + ".") for p in LIBCST_FREE))
    probe = "import importlib, sys\n" + "".join(f"importlib.import_module({n!r})\n" for n in names) \
        + "print([m for m in sys.modules if m == 'libcst' or m.startswith('libcst.')][:3])\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert len(names) > 40  # every module of those layers was imported


def test_no_rule_imports_another_rule():
    """A check is one module: what two checks share lives in `analysis` or `project`, so
    switching one check off or changing it never changes another."""
    def rule(name: str) -> str | None:
        """The rule a module belongs to: a rule module, or a module of a rule's package."""
        parts = name.split(".")
        if name.startswith("retainlint.rules.") and parts[2] != "prefilters":
            return parts[2]
        return None
    crossing = sorted(f"{name} -> {target}" for name, targets in _graph().items() if rule(name)
                      for target in targets if rule(target) and rule(target) != rule(name))
    assert crossing == []


MAX_LINES = 800


def test_no_module_exceeds_the_line_limit():
    """A module a reader can hold in mind: the larger ones are split by concern (a rule
    into a package of its parts)."""
    long = sorted(f"{name}: {n} lines" for name, path in _modules().items()
                  if (n := len(path.read_text().splitlines())) > MAX_LINES)
    assert long == []


def test_each_rule_summary_is_read_from_its_source_as_its_class_has_it():
    """A run answered from the cache prints the summaries without importing the rules."""
    from retainlint.engine.registry import all_rules, catalog, summary_of

    assert {r.code: (r.name, r.summary) for r in all_rules()} == {
        code: (name, summary_of(code)) for code, name in catalog()}
