"""Hostile but valid inputs: how long `retainlint check --no-cache` takes on each, next to
`ast.parse` of the same source (the floor any checker pays), and the ratio.

    python benchmarks/hostile.py                # full sizes
    python benchmarks/hostile.py --scale 0.01   # a quick look (the smoke test)

Inputs: one module dict literal of 100k entries; a 2 MB module of varied module-level
shapes (dict and list literals, caches keyed by objects, weak maps, hooks, classes,
decorated functions, handlers); a package of 61 modules star-importing each other in
diamonds, installed beside a project that subclasses its classes (read through astroid).
Numbers for a person to read, not a test: machines are noisy, and each check includes the
start of a process (about a second), which dominates at small sizes."""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

# A module container keyed by a model (RL301 reports it), so the rules run on the big dict.
_DICT_HEAD = ("import torch\n\n_order: dict[torch.nn.Module, int] = {}\n\n\n"
              "def remember(model: torch.nn.Module) -> None:\n    _order[model] = 1\n\n\n")


def big_dict(entries: int) -> str:
    """One module-level dict literal with `entries` entries."""
    body = "".join(f"    'key_{i}': ({i}, 'v{i}'),\n" for i in range(entries))
    return _DICT_HEAD + "TABLE = {\n" + body + "}\n"


_SHAPES: list[Callable[[int], str]] = [
    lambda i: f"D{i} = {{'a': {i}, 'b': [{i}, {i + 1}], 'c': {{'d': {i}}}}}\n",
    lambda i: f"L{i} = [{i}, {i + 1}, ({i}, 'x')]\n",
    lambda i: f"_memo{i} = {{}}\n\n\ndef get{i}(key):\n    if key not in _memo{i}:\n"
              f"        _memo{i}[key] = object()\n    return _memo{i}[key]\n",
    lambda i: f"_seen{i} = set()\n\n\ndef see{i}(obj):\n    _seen{i}.add(obj)\n",
    lambda i: f"_weak{i} = weakref.WeakKeyDictionary()\n\n\ndef tag{i}(obj):\n"
              f"    _weak{i}[obj] = {{'owner': obj, 'n': {i}}}\n",
    lambda i: f"@functools.lru_cache(maxsize=None)\ndef cached{i}(x):\n    return [x] * {i % 7 + 1}\n",
    lambda i: f"class Holder{i}:\n    registry = {{}}\n\n    def __init__(self, model):\n"
              f"        self.model = model\n        Holder{i}.registry[id(self)] = self\n"
              f"        torch._dynamo.convert_frame.register_bytecode_hook(self.hook)\n\n"
              f"    def hook(self, *a):\n        return self.model\n\n"
              f"    @functools.cache\n    def size(self):\n        return {i}\n",
    lambda i: f"log{i} = logging.getLogger(f'app.{{__name__}}.{i}')\n"
              f"log{i}.addHandler(logging.StreamHandler())\n",
    lambda i: f"atexit.register(print, {i})\n_fin{i} = weakref.finalize(object(), print, {i})\n",
    lambda i: f"CACHE[{i}] = {{'k': {i}}}\nREGISTRY.setdefault('k{i}', []).append({i})\n",
    lambda i: f"try:\n    import missing_{i}\nexcept ImportError as e{i}:\n    ERRORS.append(e{i})\n",
]
_VARIED_HEAD = ("import atexit\nimport functools\nimport gc\nimport logging\nimport weakref\n\n"
                "import torch\n\nCACHE = {}\nREGISTRY = {}\nERRORS = []\n\n")


def varied(size: int) -> str:
    """About `size` bytes of module-level code cycling through many shapes."""
    parts, total, i = [_VARIED_HEAD], len(_VARIED_HEAD), 0
    while total < size:
        text = _SHAPES[i % len(_SHAPES)](i) + "\n\n"
        parts.append(text)
        total += len(text)
        i += 1
    return "".join(parts)


def star_diamond(site: Path, modules: int) -> None:
    """An installed package (`diamond`, requiring torch, so it is read) of `modules`
    modules, each star-importing the four after it: every path through them is a way to
    a name, about 4**depth of them without memoising."""
    pkg = site / "diamond"
    pkg.mkdir(parents=True)
    for i in range(modules):
        imports = "".join(f"from diamond.m{j} import *\n" for j in range(i + 1, i + 5) if j < modules)
        (pkg / f"m{i}.py").write_text(imports + f"\n\nclass Base{i}:\n    pass\n")
    (pkg / "__init__.py").write_text("from diamond.m0 import *\n")
    info = site / "diamond-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: diamond\nVersion: 1.0\n"
                                   "Requires-Dist: torch\n")
    (info / "top_level.txt").write_text("diamond\n")


def diamond_project(modules: int) -> str:
    """A project using names the diamond never defines (each lookup walks it all)."""
    lines = ["import functools\n\nimport diamond\n\n"]
    for i in range(20):
        lines.append(f"class Model{i}(diamond.Missing{i}):\n    pass\n\n\n"
                     f"@functools.lru_cache(maxsize=None)\ndef load{i}(x):\n"
                     f"    return Model{i}()\n\n\n")
    return "".join(lines)


def _timed_check(tree: Path, env: dict[str, str], limit: float) -> float | None:
    """Seconds, or None past `limit`."""
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "retainlint", "check", "--no-cache",
                               "--exit-zero", "-j", "1", "."], cwd=tree, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=limit)
    except subprocess.TimeoutExpired:
        return None
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"retainlint failed on {tree}: {done.stderr}")
    return seconds


def _size(nbytes: int) -> str:
    return f"{nbytes / 1e6:.1f} MB" if nbytes >= 100_000 else f"{nbytes / 1e3:.0f} KB"


def _parse_seconds(source: str) -> float:
    started = time.perf_counter()
    ast.parse(source)
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the full sizes")
    ap.add_argument("--limit", type=float, default=900, help="seconds before a check is stopped")
    args = ap.parse_args()
    entries = max(10, int(100_000 * args.scale))
    size = max(2_000, int(2_000_000 * args.scale))
    modules = max(4, int(61 * min(1.0, args.scale * 10)))
    env = {**os.environ, "NO_COLOR": "1"}
    rows = []
    with tempfile.TemporaryDirectory(prefix="retainlint-hostile-") as tmp:
        root = Path(tmp)
        for name, source in ((f"module dict, {entries} entries", big_dict(entries)),
                             (f"varied shapes, {_size(len(varied(size)))}", varied(size))):
            tree = root / str(len(rows))
            tree.mkdir()
            (tree / "m.py").write_text(source)
            rows.append((name, len(source), _timed_check(tree, env, args.limit), _parse_seconds(source)))
        site, tree = root / "site", root / "diamond"
        star_diamond(site, modules)
        tree.mkdir()
        source = diamond_project(modules)
        (tree / "m.py").write_text(source)
        # A fresh cache home: the installed packages' facts are read, not remembered.
        path = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
        diamond_env = {**env, "PYTHONPATH": path, "XDG_CACHE_HOME": str(root / "cache")}
        rows.append((f"star-import diamond, {modules} modules", len(source),
                     _timed_check(tree, diamond_env, args.limit), _parse_seconds(source)))
    print("| input | bytes | retainlint check (s) | ast.parse (s) | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, nbytes, check, parse in rows:
        if check is None:
            print(f"| {name} | {nbytes} | > {args.limit:.0f} (stopped) | {parse:.4f} | - |")
        else:
            print(f"| {name} | {nbytes} | {check:.2f} | {parse:.4f} | {check / max(parse, 1e-6):.0f} |")


if __name__ == "__main__":
    main()
