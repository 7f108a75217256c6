"""What is still held: weakref liveness, tracked tensor-storage bytes, a live-tensor scan,
and on CUDA `torch.cuda.memory_allocated()`.

Nothing here imports torch at module level; the functions that need it take the torch
module as an argument (or look it up in `sys.modules` when the caller already uses torch),
so the linter never pays for it.
"""

from __future__ import annotations

import gc
import os
import sys
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Optional

MiB = 1024 * 1024

# Verdict thresholds: the buggy run must retain at least this share of the target's bytes
# (a positive control), and the fixed run at most the tolerance.
REPRODUCED_SHARE = 0.90


def tolerance_bytes(target_bytes: int) -> int:
    """What counts as "about zero": max(1 MiB, 1 % of the target), for allocator noise on
    CUDA (workspaces, record_stream deferrals). On the CPU the tracked bytes are exact."""
    return max(MiB, target_bytes // 100)


# -- device and probe choice (pure: unit-tested without a GPU) -----------------------------
class DeviceError(RuntimeError):
    pass


def choose_device(requested: str, cuda_available: bool) -> str:
    """`auto` takes CUDA when there is one; `cuda` without one is an error, never a silent
    CPU run."""
    if requested == "auto":
        return "cuda" if cuda_available else "cpu"
    if requested == "cuda" and not cuda_available:
        raise DeviceError("--device cuda was asked for, but torch sees no CUDA device")
    if requested not in ("cpu", "cuda"):
        raise DeviceError(f"unknown device {requested!r}")
    return requested


def choose_probe(device: str) -> str:
    """The probe that judges retained bytes: on CUDA the caching allocator's count of live
    tensor bytes; on the CPU the tracked storages (RSS is never trustworthy: mmapped weights,
    glibc keeping freed memory)."""
    return "cuda_memory_allocated" if device == "cuda" else "tracked_storage"


# -- CUDA ------------------------------------------------------------------------------------
def cuda_allocated(torch: Any) -> int:
    """Live tensor bytes in the caching allocator over all devices, after synchronizing
    (pending kernels and frees land), clearing the cuBLAS workspaces (allocated by the first
    GEMM, they persist) and emptying the cache (so that nvidia-smi shows the same).
    `memory_reserved()`/nvidia-smi also count cached blocks and the context: not judged."""
    cuda = torch.cuda
    total = 0
    for index in range(cuda.device_count()):
        cuda.synchronize(index)
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()
    cuda.empty_cache()
    for index in range(cuda.device_count()):
        total += cuda.memory_allocated(index)
    return total


# -- tensors -----------------------------------------------------------------------------------
def _is_module(torch: Any, obj: Any) -> bool:
    return isinstance(obj, torch.nn.Module)


def storage_key(t: Any) -> tuple[tuple, int]:
    s = t.untyped_storage()
    return (t.device.type, t.device.index, s.data_ptr()), s.nbytes()


def tensors_of(torch: Any, obj: Any) -> list:
    """The tensors an object owns: a module's parameters and buffers, a tensor itself, or the
    tensor attributes of a plain object (and of the modules among them)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if _is_module(torch, obj):
        return list(obj.parameters()) + list(obj.buffers())
    out: list = []
    for value in getattr(obj, "__dict__", {}).values():
        if isinstance(value, torch.Tensor):
            out.append(value)
        elif _is_module(torch, value):
            out.extend(list(value.parameters()) + list(value.buffers()))
    return out


def describe(obj: Any) -> str:
    cls = type(obj)
    name = cls.__qualname__
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(obj, torch.Tensor):
            return f"{name}{tuple(obj.shape)}"
        if _is_module(torch, obj):
            return f"{name} (nn.Module)"
    return name


@dataclass
class Tracker:
    """Weak references to a target and to each of its tensors, with their storages."""

    label: str
    kind: str
    obj_id: int
    ref: Optional[weakref.ref]
    tensor_refs: list = field(default_factory=list)  # (weakref to tensor, storage key)
    storages: dict = field(default_factory=dict)  # storage key -> nbytes
    promptly: bool = False  # must be freed by reference counting alone, before any collection

    @classmethod
    def of(cls, obj: Any, label: str, promptly: bool = False) -> "Tracker":
        try:
            ref = weakref.ref(obj)
        except TypeError:
            ref = None
        tracker = cls(label=label, kind=describe(obj), obj_id=id(obj), ref=ref, promptly=promptly)
        torch = sys.modules.get("torch")
        if torch is not None:
            for t in tensors_of(torch, obj):
                key, nbytes = storage_key(t)
                tracker.tensor_refs.append((weakref.ref(t), key))
                tracker.storages[key] = nbytes
        return tracker

    @property
    def target_bytes(self) -> int:
        return sum(self.storages.values())

    def alive(self) -> bool:
        return self.ref is not None and self.ref() is not None

    def retained_bytes(self) -> int:
        keys = {key for r, key in self.tensor_refs if r() is not None}
        return sum(self.storages[k] for k in keys)

    def live_object(self) -> Any:
        """The target if alive, else the first of its tensors still alive (a cached output's
        autograd graph can keep parameters after the module died)."""
        if self.alive():
            return self.ref()
        for r, _ in self.tensor_refs:
            t = r()
            if t is not None:
                return t
        return None


def scan_bytes(torch: Any, storages: dict) -> int:
    """Cross-check: the bytes of tracked storages that any live tensor found by a
    `gc.get_objects()` scan still uses, counted once per storage. Blind to frozen objects:
    call `gc.unfreeze()` first."""
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for o in gc.get_objects():
            try:
                if not isinstance(o, torch.Tensor):
                    continue
                key, _ = storage_key(o)
            except Exception:
                continue
            if key in storages:
                seen.add(key)
    return sum(storages[k] for k in seen)


def rss_bytes() -> Optional[int]:
    """Resident set size: reported, never judged."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def collect() -> None:
    for _ in range(3):
        gc.collect()
