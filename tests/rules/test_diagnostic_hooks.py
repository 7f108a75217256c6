"""A hook a debugging or profiling aid registers on the model it is handed, dropping the
handle, keeps that aid for the model's life - but only for those who turn it on: `info`,
naming the aid. The same hook from an ordinary class stays a warning."""

from pathlib import Path

from conftest import run_rules

HOOKS = """\
    class {name}:
        def __init__(self, model):
            self.frames = []
            for module in model.modules():
                module.register_forward_hook(self.{method})

        def {method}(self, module, args, output):
            self.frames.append(output.abs().max().item())
    """


def _found(root: Path, name: str, module: str = "hooks.py") -> list:
    files = {module: HOOKS.format(name=name, method="forward_hook")}
    if "/" in module:
        files[module.rpartition("/")[0] + "/__init__.py"] = ""  # a package: the module is `debug_utils.hooks`
    return [(f.start.line, f.code, f.severity.value, f.message) for f in run_rules(root, files) if f.code == "RL501"]


def test_a_debugging_aid_s_hooks_are_info(tmp_path):
    found = _found(tmp_path, "DebugUnderflowOverflow")
    assert [(line, code, level) for line, code, level, _ in found] == [(5, "RL501", "info")]
    assert "`DebugUnderflowOverflow` is a debugging or profiling aid" in found[0][3]


def test_a_debugging_module_or_a_profiling_method_names_the_aid(tmp_path):
    assert [level for _, _, level, _ in _found(tmp_path / "m", "Collector", module="debug_utils/hooks.py")] == ["info"]
    source = """\
    class Engine:
        def __init__(self, model):
            self.model = model
            self.times = []

        def profile_model_time(self):
            self.model.register_forward_hook(self.forward_hook)

        def forward_hook(self, module, args, output):
            self.times.append(1.0)
    """
    found = [(f.code, f.severity.value, f.message) for f in run_rules(tmp_path / "f", {"engine.py": source})
             if f.code == "RL501"]
    assert [(code, level) for code, level, _ in found] == [("RL501", "info")]
    assert "`profile_model_time` is a debugging or profiling aid" in found[0][2]


def test_an_ordinary_class_s_hooks_stay_a_warning(tmp_path):
    assert [(code, level) for _, code, level, _ in _found(tmp_path, "ActivationStatsHook")] == [("RL501", "warning")]
