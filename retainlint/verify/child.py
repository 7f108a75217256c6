"""One verifier run in a fresh process: `python -m retainlint.verify.child --scenario FILE
--module NAME --model M --device D --out RESULT.json`, or, for the user's own object,
`--target pkg.module:factory [--release METHOD] --path DIR` (DIR first on sys.path). On the
CPU the process is a child of `retainlint.verify.forkserver`, torch already imported.

Steps: import torch and the scenario (slow imports happen before the baseline), warm up
(build, exercise and drop a throwaway model), baseline, run `lifecycle(ctx)` (its frame dies
with it), collect, probe, then explain whatever survived. Only deterministic probes judge:
the target's weakref, its tracked storage bytes (cross-checked by a live-tensor scan) and,
on CUDA, `torch.cuda.memory_allocated()`. RSS is reported, never judged.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import sys
import time
import traceback


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _target(spec: str, release: str | None, path: str):
    """(module, lifecycle) for `pkg.module:factory`: build the object, call its release
    method (if named), drop it."""
    module_name, _, attr = spec.partition(":")
    sys.path.insert(0, path)
    module = importlib.import_module(module_name)
    factory = module
    for part in attr.split("."):
        factory = getattr(factory, part)

    def lifecycle(ctx):
        obj = factory()
        ctx.expect_freed(obj, spec)
        if release:
            getattr(obj, release)()

    return module, lifecycle


def _run_lifecycle(lifecycle, ctx) -> str | None:
    try:
        lifecycle(ctx)
    except BaseException:  # keep text only: a stored exception pins frames and the model
        return traceback.format_exc()
    finally:
        sys.last_type = sys.last_value = sys.last_traceback = None
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario")
    ap.add_argument("--module")
    ap.add_argument("--model")
    ap.add_argument("--target")
    ap.add_argument("--release")
    ap.add_argument("--path")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    result: dict = {"error": None}
    try:
        result.update(_measure(args))
    except BaseException:
        result["error"] = traceback.format_exc()
    with open(args.out, "w") as f:
        json.dump(result, f)
    return 0


def _measure(args) -> dict:
    from retainlint.verify import holders, probe
    from retainlint.verify.models import factory
    from retainlint.verify.runtime import Context

    t0 = time.perf_counter()
    import torch

    device = probe.choose_device(args.device, torch.cuda.is_available())
    kind = probe.choose_probe(device)
    if args.target:  # the user's own object: their factory builds it, nothing to warm up
        build = exercise = None
        module, lifecycle = _target(args.target, args.release, args.path)
    else:
        build, exercise = factory(args.model, device)
        module = _load(args.scenario, args.module)
        lifecycle = module.lifecycle
        # Warm-up: lazy imports, tokenizer, allocator pools, cuBLAS workspaces.
        warm = build()
        exercise(warm)
        del warm
    probe.collect()
    t_warm = time.perf_counter()
    base_cuda = probe.cuda_allocated(torch) if kind == "cuda_memory_allocated" else None
    base_rss = probe.rss_bytes()

    ctx = Context(build, exercise, device)
    # No automatic collection from here on: a cycle is freed only by our own collection,
    # never by chance, and nothing may collect between the measurements and the analysis.
    gc.disable()
    error = _run_lifecycle(lifecycle, ctx)
    trackers = ctx.trackers
    promptly = any(t.promptly for t in trackers)
    if not promptly:  # else judged as reference counting left it: a cycle is the bug
        probe.collect()
    t_run = time.perf_counter()

    alive = any(t.alive() for t in trackers)
    tracked = sum(t.retained_bytes() for t in trackers)
    target = sum(t.target_bytes for t in trackers)
    cuda = None
    if base_cuda is not None:
        cuda = max(0, probe.cuda_allocated(torch) - base_cuda)
    rss = probe.rss_bytes()
    frozen = gc.get_freeze_count()
    retained = cuda if kind == "cuda_memory_allocated" else tracked

    holder = None
    dead_id, dead_kind = None, None
    live = [t for t in trackers if t.live_object() is not None]
    if live:
        box = [live[0].live_object()]
        found = holders.find_path(box, skip=[ctx, trackers, live, module.__dict__.get("__builtins__")])
        if found is None and not frozen and not promptly:
            found = holders.explain_c_held(box)
        if found is None:
            dead_id, dead_kind = id(box[0]), holders.node_text(box[0])
        box.clear()
        holder = found
    del live

    gc.unfreeze()  # the scan cannot see frozen objects; collection stays disabled
    storages = {k: v for t in trackers for k, v in t.storages.items()}
    scanned = probe.scan_bytes(torch, storages)

    if holder is None and dead_id is not None:
        if frozen or promptly:
            if frozen:
                gc.freeze()  # explain_cycle unfreezes and reports the count itself
            holder = holders.explain_cycle(dead_id, dead_kind)
        if holder is None:
            holder = holders.Holder(f"no root path found to {dead_kind}", None, "not found")
    gc.enable()
    return {
        "device": device,
        "probe": kind,
        "targets": [{"label": t.label, "kind": t.kind, "bytes": t.target_bytes} for t in trackers],
        "target_bytes": target,
        "alive": alive,
        "retained_bytes": retained,
        "tracked_bytes": tracked,
        "scan_bytes": scanned,
        "cuda_bytes": cuda,
        "rss_delta_bytes": None if rss is None or base_rss is None else rss - base_rss,
        "frozen_objects": frozen,
        "judged": "before gc.collect() (promptly)" if promptly else "after gc.collect()",
        "holder": holder.as_dict() if holder is not None else None,
        "error": error,
        "seconds": {"warmup": round(t_warm - t0, 2), "run": round(t_run - t_warm, 2),
                    "total": round(time.perf_counter() - t0, 2)},
    }


if __name__ == "__main__":
    sys.exit(main())
