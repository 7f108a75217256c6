"""Errors the command line turns into one line and exit 2."""


class ConfigError(Exception):
    """A bad configuration value, selector or path; the CLI prints it on one line and exits 2."""
