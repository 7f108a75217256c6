"""What a scenario's `lifecycle(ctx)` sees (runs inside the verifier's subprocess)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from retainlint.verify.probe import Tracker

# Objects a scenario keeps on purpose (a server that keeps its engine handle, a model still in
# use): a module global, so holder chains through them read like process state.
PROCESS_STATE: list = []


class Context:
    def __init__(self, build: Optional[Callable[[], Any]], exercise: Optional[Callable[[Any], None]],
                 device: str):
        self._build = build
        self._exercise = exercise
        self.device = device
        self.trackers: list[Tracker] = []

    def build_model(self) -> Any:
        """A fresh model on the verifier's device (minilm, llama-tiny or torch-mlp)."""
        assert self._build is not None, "no model for a --target run"
        return self._build()

    def exercise(self, model: Any) -> None:
        """One inference with the model (no autograd graph is kept)."""
        assert self._exercise is not None, "no model for a --target run"
        self._exercise(model)

    def expect_freed(self, obj: Any, label: str = "model", promptly: bool = False) -> None:
        """Name an object (and its tensors) that the teardown must free. `promptly`: by
        reference counting alone - it is measured before any `gc.collect()` (a reference
        cycle is the bug)."""
        self.trackers.append(Tracker.of(obj, label, promptly))

    def keep(self, obj: Any) -> None:
        """Keep an object that legitimately outlives the scenario."""
        PROCESS_STATE.append(obj)
