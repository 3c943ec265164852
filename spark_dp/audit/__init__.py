"""Empirical privacy audit of every mechanism: ``spark-dp audit`` and :func:`audit`.

The audit runs a mechanism's real code (DataFrames, Spark, its own calibration) many times on
neighbouring datasets built from its proof to be worst cases for it (:mod:`.probes`,
:mod:`.worst_cases`), counts events on what each run released, and tests each event against
the claimed (ε, δ): P_A[E] − e^ε·P_B[E] ≤ δ with one-sided Clopper–Pearson bounds, both orders
of the neighbours, the family-wise error split over every comparison (:mod:`.statistics`,
:mod:`.events`). Each comparison is held to min(claimed δ, the proof's share for its event),
and the calibration's own statement is checked against the claim before any run.

A failed audit is evidence that the mechanism is not as private as it claims. A passed audit is
not a proof of privacy: it bounds ε from below on the datasets and events it tried. The
deliberately broken variants show the audit's power (``spark-dp audit --self-test``,
:mod:`.selftest`; docs/privacy/audit.md); they are not part of spark_dp but of the
``spark_dp_selftest`` package beside it in a clone.

Modules: :mod:`.statistics` (bounds, hockey-stick test, power), :mod:`.probes` and
:mod:`.worst_cases` (the neighbouring datasets), :mod:`.scenario` (many copies in one job),
:mod:`.placement` (where to look, before any run), :mod:`.targets` (how each mechanism runs and
what it claims; :mod:`.claims`), :mod:`.events`, :mod:`.runner`, :mod:`.count_audit`,
:mod:`.choice` (the private choice of Δ0), :mod:`.system`, :mod:`.api` (one audit),
:mod:`.selftest`, :mod:`.report` (JSON, table, plot), :mod:`.cli`.
"""

from spark_dp.audit.api import AUDITED, audit
from spark_dp.audit.runner import AuditResult
from spark_dp.audit.selftest import SelfTestResult, self_test
from spark_dp.audit.targets import FAST_PARAMETERS, MECHANISMS

__all__ = [
    "AUDITED",
    "FAST_PARAMETERS",
    "MECHANISMS",
    "AuditResult",
    "SelfTestResult",
    "audit",
    "self_test",
]
