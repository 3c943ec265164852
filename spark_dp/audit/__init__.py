"""Empirical privacy audit of every mechanism: ``spark-dp audit`` and :func:`audit`.

The audit runs a mechanism's real code (DataFrames, Spark, its own calibration) many times on
neighbouring datasets built to be worst cases for it, counts the events that matter and turns
the counts into statements with Clopper–Pearson confidence bounds:

* the rate at which an item that only the canary holds is released, against the δ share the
  calibration claims for that event (:class:`~.runner.NovelTest`);
* an empirical lower bound on ε from an item just below the threshold that the canary pushes
  up, next to the claimed ε (:class:`~.runner.EpsilonTest`).

A failed audit is evidence that the mechanism is not as private as it claims. A passed audit is
not a proof of privacy: it bounds ε from below on the datasets and events it tried, and a bug
that shows only on other data passes. ``--fast`` uses a large δ and tiny data so that a 2×
error in δ or in the weights fails with ≥ 95% power (computed in
``tests/audit/test_statistics.py``); the deliberately broken variants of :mod:`.broken` show
it (``spark-dp audit --self-test``).

Modules: :mod:`.statistics` (bounds, power), :mod:`.scenario` (canaries, copies),
:mod:`.placement` (where to look, before any run), :mod:`.targets` (how each mechanism runs and
what it claims), :mod:`.broken`, :mod:`.runner`, :mod:`.report` (JSON, table, plot),
:mod:`.cli`.
"""

from spark_dp.audit.api import AUDITED, SelfTestResult, audit, self_test
from spark_dp.audit.broken import BROKEN
from spark_dp.audit.runner import AuditResult
from spark_dp.audit.targets import FAST_PARAMETERS, MECHANISMS

__all__ = [
    "AUDITED",
    "BROKEN",
    "FAST_PARAMETERS",
    "MECHANISMS",
    "AuditResult",
    "SelfTestResult",
    "audit",
    "self_test",
]
