"""Exclude patterns matched in near-linear time (core/globs.py), with pathspec's meaning."""

import random

import pathspec

from retainlint.core.config import glob_matches
from retainlint.core.globs import GitIgnore
from retainlint.engine.discover import excluded

HOSTILE = "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"  # exponential for a backtracking regex


def test_a_hostile_pattern_gets_its_answer():
    deep = "/".join(["a" * 255] * 16)
    assert GitIgnore([HOSTILE]).match_file(deep) is False
    assert GitIgnore([HOSTILE]).match_file(deep + "b") is True
    assert GitIgnore(["*" * 50 + "b"]).match_file(deep + "/xb") is True


def test_excludes_read_by_discovery_use_it(tmp_path):
    name = "a" * 200
    assert not excluded(str(tmp_path / name / f"{name}.py"), tmp_path, [HOSTILE])
    assert excluded(str(tmp_path / name / f"{name}b" / "m.py"), tmp_path, [HOSTILE])


def test_per_file_ignores_keys_use_it():
    name = "a" * 200
    assert not glob_matches(HOSTILE, f"{name}/{name}.py")
    assert glob_matches(HOSTILE, f"{name}/{name}b/m.py")
    assert glob_matches("tests/*.py", "tests/m.py") and not glob_matches("tests/*.py", "tests/sub/m.py")


def test_same_answers_as_pathspec():
    """Many generated patterns (stars, `**`, `?`, classes, escapes, anchors, negations,
    trailing slashes, comments) and paths: the answer is pathspec's. Negated classes are
    left out: pathspec lets `[!a]` match a `/`, git does not (and neither does this)."""
    rng = random.Random(7)
    atoms = ["a", "b", "*", "**", "?", "[ab]", "[a-c]", "\\*", "/", "/", ".", "a*", "!", " ", "\\ ", "#"]
    compared = 0
    for _ in range(1500):
        lines = ["".join(rng.choice(atoms) for _ in range(rng.randint(1, 7))) for _ in range(rng.randint(1, 3))]
        try:
            reference = pathspec.GitIgnoreSpec.from_lines(lines)
        except ValueError:
            continue
        ours = GitIgnore(lines)
        for _ in range(15):
            names = ["".join(rng.choice("ab.* ") for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 5))]
            if any(n in (".", "..") for n in names):
                continue
            path = "/".join(names) + ("/" if rng.random() < 0.3 else "")
            assert ours.match_file(path) == reference.match_file(path), (lines, path)
            compared += 1
    assert compared > 15000


def test_a_negated_class_never_matches_a_slash():
    assert GitIgnore(["/a*[!x]b"]).match_file("a/b") is False
    assert GitIgnore(["/a*[!x]b"]).match_file("azb") is True
