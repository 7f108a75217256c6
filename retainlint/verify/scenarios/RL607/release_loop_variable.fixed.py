# HAND-WRITTEN FIX: RL607 is suggestion-only (retainlint offers no autofix). Applies the
# rule's suggestion: the caller's list lets go of its objects (`objects.clear()`).
"""RL607: a release helper deletes the loop variable over its parameter.

Shaped after diffusers' training scripts: the text encoders are freed before training
through a helper that deletes each object in a loop - each `del` unbinds the loop
variable, and the caller's list keeps every encoder.
"""
import gc

import torch.nn as nn


def free_memory(objects: list) -> None:
    objects.clear()
    gc.collect()


class Trainer:
    def __init__(self, encoder: nn.Module):
        self.encoders = [encoder]

    def encode(self, run) -> None:
        for encoder in self.encoders:
            run(encoder)

    def start_training(self) -> None:
        free_memory(self.encoders)


def lifecycle(ctx):
    trainer = Trainer(ctx.build_model())
    ctx.expect_freed(trainer.encoders[0], "model")
    trainer.encode(ctx.exercise)
    trainer.start_training()
    ctx.keep(trainer)  # training goes on with the trainer
