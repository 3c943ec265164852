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
    "AlreadyReleased",
    "BudgetError",
    "BudgetRefused",
    "BudgetStoreUnavailable",
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
    """An input table breaks its contract (missing column, wrong type; with --strict-input,
    nulls, empty, ...)."""


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


class BudgetStoreUnavailable(BudgetError):
    """The budget store cannot be written (a read-only file or directory, a lost connection):
    a failure of the environment, exit code 1, one line naming the store."""

    exit_code = 1


class AlreadyReleased(BudgetError):
    """A run's request (same key, arguments, input locations and listings) was committed before:
    it is not run again, and nothing is read, written or charged. Exit code 0 when the run
    asks for the very report that release wrote (an Airflow retry of a finished task), else 2:
    its message says where the release is and that a new release needs a fresh key."""

    def __init__(self, message: str, *, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code
