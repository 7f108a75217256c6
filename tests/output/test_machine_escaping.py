"""junit and pylint output of a tree whose file names hold control characters: well-formed
XML, and one line per finding with nothing that drives a terminal."""

import os
import subprocess
import sys
from xml.etree import ElementTree as ET

import pytest

from conftest import BUGGY

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="control characters in file names")

NAME = "a\x01b\x1b[31m\nc\x7f\udcff.py"  # SOH, ESC, newline, DEL, a byte that is not UTF-8
SHOWN = "a\\x01b\\x1b[31m\\nc\\x7f\\xff.py"


def check(cwd, output_format):
    """(exit code, stdout as bytes): bytes, so that a raw byte that is not UTF-8 shows."""
    r = subprocess.run([sys.executable, "-m", "retainlint", "check", ".", "--no-cache",
                        "--output-format", output_format], cwd=cwd, capture_output=True,
                       timeout=120, env={**os.environ, "NO_COLOR": "1"})
    return r.returncode, r.stdout, r.stderr.decode("utf-8", "replace")


@pytest.fixture
def odd_tree(tmp_path):
    (tmp_path / os.fsencode(NAME).decode("utf-8", "surrogateescape")).write_text(BUGGY)
    return tmp_path


def test_junit_is_well_formed_xml_with_the_name_escaped(odd_tree):
    rc, out, err = check(odd_tree, "junit")
    assert rc == 1, err
    suites = ET.fromstring(out)
    (case,) = suites.iter("testcase")
    assert case.get("file") == SHOWN and case.get("line") == "7"
    assert case.get("name") == "retainlint.RL501.discarded-hook-handle"
    assert "register_bytecode_hook" in case.find("failure").get("message")


def test_pylint_lines_show_control_characters_escaped(odd_tree):
    rc, out, err = check(odd_tree, "pylint")
    assert rc == 1, err
    (line,) = out.decode("ascii").splitlines()  # every odd character escaped
    assert line.startswith(f"{SHOWN}:7: [RL501(discarded-hook-handle)] handle returned by ")
