"""``spark-dp preview``: predicted released items per algorithm and Δ0, from DP statistics only.

docs/design/tuning.md#preview. The preview is a release of its own, pure ε_p-DP and charged
like any other. For every candidate c it releases one statistic: Basic's expected number of
released items at the previewed release's calibration (σ, ρ(c) of Basic at (ε_R, δ_R) and
Δ0 = c), the score of the private choice of Δ0 (:mod:`.auto.calibration`), computed by the
same one pass (:mod:`.auto.scores`) and released as

    Ŝ(c) = (⌊Q·s(c)⌋ + X_c)/Q,   X_c ~ discrete Laplace of scale ⌈Q·Δ(c) + 1⌉/ε_c (exact sampler),

with Q = :data:`QUANTUM` units per item and ε_c ∝ ⌈Q·Δ(c)⌉ + 1, so that every candidate's noise
has the same scale in items, about Σ_j Δ(j)/ε_p. The predictions are post-processing of the
Ŝ(c) and public constants: Basic's is Ŝ(c) itself (its expectation, up to Φ(−ρ/σ) per item);
the other algorithms' are Ŝ(c) times a factor measured on the benchmark datasets
(:data:`MODELS`, docs/design/tuning.md#preview-models). The intervals add the DP noise's 95%
quantile, the release's own randomness (±2√Ŝ) and, for a modelled algorithm, the factor's
measured range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from spark_dp.dp.calibration import Budget
from spark_dp.dp.protocol import PureDp
from spark_dp.partition_selection.auto.calibration import TERM_SCALE, score_sensitivity
from spark_dp.partition_selection.auto.scores import candidate_weights, score_totals
from spark_dp.partition_selection.calibration import WeightAndThreshold
from spark_dp.partition_selection.capping import ranked_cap
from spark_dp.report import Step, StepTotals

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_dp.logs import StageTimer
    from spark_dp.partition_selection.params import PreviewParams
    from spark_dp.randomness import DriverNoise, Randomness
    from spark_dp.report import PrivacyReport

__all__ = [
    "MODELS",
    "QUANTUM",
    "RULE",
    "SIMPLICITY",
    "Model",
    "Prediction",
    "Preview",
    "PreviewPlan",
    "PreviewStatistic",
    "best_rows",
    "plan_preview",
    "predict",
    "preview_statistics",
    "preview_table",
    "preview_view",
    "recommend",
]

QUANTUM = 64
"""Q: the statistics are released in units of 1/64 item (integers, so the noise is exact)."""

ALPHA = 0.05
"""Each interval covers the DP noise with probability at least 1 − α."""


@dataclass(frozen=True)
class Model:
    """Predicted items of an algorithm = factor(c)·Ŝ(c), the factor measured on the benchmark
    datasets at each grid Δ0, between ``low`` and ``high`` there
    (docs/design/tuning.md#preview-models).

    Attributes:
        points: (Δ0, factor, low, high) at increasing Δ0; between two points the factor is
            interpolated in log Δ0, outside them it is the nearest point's.
    """

    points: tuple[tuple[int, float, float, float], ...]

    def at(self, max_contributions: int) -> tuple[float, float, float]:
        """(factor, low, high) at Δ0 = ``max_contributions``."""
        pts = self.points
        if max_contributions <= pts[0][0]:
            return pts[0][1:]
        for (c0, *a), (c1, *b) in pairwise(pts):
            if max_contributions <= c1:
                t = math.log(max_contributions / c0) / math.log(c1 / c0)
                return tuple(x + t * (y - x) for x, y in zip(a, b, strict=True))  # type: ignore[return-value]
        return pts[-1][1:]


def _constant(factor: float, low: float, high: float) -> Model:
    return Model(((1, factor, low, high),))


MODELS: Mapping[str, Model] = {
    "basic": _constant(1.0, 1.0, 1.0),
    "mad": _constant(1.04, 1.0, 1.1),
    "dp-sips": _constant(1.5, 1.25, 1.6),
    "mad2r": Model(
        (
            (1, 0.8, 0.35, 0.95),
            (3, 1.15, 0.95, 1.25),
            (10, 1.3, 1.1, 1.4),
            (30, 1.4, 1.1, 1.7),
        )
    ),
}
"""The preview's model of each algorithm, relative to Basic's expected items at the same Δ0
and the release's (ε, δ): Basic exactly; MAD ≥ Basic in distribution on the same capped data
(Chen et al. 2025, Thm. C.1); DP-SIPS and MAD2R from their measured ratios, MAD2R's by Δ0:
below Basic at Δ0 = 1 (no excess weight to reroute, its first round at a tenth of ε), rising
to a plateau from Δ0 ≈ 30 (docs/design/tuning.md#measured)."""


@dataclass(frozen=True)
class PreviewStatistic(PureDp):
    """Basic's expected released items at one candidate Δ0, released with exact discrete
    Laplace noise (pure ε_c-DP: :class:`~spark_dp.dp.protocol.PureDp`).

    Attributes:
        epsilon: ε_c, this statistic's share of the preview's ε.
        basic: Basic's calibration of the previewed release at Δ0 = c (its σ and ρ(c)).
    """

    epsilon: float
    basic: WeightAndThreshold

    @property
    def max_contributions(self) -> int:
        """The candidate Δ0."""
        return self.basic.max_contributions

    @property
    def sensitivity(self) -> float:
        """Δ(c) of s(c), in items (docs/design/tuning.md#sensitivity)."""
        return score_sensitivity(self.max_contributions, self.basic.sigma)

    @property
    def sensitivity_units(self) -> int:
        """⌈Q·Δ(c)⌉ + 1: the sensitivity of ⌊Q·s(c)⌋ (the floor adds at most one unit)."""
        return math.ceil(QUANTUM * self.sensitivity) + 1

    @property
    def scale(self) -> float:
        """The noise scale, in items."""
        return self.sensitivity_units / (QUANTUM * self.epsilon)

    def release(self, total: int, noise: DriverNoise) -> float:
        """Ŝ(c) from the exact score total (Σ of 2^32-scaled terms), with its noise."""
        units = total * QUANTUM // TERM_SCALE
        scale = Fraction(self.sensitivity_units) / Fraction(self.epsilon)
        return (units + noise.discrete_laplace(scale)) / QUANTUM

    def noise_bound(self) -> float:
        """x with P[|noise| ≥ x] ≤ α: the discrete Laplace tail is 2·e^(−x/b)/(1 + e^(−1/b))."""
        return self.scale * math.log(2.0 / ALPHA)

    def to_report(self) -> dict[str, Any]:
        """Public description: the statistic, its sensitivity and its noise."""
        return {
            "mechanism": "discrete Laplace (exact sampler)",
            "statistic": "Basic's expected released items at Δ0 = c: Σ_i Φ((w_i(c) − ρ(c))/σ) "
            "− Φ(−ρ(c)/σ), in units of 1/64 item",
            "max_contributions": self.max_contributions,
            "score_sigma": self.basic.sigma,
            "score_rho": self.basic.rho,
            "sensitivity": self.sensitivity,
            "scale_items": self.scale,
        }


@dataclass(frozen=True)
class PreviewPlan(StepTotals):
    """The data-free plan of a preview: one statistic per candidate, ε split ∝ Δ(c).

    Attributes:
        statistics: one per candidate, in grid order.
        algorithms: the algorithms predicted.
        release: the previewed release's (ε, δ).
    """

    statistics: tuple[PreviewStatistic, ...]
    algorithms: tuple[str, ...]
    release: Budget

    @property
    def algorithm(self) -> str:
        """What the release is named after."""
        return "preview"

    @property
    def candidates(self) -> tuple[int, ...]:
        """The grid of Δ0."""
        return tuple(s.max_contributions for s in self.statistics)

    @property
    def steps(self) -> tuple[Step[PreviewStatistic], ...]:
        """One pure ε_c-DP statistic per candidate."""
        return tuple(
            Step(f"Basic's expected items at Δ0 = {s.max_contributions}", s)
            for s in self.statistics
        )

    def to_report(self) -> list[dict[str, Any]]:
        """One row per statistic."""
        return [s.to_report() for s in self.steps]


def plan_preview(params: PreviewParams) -> PreviewPlan:
    """ε_c = ε_p·U_c/Σ_j U_j with U_c = ⌈Q·Δ(c)⌉ + 1 (the sensitivity in units): every
    candidate's estimate gets the same noise scale, Σ_j U_j/(Q·ε_p) items."""
    release = Budget(params.release_epsilon, params.release_delta)
    basics = [WeightAndThreshold.for_budget(release, c) for c in params.tuning_candidates]
    units = [PreviewStatistic(params.epsilon, b).sensitivity_units for b in basics]
    statistics = tuple(
        PreviewStatistic(params.epsilon * u / sum(units), b)
        for u, b in zip(units, basics, strict=True)
    )
    return PreviewPlan(statistics, params.algorithms, release)


@dataclass(frozen=True)
class Prediction:
    """Predicted released items of one (algorithm, Δ0), with its interval."""

    algorithm: str
    max_contributions: int
    items: float
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (released values and public constants only)."""
        return {
            "algorithm": self.algorithm,
            "max_contributions": self.max_contributions,
            "predicted_items": round(self.items, 1),
            "interval": [round(self.low, 1), round(self.high, 1)],
        }


def predict(plan: PreviewPlan, estimates: tuple[float, ...]) -> list[Prediction]:
    """The predictions: post-processing of the released Ŝ(c) and public constants."""
    out = []
    for algorithm in plan.algorithms:
        model = MODELS[algorithm]
        for stat, s in zip(plan.statistics, estimates, strict=True):
            point = max(0.0, s)
            spread = stat.noise_bound() + 2.0 * math.sqrt(max(point, 1.0))
            low, high = max(0.0, point - spread), point + spread
            factor, low_factor, high_factor = model.at(stat.max_contributions)
            out.append(
                Prediction(
                    algorithm,
                    stat.max_contributions,
                    factor * point,
                    low_factor * low,
                    high_factor * high,
                )
            )
    return out


SIMPLICITY = ("basic", "mad", "dp-sips", "mad2r")
"""The algorithms from simplest and cheapest to most involved, the order that breaks a tie:
Basic (one pass of Gaussian weights), MAD (one pass, excess weight rerouted), DP-SIPS (Basic
repeated over rounds, one pass each), MAD2R (MAD over two rounds with a biased second round)."""

RULE = (
    "most predicted items (whole items, as printed); a tie goes to the simpler algorithm "
    "(basic, mad, dp-sips, mad2r), then to the smaller Δ0"
)
"""How the best row of each algorithm and the recommendation are chosen."""


def _rank(p: Prediction) -> tuple[int, int, int]:
    simplicity = SIMPLICITY.index(p.algorithm) if p.algorithm in SIMPLICITY else len(SIMPLICITY)
    return (-round(p.items), simplicity, p.max_contributions)


def best_rows(predictions: list[Prediction]) -> list[Prediction]:
    """Each algorithm's row with the most predicted items (:data:`RULE`), in first-seen order.

    Post-processing of released predictions only."""
    by: dict[str, Prediction] = {}
    for p in predictions:
        if p.algorithm not in by or _rank(p) < _rank(by[p.algorithm]):
            by[p.algorithm] = p
    return list(by.values())


def recommend(predictions: list[Prediction]) -> Prediction:
    """The (algorithm, Δ0) with the most predicted items, ties to the simpler algorithm and then
    to the smaller Δ0 (:data:`RULE`)."""
    return min(predictions, key=_rank)


@dataclass
class Preview:
    """A preview that ran: its plan, the released estimates and the predictions.

    Attributes:
        plan: the preview's plan.
        estimates: Ŝ(c) per candidate (released).
        predictions: one per (algorithm, candidate).
    """

    plan: PreviewPlan
    estimates: tuple[float, ...]
    predictions: list[Prediction] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.predictions:
            self.predictions = predict(self.plan, self.estimates)

    @property
    def best(self) -> list[Prediction]:
        """The best row of each algorithm, in the plan's order (:func:`best_rows`)."""
        return best_rows(self.predictions)

    @property
    def recommended(self) -> Prediction:
        """The best of the best rows (:func:`recommend`)."""
        return recommend(self.predictions)

    def to_dict(self) -> dict[str, Any]:
        """The preview's output (released values and public constants): the whole grid in
        ``predictions``, each algorithm's best row in ``best``."""
        best = self.recommended
        release = self.plan.release
        return {
            "release": {"epsilon": release.epsilon, "delta": release.delta},
            "preview_epsilon": self.plan.epsilon,
            "estimates": {
                str(c): round(s, 2)
                for c, s in zip(self.plan.candidates, self.estimates, strict=True)
            },
            "predictions": [p.to_dict() for p in self.predictions],
            "best": [p.to_dict() for p in self.best],
            "recommended": {
                "algorithm": best.algorithm,
                "max_contributions": best.max_contributions,
                "rule": RULE,
            },
            "model": "docs/design/tuning.md#preview-models",
        }

    def table(self, *, all_rows: bool = False) -> str:
        """The predictions as a text table, the recommendation last (:func:`preview_table`)."""
        return preview_table(self.to_dict(), all_rows=all_rows)

    def fill_report(self, report: PrivacyReport) -> None:
        """Book every statistic's budget and the released preview."""
        report.algorithm = "preview"
        report.mechanism = {
            "algorithm": "preview",
            "statistics": "Basic's expected released items per candidate Δ0 (exact discrete "
            "Laplace); predictions are post-processing",
            "reference": "docs/design/tuning.md#preview",
        }
        for step, estimate in zip(self.plan.steps, self.estimates, strict=True):
            report.spend_step(step, released_estimate=round(estimate, 2))
        report.outputs["preview"] = self.to_dict()


def preview_view(doc: Mapping[str, Any], *, all_rows: bool = False) -> dict[str, Any]:
    """What the preview prints with ``--json``: its output (:meth:`Preview.to_dict`, as in its
    report) with ``predictions`` holding each algorithm's best row, or the whole grid with
    ``--all`` (``rows`` says which)."""
    view = {k: v for k, v in doc.items() if k != "best"}
    if not all_rows:
        view["predictions"] = list(doc["best"])
    view["rows"] = "all" if all_rows else "best per algorithm"
    return view


def preview_table(doc: Mapping[str, Any], *, all_rows: bool = False) -> str:
    """The text table of a preview's output (:meth:`Preview.to_dict`, as in its report): a
    header saying what the preview spent (``--epsilon``) and the release its predictions are
    for (``--release-epsilon``, ``--release-delta``), which are not the same budget; each
    algorithm's best row (the whole grid with ``all_rows``); the recommendation and its rule."""
    release = doc["release"]
    view = preview_view(doc, all_rows=all_rows)
    which = "every (algorithm, Δ0)" if all_rows else "the best Δ0 of each algorithm (--all: all)"
    lines = [
        f"preview: spent ε={doc['preview_epsilon']:g} (--epsilon, pure ε-DP, charged like any "
        f"release); predictions for a release at ε={release['epsilon']:g}, "
        f"δ={release['delta']:g} (--release-epsilon, --release-delta)",
        f"predicted released items, {which} (intervals: the DP noise at 95%, the release's "
        "own randomness and the model's measured range)",
        f"{'algorithm':10s} {'Δ0':>6s} {'items':>9s}  interval",
    ]
    for p in view["predictions"]:
        low, high = p["interval"]
        lines.append(
            f"{p['algorithm']:10s} {p['max_contributions']:6d} {p['predicted_items']:9.0f}  "
            f"[{low:.0f}, {high:.0f}]"
        )
    best = doc["recommended"]
    lines.append(
        f"recommended: --algorithm {best['algorithm']} --max-contributions "
        f"{best['max_contributions']}  ({best['rule']})"
    )
    return "\n".join(lines) + "\n"


def preview_statistics(
    pairs: DataFrame, plan: PreviewPlan, randomness: Randomness, *, timer: StageTimer
) -> Preview:
    """Rank and cap the pairs once, score every candidate in one pass, release the estimates.

    Args:
        pairs: (user_id, item); a repeated pair counts once.
        plan: the preview's plan.
        randomness: the preview's bound randomness (ranking: child("capping", 1), as a
            release's cap; noise: child("preview")).
        timer: stage logger (names and seconds only).
    """
    candidates = plan.candidates
    with timer.stage("preview statistics", candidates=len(candidates)):
        ranked = ranked_cap(pairs, max(candidates), randomness.child("capping", 1))
        totals = score_totals(
            candidate_weights(ranked, candidates), [s.basic for s in plan.statistics]
        )
        noise = randomness.child("preview").driver()
        estimates = tuple(s.release(t, noise) for s, t in zip(plan.statistics, totals, strict=True))
    return Preview(plan, estimates)
