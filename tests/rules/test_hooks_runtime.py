"""What RL501, RL701 and RL902 report really keeps the object alive, checked by running
the fixtures (our own code): with the collector off, the reported shape outlives its last
reference, and the shape each rule accepts (or the fixed twin) is freed at once."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from retainlint.core.config import Settings
from retainlint.engine.lint import lint_bytes
from retainlint.engine.registry import all_rules

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RULES = {r.code: r for r in all_rules()}


def _reported(path: Path, code: str) -> list[int]:
    result = lint_bytes(str(path), path.read_bytes(), [RULES[code]], Settings())
    assert not result.has_errors
    return sorted(f.start.line for f in result.findings)


def _load(path: Path) -> dict:
    namespace: dict = {"__name__": path.stem}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


@pytest.fixture
def no_collector():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def test_rl501_hook_on_a_model_handed_in_pins_the_probe(no_collector):
    buggy = FIXTURES / "RL501" / "hook_on_passed_in_model.py"
    assert 10 in _reported(buggy, "RL501")
    model = torch.nn.Linear(4, 4)
    probe = _load(buggy)["ActivationProbe"](model)
    alive = weakref.ref(probe)
    del probe
    gc.collect()
    assert alive() is not None  # the model's hook keeps it, cycle collector or not
    model(torch.ones(1, 4))
    assert len(alive().outputs) == 1  # and it keeps storing activations

    fixed = _load(FIXTURES / "RL501" / "hook_on_passed_in_model.fixed.py")["ActivationProbe"](model)
    freed = weakref.ref(fixed)
    fixed.close()  # the fix removes the hook there
    del fixed
    assert freed() is None


def test_rl701_per_instance_cache_needs_the_collector(no_collector):
    case = FIXTURES / "RL701" / "per_instance_method_cache.py"
    assert _reported(case, "RL701") == [19, 20, 33, 42, 51, 66]
    grid = _load(case)["Grid"]((2, 2))
    grid.coords()
    alive = weakref.ref(grid)
    del grid
    assert alive() is not None  # a cycle: refcounting alone cannot free it
    gc.collect()
    assert alive() is None

    clean = FIXTURES / "RL701" / "per_instance_cache_without_self.py"
    assert _reported(clean, "RL701") == []
    reader = _load(clean)["Reader"](4)
    reader.parse("a b")
    freed = weakref.ref(reader)
    del reader
    assert freed() is None


def test_rl701_grad_fn_hook_keeps_the_graph_and_the_instance(no_collector):
    case = FIXTURES / "RL701" / "grad_fn_hook_keeps_inputs.py"
    assert _reported(case, "RL701") == [27]
    hook = _load(case)["Relevance"]()
    x = torch.ones(2, requires_grad=True)
    (out,) = hook.pre_forward(None, (x,))
    hook.forward(None, (out,), out)  # keeps the output, whose grad_fn holds the hook
    alive = weakref.ref(hook)
    del hook, out
    gc.collect()
    assert alive() is not None  # through the C++ node: the collector cannot free it

    clean = FIXTURES / "RL701" / "grad_fn_hook_stateless.py"
    assert _reported(clean, "RL701") == []
    scale = _load(clean)["Scale"](2.0)
    (out,) = scale.pre_forward(None, (x,))
    freed = weakref.ref(scale)
    del scale, out
    assert freed() is None


def test_rl902_attached_child_keeps_its_parent_in_a_cycle(no_collector):
    case = FIXTURES / "RL902" / "lazy_child_keeps_parent.py"
    assert _reported(case, "RL902") == [8, 25]
    root = _load(case)["AutoDict"]()
    root["a"]["b"] = 1
    child = weakref.ref(root["a"])
    del root
    assert child() is not None  # parent <-> child
    gc.collect()
    assert child() is None

    clean = FIXTURES / "RL902" / "parent_link_needed_or_dropped.py"
    assert _reported(clean, "RL902") == []
    root = _load(clean)["AutoDict"]()
    root["a"]["b"] = 1
    child = weakref.ref(root["a"])
    del root
    assert child() is None
