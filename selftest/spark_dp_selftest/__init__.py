"""The privacy audit's deliberately broken variants: ``spark-dp audit --self-test`` loads them.

They are not part of spark_dp: a user install (``pip install spark_dp``) holds no deliberately
broken mechanism. A clone's ``make setup`` installs this package beside it (``pip install -e
selftest``); then the self-test audits every real mechanism (it must pass) and every variant
here (it must fail), and ``spark-dp audit --mechanism broken-...`` audits one variant
(docs/privacy/audit.md#self-test).

Modules: :mod:`.breakages` (the one-change edits), :mod:`.broken` (the variants of each
mechanism), :mod:`.system` (a reused key, a pure-ε accountant).
"""

from spark_dp_selftest.broken import BROKEN, UNDERPOWERED, BrokenVariant, build_broken
from spark_dp_selftest.system import SYSTEM_BROKEN

__all__ = ["BROKEN", "SYSTEM_BROKEN", "UNDERPOWERED", "BrokenVariant", "build_broken"]
