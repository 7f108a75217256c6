"""Held-out incidents: real upstream fixes of projects new to the
catalogue, checked through the CLI one file at a time, as scripts/incident_recall.py does.
Each buggy fixture must be reported on exactly its `# expect:` lines, with the severity a
user sees; its `.fixed.py` twin must be silent."""

import json
import re
from pathlib import Path

import pytest

from conftest import check_here

INCIDENTS = Path(__file__).resolve().parents[2] / "fixtures" / "incidents"
EXPECT = re.compile(r"#.*\bexpect: (RL\d{3})\b")

# (fixture, severity of its findings): heavy, unbounded or C++-held retention is an error
# (every parsed document, a Qt connection, a module list keeping every instance made); bounded, error-path-only retention, a cycle
# through values made per call, or a kept instance whose weight and count the code does not
# show (a device handle's finalizer: how many devices its users open), a warning
CASES = [
    ("RL202/hidapi_device_finalizer", "warning"),
    ("RL203/easyprocess_proc_start_atexit", "warning"),
    ("RL203/gdxpds_gdx_file_atexit", "warning"),
    ("RL203/marker_pdf_provider_atexit", "warning"),
    ("RL203/rosys_on_shutdown_registry", "error"),
    ("RL204/autoresearchclaw_acp_client_atexit", "warning"),
    ("RL301/extruct_class_lookup_cache", "error"),
    ("RL304/django_components_context_processors", "warning"),
    ("RL501/gradcam_activations_and_gradients", "warning"),
    ("RL502/captum_layer_eval_hook_not_removed_on_error", "warning"),
    # a collectable cycle through a model: freed only when the collector runs, which a
    # model's memory does not trigger
    ("RL701/fairscale_checkpoint_wrapper_partial", "warning"),
    ("RL701/pyro_rejector_bound_methods", "warning"),
    ("RL701/mne_qt_browser_signal_partials", "error"),
    ("RL702/pymongo_server_description_error", "warning"),
    ("RL904/pydantic_resolve_resolver_contextvars", "warning"),
]


def _findings(path: Path, code: str) -> list[tuple[int, str, str]]:
    done = check_here("check", str(path), "--no-cache", "--no-project", "--select", code,
                   "--output-format", "json", "--exit-zero", "--min-severity", "info")
    assert done.returncode == 0, done.stderr
    return sorted((f["location"]["row"], f["severity"], f["message"]) for f in json.loads(done.stdout))


def _lines(path: Path, code: str) -> list[tuple[int, str]]:
    return [(line, severity) for line, severity, _ in _findings(path, code)]


def _expected(path: Path) -> list[int]:
    lines = [i for i, text in enumerate(path.read_text().splitlines(), 1) if EXPECT.search(text)]
    assert lines, f"{path} marks no line"
    return lines


@pytest.mark.parametrize("case,severity", CASES, ids=[c for c, _ in CASES])
def test_incident_reported_on_its_lines_and_twin_silent(case, severity):
    buggy = INCIDENTS / f"{case}.py"
    code = case.split("/")[0]
    assert _lines(buggy, code) == [(line, severity) for line in _expected(buggy)]
    assert _findings(INCIDENTS / f"{case}.fixed.py", code) == []


def test_messages_name_what_is_pinned():
    """The message says which argument is kept and through which callback."""
    (_, _, extruct), = _findings(INCIDENTS / "RL301/extruct_class_lookup_cache.py", "RL301")
    assert "`document`" in extruct and "`DomElementClassLookup.lookup()`" in extruct
    (_, _, django), = _findings(INCIDENTS / "RL304/django_components_context_processors.py", "RL304")
    assert "`processor(request)`" in django and "`context_processors_data`" in django


def test_target_less_memory_handler_is_an_error_and_the_trimming_subclass_is_not():
    """Tribler: the MemoryHandler without a target is reported as an error. Both files
    also add the handler to the root logger in `__init__` with no `removeHandler`, which
    RL801's per-instance handler check reports as a warning (upstream kept that line)."""
    buggy = INCIDENTS / "RL801/tribler_memory_handler_no_target.py"
    (line,) = _expected(buggy)
    assert _lines(buggy, "RL801") == [(line, "error"), (line + 1, "warning")]
    fixed = _lines(INCIDENTS / "RL801/tribler_memory_handler_no_target.fixed.py", "RL801")
    assert [severity for _, severity in fixed] == ["warning"]
