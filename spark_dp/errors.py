"""Typed errors of spark_dp.

Every error a user can fix (bad parameter, bad input file, output already present) is a
subclass of :class:`SparkDPUserError`. Jobs map those to their ``exit_code`` (2; 3 for
:class:`BudgetRefused`; 1 for :class:`EnvironmentFailure`, a failure of the disk, network or
cluster that spark_dp recognised) and print the message as one line; anything else is a bug or
an unrecognised infrastructure failure (exit code 1, the trace logged).

Messages name the offending parameter, column or path, show what was found, and say how to
fix it. They never contain private values (weights, counts, item names).
"""

from __future__ import annotations

__all__ = [
    "BudgetError",
    "BudgetRefused",
    "ConfigError",
    "EnvironmentFailure",
    "InputContractError",
    "OutputExistsError",
    "ParameterError",
    "PathConflictError",
    "SparkDPUserError",
]


class SparkDPUserError(ValueError):
    """Base class: the caller can fix this (exit code :attr:`exit_code` in jobs)."""

    exit_code: int = 2
    """The job's exit code for this error (2: bad arguments, configuration or input)."""


class ParameterError(SparkDPUserError):
    """A parameter is out of its domain (for example ε ≤ 0 or δ outside (0, 1))."""


class ConfigError(SparkDPUserError):
    """A configuration file or command-line override cannot be used."""


class InputContractError(SparkDPUserError):
    """An input table breaks its contract (missing column, wrong type, nulls, empty, ...)."""


class OutputExistsError(SparkDPUserError):
    """The output path already exists and overwriting was not requested."""


class PathConflictError(SparkDPUserError):
    """A path the job would write equals, contains or lies inside a path it reads or writes,
    or cannot be written (found before Spark starts)."""


class EnvironmentFailure(SparkDPUserError):
    """The environment failed, not the arguments: a full disk, an unreachable host or cluster
    master. Exit code 1; the message names the cause and the path or setting involved."""

    exit_code = 1


class BudgetError(SparkDPUserError):
    """A privacy budget is malformed or inconsistent (exit code 2)."""


class BudgetRefused(BudgetError):
    """The budget store refused a release: its dataset has no cap, or the cap would be
    exceeded. Exit code 3; the message is one line naming the dataset, what it has spent,
    what the release requests and the cap (or that no cap is set)."""

    exit_code = 3
