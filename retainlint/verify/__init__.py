"""Runtime verifier: prove with memory figures that a fix frees what a bug pinned.

- `retainlint verify` (see `retainlint.verify.cli`) runs every rule's scenario, buggy and
  autofixed, in fresh subprocesses with a real model.
- `expect_released(obj)` is the same check for your own tests.

Importing this package never imports torch (the linter must not pay for it).
"""

from retainlint.verify.api import RetainedError, expect_released

__all__ = ["RetainedError", "expect_released"]
