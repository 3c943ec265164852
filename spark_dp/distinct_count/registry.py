"""The distinct-count methods: name → (plan, run), the one list of them.

Algorithm 1 (``exact``: DPDISTINCTCOUNT) and Algorithm 2 (``greedy``: DPAPPROXDISTINCTCOUNT) of
Knop & Steinke 2023 differ only in the curve c(D; ℓ); the plan
(:func:`~spark_dp.distinct_count.plan.plan_release`) and the release
(:func:`~spark_dp.distinct_count.release.release_curve`) are the same
(docs/design/counting.md#mechanism). The method is fixed by configuration, never by the data
(docs/design/counting.md#same-function: a failed exact solve aborts, it never falls back to greedy).

* ``REGISTRY[name].plan(params)``: the data-free :class:`DistinctCountPlan`;
* ``REGISTRY[name].run(pairs, plan, randomness, timer=None, **options)``: the curve of the
  method, then the release; a :class:`DistinctCountResult` that fills the privacy report.
  ``options`` are the engineering options of :func:`~spark_dp.distinct_count.dc_curve.exact_curve`
  (ignored by greedy); they never change a value.

Adding a method is one :class:`CurveMethod` in ``_METHODS`` plus the module of its curve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from spark_dp.distinct_count.components import resolve_method as resolve_components
from spark_dp.distinct_count.dc_curve import exact_curve
from spark_dp.distinct_count.greedy_curve import greedy_curve
from spark_dp.distinct_count.plan import DistinctCountPlan, plan_release, require_epsilon
from spark_dp.distinct_count.release import release_curve
from spark_dp.distinct_count.result import DistinctCountResult
from spark_dp.dp.registry import Algorithm, Registry
from spark_dp.errors import ParameterError
from spark_dp.logs import StageTimer, get_logger, log_private, unsafe_debug_enabled
from spark_dp.tracking import labels

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_dp.distinct_count.params import DistinctCountParams
    from spark_dp.randomness import Randomness

__all__ = [
    "METHODS",
    "REGISTRY",
    "CurveFunction",
    "CurveMethod",
    "contribution_curve",
    "curve_method",
    "plan_distinct_count",
]

log = get_logger(__name__)


class CurveFunction(Protocol):
    """``curve(pairs, max_contributions, **options)``: c(D; ℓ) for ℓ = 1..ℓ_max (int64, private)."""

    def __call__(
        self, pairs: DataFrame, max_contributions: int, **options: Any
    ) -> NDArray[np.int64]: ...


@dataclass(frozen=True)
class CurveMethod:
    """One method: how it computes the curve; its plan and release are the shared ones.

    An instance is the ``run`` of its registry entry (it is callable), so the curve function
    is reachable from the registry (:func:`contribution_curve`).

    Attributes:
        name: ``--method NAME``.
        summary: the algorithm's name in the paper (``--help``, the report's ``algorithm``).
        count_function: public description of c(D; ℓ) for the report.
        curve: the curve function.
        dedupes: the curve function drops repeated pairs itself and reads its input once, so a
            caller need neither deduplicate nor cache the pairs, and the job skips both (a
            deduplication and a cache cost more than the greedy pass itself at scale).
        splits_components: the curve function splits its core into connected components
            (option ``components``, resolved by :meth:`components_method`).
    """

    name: str
    summary: str
    count_function: str
    curve: CurveFunction
    dedupes: bool = False
    splits_components: bool = False

    def components_method(self, spark: SparkSession, requested: str) -> str | None:
        """The connected-components method this run will use (``graphframes`` or
        ``dataframe``), or ``None`` for a method that splits nothing. It depends on the session
        only, so callers resolve it before reading data: ``graphframes`` without its jar is a
        :class:`ParameterError` before any row is read.
        """
        if not self.splits_components:
            return None
        return resolve_components(spark, requested)

    def plan(self, params: DistinctCountParams) -> DistinctCountPlan:
        """The data-free plan of a release with this method."""
        return plan_release(
            require_epsilon(params.epsilon),
            params.beta,
            params.max_contributions,
            method=self.name,
        )

    def __call__(
        self,
        pairs: DataFrame,
        plan: DistinctCountPlan,
        randomness: Randomness,
        *,
        timer: StageTimer | None = None,
        **options: Any,
    ) -> DistinctCountResult:
        """Compute the curve, then release it as ``plan`` says (ε-DP).

        Args:
            pairs: distinct (user_id, item) pairs (repeats allowed when :attr:`dedupes`).
            plan: from :meth:`plan` (its method must be this one).
            randomness: the release's randomness (GEM and the noise use child streams).
            timer: stage timer for progress logging (one is made when omitted).
            **options: engineering options of the curve function.
        """
        if plan.method != self.name:
            raise ParameterError(
                f"the plan is for method {plan.method!r}, not {self.name!r}: "
                f"make it with REGISTRY[{self.name!r}].plan(params)"
            )
        timer = timer or StageTimer(log)
        components = self.components_method(pairs.sparkSession, options.pop("components", "auto"))
        if components is not None:
            options["components"] = components
        if unsafe_debug_enabled():  # an extra Spark action, for debugging only
            log_private(log, "distinct count input: %d rows", pairs.count())
        with labels(pairs.sparkSession, family="distinct_count", algorithm=self.name):
            with timer.stage(f"{self.name} curve"):
                curve = self.curve(pairs, plan.max_contributions, timer=timer, **options)
            with timer.stage("release"):
                release = release_curve(curve, plan, randomness)
        return DistinctCountResult(
            plan=plan,
            release=release,
            count_function=self.count_function,
            curve=curve,
            components=components,
        )

    def entry(self) -> Algorithm[DistinctCountParams, DistinctCountPlan]:
        """The registry entry: ``Algorithm(name, summary, plan, run=self)``."""
        return Algorithm(self.name, self.summary, self.plan, self)


def _exact(pairs: DataFrame, max_contributions: int, **options: Any) -> NDArray[np.int64]:
    """Exact DC(D; ℓ) by max-flow (:func:`~spark_dp.distinct_count.dc_curve.exact_curve`)."""
    return exact_curve(pairs, max_contributions, **options).curve


def _greedy(pairs: DataFrame, max_contributions: int, **options: Any) -> NDArray[np.int64]:
    """The greedy curve (:func:`~spark_dp.distinct_count.greedy_curve.greedy_curve`); the
    engineering options of the exact curve do not apply and are ignored."""
    return greedy_curve(pairs, max_contributions)


_METHODS = (
    CurveMethod(
        "exact",
        "DPDistinctCount (Knop & Steinke 2023, Algorithm 1: exact max-flow curve)",
        "exact DC(D; ℓ) (max-flow)",
        _exact,
        splits_components=True,
    ),
    CurveMethod(
        "greedy",
        "DPApproxDistinctCount (Knop & Steinke 2023, Algorithm 2: greedy curve)",
        "greedy ĝ[ℓ] (maximal matching, fixed orders)",
        _greedy,
        dedupes=True,
    ),
)

REGISTRY: Registry[DistinctCountParams, DistinctCountPlan] = Registry(
    "distinct-count", (method.entry() for method in _METHODS)
)

#: The method names, in registry order (``--method`` choices).
METHODS: tuple[str, ...] = REGISTRY.names


def plan_distinct_count(params: DistinctCountParams) -> DistinctCountPlan:
    """The data-free plan of ``params.method`` (the job computes it once, before the budget
    reservation).

    Raises:
        ParameterError: an unknown method (did-you-mean), or a missing ε.
    """
    return REGISTRY[params.method].plan(params)


def curve_method(name: str) -> CurveMethod:
    """The :class:`CurveMethod` registered as ``name`` (did-you-mean error if unknown)."""
    run = REGISTRY[name].run
    if not isinstance(run, CurveMethod):  # every entry is built by CurveMethod.entry
        raise TypeError(f"distinct-count method {name!r} is not a CurveMethod")
    return run


def contribution_curve(
    pairs: DataFrame, method: str, max_contributions: int, **options: Any
) -> NDArray[np.int64]:
    """c(D; ℓ) for ℓ = 1..ℓ_max by the registered ``method`` (private: never log it).

    Args:
        pairs: distinct (user_id, item) pairs.
        method: a registered name (``exact`` or ``greedy``).
        max_contributions: ℓ_max, public and data-independent.
        **options: engineering options of :func:`exact_curve` (ignored by greedy).
    """
    return curve_method(method).curve(pairs, max_contributions, **options)
