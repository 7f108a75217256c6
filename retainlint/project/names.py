"""Plain facts about names, shared by the project index and the rules without libcst
(the index and a run answered from the cache never import it)."""

from __future__ import annotations

import re

from typing import Optional

HEAVY_TYPES = frozenset(
    {
        "torch.Tensor",
        "torch.nn.Module",
        "torch.nn.modules.module.Module",
        "torch.nn.Parameter",
        "torch.nn.parameter.Parameter",
        "transformers.PreTrainedModel",
        "transformers.modeling_utils.PreTrainedModel",
    }
)

# Tensor types: heavy, but what one weighs is unknown (a scalar or a [b, L, L] mask).
TENSOR_TYPES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter",
                          "torch.nn.Buffer", "torch.nn.parameter.Buffer"})

TENSOR_FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "empty zeros ones full rand randn randint arange tensor as_tensor from_numpy "
        "empty_like zeros_like ones_like full_like rand_like randn_like empty_strided"
    ).split()
)


def absolute_import(module: str, is_package: bool, level: int, target: Optional[str]) -> str:
    """Resolve `from ..x import` relative to `module`."""
    if level == 0:
        return target or ""
    base = module.split(".") if module else []
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)] if level - 1 <= len(base) else []
    if target:
        base = [*base, target]
    return ".".join(base)


# Backports that give a standard module's API under another name (Python 2's
# `functools32`): a name imported from one means the standard one, so an
# `if PY2: ... else: from functools import lru_cache` binds the same thing either way.
BACKPORTS = {"functools32": "functools", "backports.functools_lru_cache": "functools"}


def standard_module(module: str) -> str:
    """`functools32` -> `functools`; any other module as it is."""
    for backport, standard in BACKPORTS.items():
        if module == backport or module.startswith(backport + "."):
            return standard + module[len(backport):]
    return module


# Annotations that wrap the type that matters: `Optional[X]`, `Union[X, Y]`.
UNION_WRAPPERS = frozenset({"typing.Optional", "typing.Union", "Optional", "Union"})


# Decorators that make a function not an instance method.
NOT_INSTANCE_DECORATORS = frozenset(
    {"staticmethod", "builtins.staticmethod", "classmethod", "builtins.classmethod"})

# Calls whose result holds their arguments as they are (a partial, a bound method, a
# container built from them).
WRAPPING_CALLS = frozenset(
    {"functools.partial", "functools.partialmethod", "types.MethodType", "tuple", "list",
     "dict", "set", "frozenset", "collections.namedtuple", "dataclasses.replace"}
)

# Calls whose result refers to their argument only weakly: it does not keep it alive.
WEAK_REFERENCES = frozenset({"weakref.ref", "weakref.proxy", "weakref.WeakMethod"})


def name_words(name: str) -> set[str]:
    """The words of an identifier, snake_case or CamelCase, lower-cased."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return {w for w in spaced.split("_") if w}


# Words that, as a part of a method or function name (split on `_`), release what they
# are called on or handed: `self.runner.shutdown()`, `free_cache(self.kv)` (release paths).
RELEASE_WORDS = frozenset(
    {
        "shutdown", "close", "cleanup", "release", "teardown", "free", "stop", "destroy",
        "terminate", "dispose", "unload", "offload", "clear", "reset", "delete", "del",
        "dealloc", "deallocate", "kill", "exit", "drop", "remove", "finalize", "unregister",
        "aclose",
    }
)
# Methods that move a model or tensor off the accelerator (`self.model.to("cpu")`).
OFFLOADS = frozenset({"cpu", "to"})


# What frees a part in place when called on it (`self.x.close()`) or handed it
# (`lora_adapter_free(self.x)`): memory and native handles, not `remove`/`clear`/`reset`
# (a file on disk, a container emptied).
FREE_WORDS = frozenset({"close", "free", "release", "shutdown", "unload", "destroy", "dispose", "dealloc",
                        "deallocate", "terminate", "cleanup", "teardown"})
# Whole-object closes outside `__del__`: no arguments, and not `free`/`release`, which
# elsewhere free one item (`free(request)`) or release a lock or semaphore.
CLOSE_WORDS = frozenset({"close", "shutdown", "unload", "destroy", "dispose", "terminate", "teardown"})


def frees(name: Optional[str]) -> bool:
    """Is this a name a part is freed in place with (a word of it in `FREE_WORDS`)?"""
    return name is not None and not FREE_WORDS.isdisjoint(name.lower().split("_"))


def releases(name: str) -> bool:
    """Does a method or function of this name release what it is called on or handed?"""
    return not RELEASE_WORDS.isdisjoint(name.lower().split("_"))


# The classmethods a model class loads an instance of itself with (transformers, diffusers,
# peft, sentence-transformers and the projects built on them spell them so): called on a
# heavy class, they make a heavy object.
LOADERS = frozenset({"from_pretrained", "from_single_file", "from_config"})
