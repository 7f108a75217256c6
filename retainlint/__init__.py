"""retainlint: find and fix Python bugs that keep memory alive after it should be freed."""

__version__ = "0.1.0"
