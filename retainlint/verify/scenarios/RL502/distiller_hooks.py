"""RL502: hook handles kept but never removed.

A distillation helper hooks the layers of a shared teacher model (which outlives it) to
capture their outputs, and keeps the handles; its `close()` never removes them. The
teacher's hook dicts keep the bound method, so the helper - and the student model it
trains - stay alive after `close()`.
"""
import torch.nn as nn


class FeatureDistiller:
    def __init__(self, teacher: nn.Module, student: nn.Module):
        self.student = student
        self.teacher_outputs: list = []
        self._handles = []
        for layer in teacher.children():
            if isinstance(layer, nn.Linear):
                self._handles.append(layer.register_forward_hook(self._capture))

    def _capture(self, module, args, output) -> None:
        self.teacher_outputs.append(output.shape)

    def step(self, teacher: nn.Module, run) -> None:
        run(teacher)
        run(self.student)

    def close(self) -> None:
        self.teacher_outputs.clear()


def lifecycle(ctx):
    teacher = ctx.build_model()
    ctx.keep(teacher)  # the teacher is shared: it outlives the distiller on purpose
    distiller = FeatureDistiller(teacher, ctx.build_model())
    ctx.expect_freed(distiller.student, "student model")
    distiller.step(teacher, ctx.exercise)
    distiller.close()
    # The trainer drops the distiller after close().
