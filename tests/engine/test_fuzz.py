"""Property-based: every rule and every fix on generated programs. No crash or internal
error, fixed output always compiles, and a second fix pass changes nothing.

Two generators: programs assembled from snippets that really trigger the rules (every
rule's own examples plus a few extra shapes), varied by renaming, indentation, comments
and blank lines; and arbitrary valid Python from hypothesmith's grammar, when installed.
Deterministic (derandomize) and sized to stay well under a minute."""

import re
import textwrap
import warnings

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, given, settings, strategies as st  # noqa: E402

from retainlint.core.config import Settings  # noqa: E402
from retainlint.core.finding import INTERNAL_ERROR, SOURCE_ERROR  # noqa: E402
from retainlint.engine.lint import lint_bytes  # noqa: E402
from retainlint.engine.registry import all_rules  # noqa: E402
from retainlint.engine.runner import FileOutcome, Mode, fix_bytes  # noqa: E402

RULES = list(all_rules())
FIX_ALL = Mode(fix=True, unsafe_fixes=True)
FUZZ = settings(max_examples=150, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

EXTRA = [
    """\
    import weakref
    import torch.nn as nn

    def attach(owner, model: nn.Module):
        weakref.finalize(owner, print, model)
    """,
    """\
    import weakref

    class Engine:
        def __init__(self):
            self._finalizer = weakref.finalize(self, self.shutdown)

        def shutdown(self):
            pass
    """,
    """\
    from torch import nn

    _by_module = {}

    def remember(m: nn.Module, value):
        _by_module[m] = value
    """,
    """\
    import gc

    class Runner:
        def start(self):
            gc.freeze()

        def close(self):
            self.model = None
    """,
    """\
    import torch

    class Wrapper:
        def __init__(self, model):
            self.model = model
            torch._dynamo.convert_frame.register_bytecode_hook(self.hook)

        def close(self):
            self.model = None
    """,
]


def _code(example) -> str:
    return textwrap.dedent(example if isinstance(example, str) else example.code)


SNIPPETS = [c for c in (
    [_code(e) for r in RULES for e in (*r.invalid, *r.valid)] + [textwrap.dedent(s) for s in EXTRA]
) if "from __future__" not in c]
RENAMEABLE = ["model", "owner", "engine", "value", "cache", "Wrapper", "Runner", "Engine"]
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).map(lambda s: f"n_{s}")
COMMENTS = st.sampled_from(["# register_bytecode_hook", "# noqa", "# noqa: RL501", "# type: ignore",
                            "# weakref.finalize(self, model)", "# gc.freeze()", "#", "# ünïcode ✓"])


def _compiles(data: bytes) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "<fuzz>", "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


@st.composite
def assembled(draw) -> str:
    parts = draw(st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=3))
    source = "\n\n".join(parts)
    for name in draw(st.lists(st.sampled_from(RENAMEABLE), max_size=3, unique=True)):
        source = re.sub(rf"\b{name}\b", draw(NAMES), source)
    lines = source.splitlines()
    out = []
    for i, line in enumerate(lines):
        if draw(st.integers(0, 9)) == 0 and not (out and out[-1].rstrip().endswith("\\")):
            indent = re.match(r"\s*", line).group()
            out.append(indent + draw(COMMENTS))
        if draw(st.integers(0, 14)) == 0 and line.strip() and not line.rstrip().endswith("\\"):
            line += "  " + draw(COMMENTS)
        out.append(line)
        if draw(st.integers(0, 14)) == 0:
            out.append("")
    source = "\n".join(out) + draw(st.sampled_from(["\n", "", "\n\n"]))
    if draw(st.booleans()):  # the whole thing one block deeper
        source = "if True:\n" + textwrap.indent(source, draw(st.sampled_from(["    ", "\t", "  "])))
    return source


def _fix_twice(data: bytes, config: Settings):
    first = FileOutcome("fuzz.py")
    result, fixed = fix_bytes("fuzz.py", data, RULES, config, FIX_ALL, first)
    second = FileOutcome("fuzz.py")
    _, again = fix_bytes("fuzz.py", fixed, RULES, config, FIX_ALL, second)
    return result, first, fixed, second, again


def _assert_sound(data: bytes, config: Settings, allow_source_errors: bool) -> None:
    lint = lint_bytes("fuzz.py", data, RULES, config)
    bad = {INTERNAL_ERROR[0]} | (set() if allow_source_errors else {SOURCE_ERROR[0]})
    assert not [f.message for f in lint.findings if f.code in bad]
    result, first, fixed, second, again = _fix_twice(data, config)
    assert not [f.message for f in first.fix_errors + result.findings if f.code in bad]
    if fixed != data:
        assert _compiles(fixed), fixed.decode()
    assert again == fixed and second.fixed == 0, "fixes are not idempotent"


@FUZZ
@given(source=assembled(), per_object=st.booleans())
def test_fuzz_rule_snippets(source, per_object):
    data = source.encode()
    assume(_compiles(data))
    _assert_sound(data, Settings(per_object_hooks=per_object), allow_source_errors=False)


def test_snippets_really_trigger_every_rule():
    found = set()
    for snippet in SNIPPETS:
        result = lint_bytes("s.py", snippet.encode(), RULES, Settings(per_object_hooks=True))
        found |= {f.code for f in result.findings}
    assert found >= {r.code for r in RULES}


try:
    import hypothesmith
except ImportError:  # pragma: no cover
    hypothesmith = None

# Trigger tokens for every rule, so that generated programs are really parsed and walked.
PREAMBLE = ("import gc, weakref, torch\n"
            "# register_bytecode_hook register_forward_hook finalize freeze cache\n"
            "# del self. = None .clear() delattr\n")


@pytest.mark.skipif(hypothesmith is None, reason="hypothesmith is not installed")
@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(source=hypothesmith.from_grammar() if hypothesmith else st.nothing())
def test_fuzz_grammar_programs(source):
    data = (PREAMBLE + source).encode()
    assume(_compiles(data))
    # libcst may refuse odd but valid input (RL000); what it must never do is crash.
    _assert_sound(data, Settings(per_object_hooks=True), allow_source_errors=True)
