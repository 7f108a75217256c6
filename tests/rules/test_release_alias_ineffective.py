"""Cleanup that frees nothing (RL607, RL608, RL609), the shapes learnt from held-out upstream fixes
(held-out incidents: diffusers #9543, ComfyUI-Easy-Use #170, ComfyUI-nunchaku #100), and RL601's
path strings - run as a user runs retainlint, on a small project, with the cache on,
then fixed the way upstream fixed it."""

import json
import textwrap

from conftest import check_here


def _check(root, code: str) -> tuple[int, list[tuple[str, str, int, str, str]]]:
    done = check_here("check", ".", "--select", code, "--output-format", "json", cwd=root)
    assert done.returncode in (0, 1), done.stderr
    found = json.loads(done.stdout)
    return done.returncode, sorted(
        (f["code"], f["filename"], f["location"]["row"], f["severity"], f["message"]) for f in found)


def _write(root, files: dict) -> None:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())


def test_deleting_the_loop_variable_over_what_the_caller_handed_in_is_reported_until_the_caller_deletes(tmp_path):
    _write(tmp_path, {
        "memory.py": """
            import gc

            import torch


            def release_and_collect(objects):
                for obj in objects:
                    del obj
                gc.collect()
                torch.cuda.empty_cache()
        """,
        "train.py": """
            from memory import release_and_collect


            def prepare(load, prompts):
                encoder = load("text_encoder")
                embeddings = [encoder(p) for p in prompts]
                release_and_collect([encoder])
                return embeddings
        """,
    })
    code, found = _check(tmp_path, "RL607")
    assert code == 1
    assert [(c, f, line, sev) for c, f, line, sev, _ in found] == [("RL607", "memory.py", 8, "warning")]
    assert "only unbinds the loop variable over its parameter `objects`" in found[0][4]
    # upstream's fix: the helper only collects; the caller deletes its own name first
    _write(tmp_path, {
        "memory.py": """
            import gc

            import torch


            def free_memory():
                gc.collect()
                torch.cuda.empty_cache()
        """,
        "train.py": """
            from memory import free_memory


            def prepare(load, prompts):
                encoder = load("text_encoder")
                embeddings = [encoder(p) for p in prompts]
                del encoder
                free_memory()
                return embeddings
        """,
    })
    assert _check(tmp_path, "RL607") == (0, [])


def test_emptying_the_cache_before_the_unload_is_reported_until_it_comes_after(tmp_path):
    _write(tmp_path, {"nodes.py": """
        import torch

        import comfy.model_management


        def clean_gpu_used():
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            comfy.model_management.unload_all_models()
    """})
    code, found = _check(tmp_path, "RL608")
    assert code == 1
    assert [(c, f, line, sev) for c, f, line, sev, _ in found] == [("RL608", "nodes.py", 8, "warning")]
    assert "runs before `comfy.model_management.unload_all_models()`" in found[0][4]
    _write(tmp_path, {"nodes.py": """
        import torch

        import comfy.model_management


        def clean_gpu_used():
            comfy.model_management.unload_all_models()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    """})
    assert _check(tmp_path, "RL608") == (0, [])


LOADER = """
    import torch


    class Wrapper(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model


    class Loader:
        def __init__(self, build):
            self.build = build
            self.transformer = None

        def load(self, path, device):
            if self.transformer is not None:
                old = self.transformer
                self.transformer = None
                {offload}del old
                torch.cuda.empty_cache()
            self.transformer = self.build(path).to(device)
            return (Wrapper(self.transformer),)
"""


def test_a_reload_that_frees_what_it_handed_out_is_reported_until_the_old_module_leaves_the_device(tmp_path):
    _write(tmp_path, {"loader.py": LOADER.replace("{offload}", "")})
    code, found = _check(tmp_path, "RL609")
    assert code == 1
    assert [(c, f, line, sev) for c, f, line, sev, _ in found] == [("RL609", "loader.py", 20, "warning")]
    assert "after releasing `self.transformer` frees nothing of it: `load()` returns an object built around" \
        in found[0][4]
    # upstream's fix: move the old module to the CPU in place, whoever still holds it
    _write(tmp_path, {"loader.py": LOADER.replace("{offload}", 'old.to("cpu")\n                ')})
    assert _check(tmp_path, "RL609") == (0, [])


def test_paths_joined_from_a_released_directory_name_are_no_alias(tmp_path):
    _write(tmp_path, {"cluster.py": """
        import os
        import shutil
        import tempfile


        class Cluster:
            def setup(self):
                self._tempdir = tempfile.mkdtemp()
                self._nodes_file = os.path.join(self._tempdir, "nodes.json")
                self._model = object()
                self._runner = Runner(self._model)

            def teardown(self):
                shutil.rmtree(self._tempdir)
                self._tempdir = None
                self._model = None


        class Runner:
            def __init__(self, model):
                self.model = model
    """})
    code, found = _check(tmp_path, "RL601")
    # the runner still holds the model (reported); the joined path holds nothing
    assert code == 1
    assert [(c, f, line) for c, f, line, _, _ in found] == [("RL601", "cluster.py", 16)]
    assert "`self._runner`" in found[0][4]
