"""A process that imports torch once and forks one fresh child per verifier run.

`import torch` is most of what a verifier run costs on the CPU (about 1 s of the 1.5-2 s a
scenario takes); every run still gets a process of its own, forked from one that has
imported torch and retainlint's verifier and has run nothing else - no model, no torch
operation, no thread pool - so what a run leaves behind dies with its process.

Forking is used only where it is safe: a torch build without GPU support, or `--device cpu`.
A CUDA context does not survive fork, so a run that may use CUDA gets a fresh interpreter
(`python -m retainlint.verify.child`), as without this server.

Protocol, one JSON object a line: the server first writes `{"fork": true|false}`; then, for
each request `{"args": [...], "log": PATH, "timeout": S}` on its stdin, it forks, runs
`child.main(args)` in the child (stdout and stderr to PATH) and writes `{"status": N}` (the
child's exit status, or null when it ran past its timeout and was killed).
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import time


def _can_fork(device: str) -> bool:
    if not hasattr(os, "fork"):
        return False
    import torch

    no_gpu_build = torch.version.cuda is None and getattr(torch.version, "hip", None) is None
    return device == "cpu" or no_gpu_build


def _run_in_child(request: dict) -> None:
    """In the forked child: never returns to the server's loop."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        from retainlint.verify import child

        code = child.main(request["args"])
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # the log keeps the traceback; the parent reports "no result"
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def _wait(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.01)


def serve(device: str) -> int:
    fork = _can_fork(device)
    if fork:
        # what every run imports, so that no child pays for it again
        from retainlint.verify import child, holders, models, probe, runtime  # noqa: F401
        gc.collect()
    print(json.dumps({"fork": fork}), flush=True)
    if not fork:
        return 0
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _run_in_child(request)
        print(json.dumps({"status": _wait(pid, float(request["timeout"]))}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1] if len(sys.argv) > 1 else "auto"))
