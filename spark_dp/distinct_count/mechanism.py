"""The whole mechanism on a DataFrame: curve by method, release, and what a report may say.

Algorithm 1 (``exact``: DPDISTINCTCOUNT) and Algorithm 2 (``greedy``: DPAPPROXDISTINCTCOUNT) of
Knop & Steinke 2023 differ only in the curve c(D; ℓ); the release is the same
(:func:`spark_dp.distinct_count.release.dp_distinct_count`; spec distinct_count.md §3.5). The
method is fixed by configuration, never by the data (spec §2.4 C4, §8.1 A19: a failed exact
solve aborts, it never falls back to greedy).
"""

from __future__ import annotations

import numpy as np

from spark_dp.checks import check_choice
from spark_dp.distinct_count.dc_curve import exact_curve
from spark_dp.distinct_count.greedy_curve import greedy_curve
from spark_dp.distinct_count.release import (
    DPResult,
    selection_probabilities,
    utility_scores,
)

__all__ = [
    "ALGORITHMS",
    "METHODS",
    "budget_steps",
    "contribution_curve",
    "debug_payload",
    "mechanism_summary",
    "released_values",
]

METHODS = ("exact", "greedy")
ALGORITHMS = {
    "exact": "DPDistinctCount (Knop & Steinke 2023, Algorithm 1: exact max-flow curve)",
    "greedy": "DPApproxDistinctCount (Knop & Steinke 2023, Algorithm 2: greedy curve)",
}
_COUNT_FUNCTION = {
    "exact": "exact DC(D; ℓ) (max-flow)",
    "greedy": "greedy ĝ[ℓ] (maximal matching, fixed orders)",
}


def contribution_curve(pairs, method: str, ell_max: int, **exact_options) -> np.ndarray:
    """c(D; ℓ) for ℓ = 1..ℓ_max: :func:`exact_curve` or :func:`greedy_curve` (private).

    Args:
        pairs: distinct (user_id, item) pairs.
        method: ``exact`` or ``greedy``.
        ell_max: ℓ_max, public and data-independent.
        **exact_options: engineering options of :func:`exact_curve` (ignored by greedy).
    """
    check_choice("method", method, METHODS)
    if method == "exact":
        return exact_curve(pairs, ell_max, **exact_options).curve
    return greedy_curve(pairs, ell_max)


def budget_steps(release: DPResult) -> list[tuple[str, float, dict]]:
    """The two budget entries (label, ε, details): ε/2 GEM + ε/2 Laplace (Lemma 3.2)."""
    return [
        (
            "GEM selection of the contribution bound ℓ",
            release.epsilon_select,
            {
                "mechanism": "generalized exponential mechanism (Raskhodnikova-Smith)",
                "candidates": f"1..{release.ell_max}",
                "score": "q_ℓ = c(D;ℓ) − (2ℓ/ε)·ln(1/(2β))",
                "sensitivity": "Δ_ℓ = ℓ",
            },
        ),
        (
            "Laplace release of c(D; ℓ̂)",
            release.epsilon_count,
            {"mechanism": "Laplace", "sensitivity": release.ell, "scale": release.noise_scale},
        ),
    ]


def mechanism_summary(release: DPResult) -> dict:
    """Public description of the release for the privacy report (no data values)."""
    return {
        "count_function": _COUNT_FUNCTION[release.method],
        "epsilon_total": release.epsilon,
        "epsilon_select": release.epsilon_select,
        "epsilon_count": release.epsilon_count,
        "composition": "ε/2 (GEM) + ε/2 (Laplace) = ε",
        "lower_bound_shift": release.shift,
        "noise_scale": release.noise_scale,
        "neighbouring": "add or remove one person with all their items",
    }


def released_values(release: DPResult) -> dict:
    """Everything the job releases: the DP values and public parameters, nothing else."""
    return {
        "estimate": release.estimate,
        "ell": release.ell,
        "lower_bound": release.lower_bound,
        "lower_bound_clamped": release.lower_bound_clamped,
        "epsilon": release.epsilon,
        "beta": release.beta,
        "max_contribution": release.ell_max,
        "method": release.method,
    }


def debug_payload(curve, release: DPResult, true_count: int) -> dict:
    """The NON-PRIVATE debug record: curve, true count, scores and GEM probabilities."""
    q = utility_scores(curve, release.epsilon, release.beta)
    return {
        "NONPRIVATE": True,
        "warning": "NON-PRIVATE debug values computed from the raw data; do not publish",
        "method": release.method,
        "true_count": int(true_count),
        "curve": [int(v) for v in curve],
        "scores": q.tolist(),
        "argmax_score_ell": int(np.argmax(q)) + 1,
        "selection_probabilities": selection_probabilities(
            curve, release.epsilon, release.beta
        ).tolist(),
        "release": release.to_dict(),
    }
