"""pytest plugin (entry point `pytest11`, active wherever retainlint is installed): the
`assert_released` fixture, so that a project's own tests can assert that a release frees
what it should, with the holder chain and the retainlint rule in the failure.

    def test_shutdown_frees_the_model(assert_released):
        engine = make_engine()
        with assert_released(engine.model):
            engine.shutdown()

Loading the plugin imports neither torch nor the linter.
"""

from __future__ import annotations

import pytest

from retainlint.verify.api import expect_released


@pytest.fixture
def assert_released():
    """`assert_released(*objs)`: a context manager; at the end of the block every object
    passed in (and every tensor it owns) must have been freed, else the test fails with
    `RetainedError` naming the reference chain that holds it."""
    return expect_released
