"""retainlint: find and fix Python bugs that keep memory alive after it should be freed."""

__version__ = "0.2.0"
