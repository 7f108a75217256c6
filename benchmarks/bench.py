"""Benchmark retainlint against other Python linters on the same real files.

    python benchmarks/bench.py                          # vLLM 0.33.0 + transformers 5.23.0
    python benchmarks/bench.py --corpus vllm==0.33.0 --sample 162 --tools all
    python benchmarks/bench.py --path DIR --tools retainlint --runs 1   # any tree

Corpora are the .py files of pinned PyPI releases (scripts/corpus.py caches them outside
the repository). Every other tool gets a virtual environment of its own under the cache
(RETAINLINT_BENCH, default ~/.cache/retainlint-bench); a tool that will not install is
skipped with a note. Figures: wall seconds (median of --runs), files per second, peak RSS
of the largest process, and the ratio to retainlint cold. Machines are noisy: compare the
ratios within one run, not seconds across runs."""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts"))
import corpus  # noqa: E402 - the fetcher lives in scripts/

BENCH = Path(os.environ.get("RETAINLINT_BENCH", Path.home() / ".cache" / "retainlint-bench"))
SEMGREP_RULES = HERE / "semgrep-rules.yml"
DEFAULT_CORPORA = ["vllm==0.33.0", "transformers==5.23.0"]

# Peak RSS of the command's largest process, read from the kernel by a tiny wrapper.
_MEASURE = ("import resource, subprocess, sys\n"
            "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.DEVNULL).returncode\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)\n")


@dataclass
class Tool:
    name: str
    package: Optional[str]  # installed into its own venv; None: retainlint from this checkout
    command: Callable[[Path, Path], list[str]]  # (venv bin dir, corpus dir) -> argv
    note: str = ""
    # Run, not timed, before each timed run (the cache filled under other settings).
    before: Optional[Callable[[Path, Path], list[str]]] = None
    key: str = ""  # what --tools names it by (default: the first word of its name)


def _retainlint(*extra: str) -> Callable[[Path, Path], list[str]]:
    return lambda bin_dir, tree: [sys.executable, "-m", "retainlint", "check", "--exit-zero",
                                  "--statistics", *extra, str(tree)]


def tools(cache_dir: Path) -> list[Tool]:
    cached = ("--cache-dir", str(cache_dir))
    return [
        Tool("retainlint cold", None, _retainlint("--no-cache"), note="all rules, no cache"),
        Tool("retainlint warm", None, _retainlint(*cached), note="cache populated"),
        Tool("retainlint 1 changed", None, _retainlint(*cached), note="one file edited, warm cache"),
        # The cache keeps results per settings side by side, whatever the output format:
        # a run under other settings, or in another format, leaves the next one warm.
        Tool("retainlint warm after --select", None, _retainlint(*cached), key="cache",
             before=_retainlint(*cached, "--select", "RL301"),
             note="a run with --select RL301 just before"),
        Tool("retainlint warm after json", None, _retainlint(*cached), key="cache",
             before=_retainlint(*cached, "--output-format", "json"),
             note="a run with --output-format json just before"),
        Tool("retainlint --diff warm", None, _retainlint(*cached, "--diff"), key="cache",
             note="only files with a fix to apply are parsed"),
        Tool("ruff B019", "ruff", lambda b, t: [str(b / "ruff"), "check", "--no-cache",
                                                 "--select", "B019", "--exit-zero", str(t)]),
        Tool("semgrep", "semgrep", lambda b, t: [str(b / "semgrep"), "scan", "--config",
                                                 str(SEMGREP_RULES), "--metrics", "off",
                                                 "--disable-version-check", "--quiet", str(t)],
             note="pattern rules equivalent to phase 1"),
        Tool("pylint W1518 -j2", "pylint", lambda b, t: [str(b / "pylint"), "-j", "2",
                                                         "--disable=all", "--enable=W1518",
                                                         "--recursive=y", "--exit-zero", str(t)]),
        Tool("Fixit", "fixit", lambda b, t: [str(b / "fixit"), "lint", str(t)],
             note="built-in rules"),
        Tool("TorchFix", "torchfix", lambda b, t: [str(b / "torchfix"), str(t)]),
    ]


def venv_bin(package: str) -> Optional[Path]:
    """The tool's own venv (created on first use); None if it will not install."""
    venv = BENCH / "venvs" / package
    bin_dir = venv / "bin"
    if (venv / ".complete").exists():
        return bin_dir
    shutil.rmtree(venv, ignore_errors=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(bin_dir / "pip"), "install", "--quiet", package], check=True,
                       timeout=900)
    except (subprocess.SubprocessError, OSError):
        return None
    (venv / ".complete").touch()
    return bin_dir


def measure(argv: list[str]) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in MB of the largest process, exit code)."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _MEASURE, *argv], capture_output=True, text=True)
    wall = time.perf_counter() - start
    rss_kb, code = out.stdout.split()
    return wall, int(rss_kb) // 1024, int(code)


def byte_compile_retainlint() -> None:
    """Compile retainlint's modules as pip does when it installs a package. An editable
    install run with PYTHONDONTWRITEBYTECODE set (as on some CI machines) would otherwise
    compile them from source on every run: a third of a second of each warm run."""
    for package in ("retainlint", "retainlint.rules"):  # the rules live in a folder apart
        spec = importlib.util.find_spec(package)
        for directory in spec.submodule_search_locations if spec else ():
            compileall.compile_dir(directory, quiet=2)


def sample(tree: Path, n: int, into: Path) -> Path:
    """Every k-th .py file of `tree` (sorted paths), package structure kept."""
    files = sorted(tree.rglob("*.py"))
    step = max(1, len(files) // n)
    for f in files[::step][:n]:
        target = into / f.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, target)
    return into


def bench_tree(tree: Path, chosen: set[str], runs: int, work: Path) -> list[list[str]]:
    files = sum(1 for _ in tree.rglob("*.py"))
    cache_dir = work / "retainlint-cache"
    shutil.rmtree(cache_dir, ignore_errors=True)
    cached = ("--cache-dir", str(cache_dir))
    edited = sorted(tree.rglob("*.py"))[files // 2] if files else None
    original = edited.read_bytes() if edited else b""
    rows, cold = [], None
    try:
        for tool in tools(cache_dir):
            key = tool.key or tool.name.split()[0].lower()
            if key not in chosen and tool.name.lower() not in chosen:
                continue
            bin_dir = Path(sys.executable).parent
            if tool.package is not None:
                found = venv_bin(tool.package)
                if found is None:
                    rows.append([tool.name, str(files), "-", "-", "-", "-", "skipped: did not install"])
                    continue
                bin_dir = found
            if tool.name == "retainlint warm" or tool.key == "cache":
                measure(_retainlint(*cached)(bin_dir, tree))  # populate the cache
            times, peak, code = [], 0, 0
            for i in range(runs):
                if tool.before is not None:
                    measure(tool.before(bin_dir, tree))
                if tool.name == "retainlint 1 changed" and edited is not None:
                    edited.write_bytes(original + f"\n# edited {time.time()} {i}\n".encode())
                wall, rss, code = measure(tool.command(bin_dir, tree))
                times.append(wall)
                peak = max(peak, rss)
            wall = statistics.median(times)
            if tool.name == "retainlint cold":
                cold = wall
            note = tool.note + (f" (exit {code})" if code not in (0, 1) else "")
            rows.append([tool.name, str(files), f"{wall:.2f}", f"{files / wall:.0f}", str(peak),
                         f"{wall / cold:.2f}" if cold else "-", note.strip()])
    finally:
        if edited is not None:
            edited.write_bytes(original)
    return rows


def table(title: str, rows: list[list[str]]) -> str:
    header = ["tool", "files", "wall s (median)", "files/s", "peak RSS MB", "x retainlint cold",
              "note"]
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", help="pinned requirement, e.g. vllm==0.33.0")
    parser.add_argument("--path", action="append", type=Path, help="a local tree instead")
    parser.add_argument("--sample", type=int, help="only N files of each corpus")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per tool (median)")
    parser.add_argument("--tools", default="retainlint,cache,ruff,semgrep,pylint",
                        help="comma-separated: retainlint (cold, warm, one file changed), "
                             "cache (warm after other settings or format, --diff warm), "
                             "ruff, semgrep, pylint, fixit, torchfix, or all")
    args = parser.parse_args(argv)
    chosen = {t.strip().lower() for t in args.tools.split(",")}
    if "all" in chosen:
        chosen = {"retainlint", "cache", "ruff", "semgrep", "pylint", "fixit", "torchfix"}
    trees = [(str(p), p.resolve()) for p in args.path or []]
    if not trees:
        trees = [(req, corpus.fetch(req)) for req in args.corpus or DEFAULT_CORPORA]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs\n")
    if chosen & {"retainlint", "cache"}:
        byte_compile_retainlint()
    with tempfile.TemporaryDirectory() as tmp:
        for title, tree in trees:
            work = Path(tmp) / title.replace("/", "_")
            work.mkdir(parents=True)
            # a copy: the "1 changed" run edits a file, and the corpus cache stays pristine
            copy = (sample(tree, args.sample, work / "tree") if args.sample
                    else Path(shutil.copytree(tree, work / "tree")))
            if args.sample:
                title += f" ({args.sample}-file sample)"
            print(table(title, bench_tree(copy, chosen, args.runs, work)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
