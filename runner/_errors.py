"""The ``runner`` package's error tree, translated into one line at the CLI boundary."""

from __future__ import annotations


class RunnerError(Exception):
    """Base of every error the runner raises on purpose."""


class ConfigError(RunnerError):
    """A configuration cannot be run as written (unknown provider, unmappable setting, no key)."""


class ClusterError(RunnerError):
    """The Ray cluster asked for cannot be joined (not running, wrong address, no token)."""
