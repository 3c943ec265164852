"""Sequential in-memory oracles: PolicyGaussian and GreedyUpdate.

NOT SCALABLE. These run on the driver, one user at a time, with all weights in memory. They
exist for small data and for comparisons with the parallel algorithms (Table 2 of Chen et al.
2025 lists them as the sequential baselines); use the Spark mechanisms for real workloads.
Inputs above :data:`MAX_ORACLE_PAIRS` pairs are refused.

* PolicyGaussian (Gopi et al. 2020): σ and ρ as Basic (Gaussian, h(t) = 1/√t), Γ = ρ + β·σ.
  In a random user order, each user (capped at Δ0 by a uniform subsample) adds to its items
  with w(i) < Γ the vector min(1, Z)·g/Z, g_i = Γ − w(i), Z = ‖g‖₂: an ℓ2-bounded step
  towards Γ. Then Gaussian noise and w̃ ≥ ρ. docs/design/selection.md#oracles.
* GreedyUpdate (Carvalho et al. 2022): Laplace noise of scale 1/ε, ρ_GW = 1 + ln(1/(2δ))/ε,
  Γ = ρ_GW + β/ε (β in units of the Laplace scale, docs/design/selection.md#greedy-update-beta), no
  Δ0 cap. In a random user order, each user fills its items below Γ in decreasing order of their
  count in the user's multiset, spending an ℓ1 budget of 1. Then Laplace noise on the items with
  positive weight only, and w̃ ≥ ρ_GW. docs/design/selection.md#oracles.

GreedyUpdate's noise domain (issue 14 item 7). The prior authors' code, like this module's first
version, noised every item of the union. Without a Δ0 cap that is not (ε, δ)-DP: a user with t
items nobody else holds puts its budget on one of them and leaves t − 1 at weight 0, and each of
those crosses ρ_GW with probability δ·e^(−ε), so the chance of releasing one of them grows with
t (measured: 171 of 300 runs at δ = 1e-3, ε = 1 for a user with 2,000 unique items). With noise
on the positive weights only, a new user v spends its budget of 1 along its own order and a
novel item costs Γ > 1, so at most one novel item gets positive weight, at most 1, and it
crosses ρ_GW with probability ≤ ½·e^(−ε(ρ_GW − 1)) = δ: the whole δ, since the Laplace part is
pure ε-DP. That is the threshold of docs/design/selection.md#oracles. Caveat, not in the papers:
each user's update is monotone and ℓ1 non-expansive, so for a fixed user order adding v raises the
weights by at most 1 in ℓ1, but it can also give positive weight to items of *other* users that had
none (a user whose first items v filled reaches further down its list). Those items are not
noised without v, and the Laplace argument needs the same noised items on both sides; for a
fixed order each costs up to δ·e^(−ε). The random user order is part of the mechanism, and
exhaustive enumeration of the orders of small instances found no case above δ, but there is no
proof: GreedyUpdate is a comparison oracle here, not a release mechanism.

The user order and the subsample come from non-privacy streams of ``randomness``; the noise
from its ``noise`` stream, through the library's driver-side threshold step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from spark_dp.checks import check_nonnegative
from spark_dp.dp.calibration import Budget, check_sampler_delta, laplace_scale
from spark_dp.errors import InputContractError
from spark_dp.partition_selection.calibration import (
    WeightAndThreshold,
    laplace_thresholding_threshold,
)
from spark_dp.partition_selection.columns import ITEM, USER_ID
from spark_dp.partition_selection.thresholding import noisy_threshold_mask
from spark_dp.randomness import Randomness

__all__ = [
    "MAX_ORACLE_PAIRS",
    "OracleResult",
    "greedy_update",
    "greedy_update_histogram",
    "greedy_update_weights",
    "laplace_release",
    "policy_gaussian",
    "policy_gaussian_weights",
]

MAX_ORACLE_PAIRS = 10_000_000
"""Largest input (user, item) rows the in-memory oracles accept."""


@dataclass
class OracleResult:
    """Items released by a sequential oracle, and the public constants it used."""

    algorithm: str
    items: list[str]
    epsilon: float
    delta: float
    calibration: dict[str, Any] = field(default_factory=dict)


def _user_lists(pairs: pd.DataFrame) -> tuple[list[np.ndarray], np.ndarray]:
    """Integer item codes per user (duplicates kept) and the item names of the codes."""
    if len(pairs) > MAX_ORACLE_PAIRS:
        raise InputContractError(
            f"the in-memory oracles accept at most {MAX_ORACLE_PAIRS} pairs, got {len(pairs)}; "
            "use a Spark mechanism (basic, dp-sips, mad, mad2r) for data of this size"
        )
    missing = [c for c in (USER_ID, ITEM) if c not in pairs.columns]
    if missing:
        raise InputContractError(
            f"pairs need columns {USER_ID!r} and {ITEM!r}; missing {missing}, "
            f"present {list(pairs.columns)}"
        )
    if pairs[[USER_ID, ITEM]].isna().any().any():
        raise InputContractError("pairs hold null user ids or items; drop them first")
    codes, names = pd.factorize(pairs[ITEM].astype(str))
    users, _ = pd.factorize(pairs[USER_ID].astype(str))
    order = np.argsort(users, kind="stable")
    bounds = np.flatnonzero(np.diff(users[order])) + 1
    return np.split(codes[order], bounds) if len(order) else [], np.asarray(names, dtype=object)


def policy_gaussian_weights(
    user_items: list[np.ndarray],
    n_items: int,
    *,
    gamma: float,
    max_contributions: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """PolicyGaussian's sequential weights (see the module docstring).

    Args:
        user_items: per user, integer item codes in [0, n_items) (duplicates ignored).
        n_items: number of distinct items.
        gamma: the fill level Γ.
        max_contributions: Δ0.
        rng: non-privacy randomness for the user order and the subsample.

    Returns:
        (weights, present): the weight of every item code, and which codes are in some
        user's capped set.
    """
    w = np.zeros(n_items)
    present = np.zeros(n_items, dtype=bool)
    for u in rng.permutation(len(user_items)):
        items = np.unique(user_items[u])
        if len(items) > max_contributions:
            items = rng.choice(items, size=max_contributions, replace=False)
        present[items] = True
        gaps = gamma - w[items]
        open_ = gaps > 0
        if not open_.any():
            continue
        g = gaps[open_]
        z = math.sqrt(float(np.dot(g, g)))
        w[items[open_]] += g * (min(1.0, z) / z)
    return w, present


def policy_gaussian(
    pairs: pd.DataFrame,
    *,
    epsilon: float,
    delta: float,
    max_contributions: int,
    beta: float = 4.0,
    randomness: Randomness,
) -> OracleResult:
    """PolicyGaussian on in-memory pairs (NOT SCALABLE; see the module docstring).

    Args:
        pairs: pandas (user_id, item).
        epsilon: ε.
        delta: δ.
        max_contributions: Δ0.
        beta: Γ = ρ + β·σ (the paper uses 4).
        randomness: order, capping and noise streams.
    """
    check_nonnegative("beta", beta)
    cal = WeightAndThreshold.for_budget(Budget(epsilon, delta), max_contributions)
    gamma = cal.rho + beta * cal.sigma
    lists, names = _user_lists(pairs)
    w, present = policy_gaussian_weights(
        lists,
        len(names),
        gamma=gamma,
        max_contributions=max_contributions,
        rng=randomness.child("order").numpy_generator(),
    )
    keep = noisy_threshold_mask(
        w[present],
        distribution="gaussian",
        scale=cal.sigma,
        threshold=cal.rho,
        noise=randomness.child("noise", 1).driver(),
    )
    items = sorted(names[present][keep].tolist())
    return OracleResult(
        "policy-gaussian", items, cal.epsilon, cal.delta, {**cal.to_report(), "gamma": gamma}
    )


def greedy_update_weights(
    user_items: list[np.ndarray], n_items: int, *, gamma: float, rng: np.random.Generator
) -> np.ndarray:
    """GreedyUpdate's sequential weights (see the module docstring).

    Args:
        user_items: per user, integer item codes (a multiset: repeats raise the priority).
        n_items: number of distinct items.
        gamma: the fill level Γ.
        rng: non-privacy randomness for the user order and ties.

    Returns:
        the weight of every item code.
    """
    w = np.zeros(n_items)
    for u in rng.permutation(len(user_items)):
        items, counts = np.unique(user_items[u], return_counts=True)
        shuffle = rng.permutation(len(items))  # random order among equal counts
        items, counts = items[shuffle], counts[shuffle]
        budget = 1.0
        for i in items[np.argsort(-counts, kind="stable")]:
            cost = gamma - w[i]
            if cost <= 0.0:
                continue
            if cost < budget:
                w[i] = gamma
                budget -= cost
            else:
                w[i] += budget
                break
    return w


def greedy_update_histogram(
    pairs: pd.DataFrame,
    *,
    epsilon: float,
    delta: float,
    beta: float = 4.0,
    randomness: Randomness,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """GreedyUpdate's weights before noise, the item names, and its public constants.

    ρ_GW = 1 + ln(1/(2δ))/ε equals Laplace count thresholding's threshold with k = 1.

    Returns:
        (weights, names, calibration): the weight of every item of the union (private),
        their names, and {mechanism, scale, rho, gamma}.
    """
    check_nonnegative("beta", beta)
    budget = Budget(epsilon, delta)
    check_sampler_delta(budget, "laplace")
    scale = laplace_scale(budget)
    rho = laplace_thresholding_threshold(budget, 1)
    gamma = rho + beta * scale
    lists, names = _user_lists(pairs)
    w = greedy_update_weights(
        lists, len(names), gamma=gamma, rng=randomness.child("order").numpy_generator()
    )
    calibration = {"mechanism": "laplace", "scale": scale, "rho": rho, "gamma": gamma}
    return w, names, calibration


def greedy_update(
    pairs: pd.DataFrame,
    *,
    epsilon: float,
    delta: float,
    beta: float = 4.0,
    randomness: Randomness,
) -> OracleResult:
    """GreedyUpdate on in-memory pairs (NOT SCALABLE; see the module docstring).

    Laplace noise goes to the items with positive weight only (see the module docstring for
    why, and for what remains unproven).

    Args:
        pairs: pandas (user_id, item); repeated rows of a user raise that item's priority.
        epsilon: ε.
        delta: δ.
        beta: Γ = ρ_GW + β/ε (the paper uses 4).
        randomness: order and noise streams.
    """
    w, names, calibration = greedy_update_histogram(
        pairs, epsilon=epsilon, delta=delta, beta=beta, randomness=randomness
    )
    support = w > 0.0
    items = laplace_release(w[support], names[support], calibration, randomness)
    return OracleResult("greedy-update", items, float(epsilon), float(delta), calibration)


def laplace_release(
    weights: np.ndarray, names: np.ndarray, calibration: dict[str, Any], randomness: Randomness
) -> list[str]:
    """The names whose weight + Laplace(scale) noise reaches ρ (GreedyUpdate's last step).

    Args:
        weights: the noised items' weights (private).
        names: their names.
        calibration: {scale, rho} from :func:`greedy_update_histogram`.
        randomness: the run's randomness (noise from its ``noise`` stream).
    """
    keep = noisy_threshold_mask(
        weights,
        distribution="laplace",
        scale=calibration["scale"],
        threshold=calibration["rho"],
        noise=randomness.child("noise", 1).driver(),
    )
    return sorted(names[keep].tolist())
