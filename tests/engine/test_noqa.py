"""`# noqa` as ruff users write it, through the real CLI: any line of a multi-line
statement, a line the message names, prefixes, unknown codes warned about, and the RL100
report of directives that silence nothing."""

import textwrap
from pathlib import Path

from conftest import run_cli

HOOKS = textwrap.dedent("""\
    import torch


    class Wrapper:
        def __init__(self, model):
            self.model = model
            torch._dynamo.convert_frame.register_bytecode_hook(  # noqa: RL5
                self.hook
            )
            torch._dynamo.convert_frame.register_bytecode_hook(
                self.hook,
            )  # noqa: discarded-hook-handle
            torch._dynamo.convert_frame.register_bytecode_hook(
                self.hook,  # noqa: RL501
            )
            torch._dynamo.convert_frame.register_bytecode_hook(self.hook)  # noqa: RL3, E501, RL9999
            x = 1  # noqa: RL101

        def close(self):
            self.model = None
    """)


def concise(r):
    return [line for line in r.stdout.splitlines() if ": RL" in line]


def test_noqa_on_any_line_of_the_statement_and_by_prefix(tree):
    root = tree({"a.py": HOOKS})
    r = run_cli("check", "--output-format", "concise", cwd=root)
    # Silenced: the first line (prefix RL5), the closing line (rule name), a middle line.
    # RL3 is a prefix of other rules: line 16 is still reported.
    assert [line.split(" ")[0] for line in concise(r)] == ["a.py:16:9:"], r.stdout
    assert r.returncode == 1


def test_unknown_codes_are_warned_about_once(tree):
    root = tree({"a.py": HOOKS})
    r = run_cli("check", cwd=root)
    assert r.stderr.count("a.py:16: `# noqa` names no rule of retainlint: RL9999") == 1, r.stderr
    assert "E501" not in r.stderr  # another linter's code is not ours to judge


def test_unused_noqa_report(tree):
    root = tree({"a.py": HOOKS, "b.py": "y = 2  # noqa: RL501\nz = 3  # noqa\n"})
    assert not [line for line in concise(run_cli("check", "--output-format", "concise", cwd=root))
                if "RL100" in line]
    r = run_cli("check", "--output-format", "concise", "--extend-select", "RL100", cwd=root)
    unused = [line for line in concise(r) if "RL100" in line]
    assert unused == [
        "a.py:16:72: RL100 unused `# noqa` directive for RL3  [unused-noqa]",
        "a.py:17:16: RL100 unused `# noqa` directive for RL101  [unused-noqa]",
        # a file no rule even looks at; a bare noqa may serve another linter
        "b.py:1:8: RL100 unused `# noqa` directive for RL501  [unused-noqa]",
    ], r.stdout
    full = run_cli("check", "--extend-select", "RL100", "b.py", cwd=root).stdout.splitlines()
    assert full[:2] == ["b.py:1:8: RL100 unused-noqa [warning] unused `# noqa` directive for RL501",
                        "  it reported nothing here"], full
    # From configuration too, by name; and silenced like any rule.
    (root / "retainlint.toml").write_text('extend-select = ["unused-noqa"]\n')
    (root / "b.py").write_text("y = 2  # noqa: RL501, RL100\n")
    r = run_cli("check", "--output-format", "concise", cwd=root)
    assert [line.split(" ")[1] for line in concise(r)] == ["RL501", "RL100", "RL100"], r.stdout


def test_noqa_on_a_line_the_message_names(tree):
    # RL610 names the attribute's assignment in __init__: a noqa there silences it.
    source = textwrap.dedent("""\
        import torch


        class Runner:
            def __init__(self):
                self.buf = torch.zeros(1 << 20, device="cuda")

            def shutdown(self):
                self.other = None
        """)
    root = tree({"r.py": source})
    first = run_cli("check", "--output-format", "concise", "--select", "RL610", cwd=root)
    if not concise(first):  # the rule must fire on the plain shape for this to mean anything
        raise AssertionError(first.stdout + first.stderr)
    (root / "r.py").write_text(source.replace('device="cuda")', 'device="cuda")  # noqa: RL610'))
    r = run_cli("check", "--output-format", "concise", "--select", "RL610", cwd=root)
    assert concise(r) == [], r.stdout


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_noqa_on_a_def_line_does_not_silence_its_body(tree):
    # RL502 reports the handle 6 lines into the function; the rule names the function as
    # the finding's statement. A noqa on the `def` line is about the def, not its body.
    source = (FIXTURES / "RL502" / "handle_removed_only_on_success.py").read_text()
    source = source.replace("def gradient_norms(model: torch.nn.Module, loss_fn, batch):",
                            "def gradient_norms(model: torch.nn.Module, loss_fn, batch):  # noqa: RL502")
    root = tree({"a.py": source})
    r = run_cli("check", "--output-format", "concise", "--select", "RL502", cwd=root)
    assert [line.split(" ")[0] for line in concise(r)] == ["a.py:9:14:", "a.py:21:9:", "a.py:31:24:"], \
        r.stdout
    # --add-noqa writes on the flagged lines, and they silence the findings.
    added = run_cli("check", "--add-noqa", "--select", "RL502", cwd=root)
    assert added.returncode == 0 and "Added 3 noqa directives." in added.stderr, added.stderr
    lines = (root / "a.py").read_text().splitlines()
    assert [n for n, line in enumerate(lines, 1) if line.endswith("# noqa: RL502")] == [9, 15, 21, 31]
    again = run_cli("check", "--output-format", "concise", "--select", "RL502",
                    "--extend-select", "RL100", cwd=root)
    assert again.returncode == 1 and [line.split(" ")[:2] for line in concise(again)] == \
        [["a.py:15:62:", "RL100"]], again.stdout  # the def line's noqa: unused


def test_noqa_inside_a_named_function_does_not_silence_the_finding(tree):
    # RL201 names the finalizer callback (`offload`, lines 7-9): a noqa on its def line
    # is on a line the message names; one in its body is not.
    source = (FIXTURES / "RL201" / "aliased_import.py").read_text()
    body = source.replace("    weights.to(device)\n", "    weights.to(device)  # noqa: RL201\n")
    root = tree({"a.py": body})
    r = run_cli("check", "--output-format", "concise", cwd=root)
    assert [line.split(" ")[0] for line in concise(r)] == ["a.py:15:36:", "a.py:16:41:"], r.stdout
    (root / "a.py").write_text(source.replace(
        'def offload(weights: torch.Tensor, device: str = "cpu") -> None:',
        'def offload(weights: torch.Tensor, device: str = "cpu") -> None:  # noqa: RL201'))
    r = run_cli("check", "--output-format", "concise", cwd=root)
    assert [line.split(" ")[0] for line in concise(r)] == ["a.py:16:41:"], r.stdout


CACHED_METHOD = textwrap.dedent("""\
    import functools

    import torch


    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4096, 4096)

        @functools.lru_cache(maxsize=None)
        def mask(
            self,
            size,
        ):
            return torch.ones(size)
    """)


def test_noqa_on_any_header_line_of_a_def_but_not_in_its_body(tree):
    root = tree({"a.py": CACHED_METHOD})
    assert [line.split(" ")[:2] for line in concise(run_cli("check", "--output-format", "concise", cwd=root))] \
        == [["a.py:11:5:", "RL102"]]
    for line in ("    ):", "    def mask("):  # the header, decorators to the colon
        (root / "a.py").write_text(CACHED_METHOD.replace(line + "\n", line + "  # noqa: RL102\n"))
        r = run_cli("check", "--output-format", "concise", cwd=root)
        assert r.returncode == 0 and concise(r) == [], (line, r.stdout)
    (root / "a.py").write_text(CACHED_METHOD.replace("torch.ones(size)", "torch.ones(size)  # noqa: RL102"))
    r = run_cli("check", "--output-format", "concise", cwd=root)
    assert [line.split(" ")[1] for line in concise(r)] == ["RL102"], r.stdout
