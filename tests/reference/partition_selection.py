"""Independent in-memory reference of the partition-selection weightings (tests only).

Plain Python, one user and one item at a time, written from the pseudocode of Chen et al.
2025 (Alg. 2-4 ICML / Alg. 2, 3, 5 arXiv) and docs/design/selection.md#basic, without
importing spark_dp. Datasets are ``{user: set(items)}``, already capped; biases are
``{item: b}`` (missing = 1). Weights are ``{item: w}``.
"""

from __future__ import annotations

import math

TOL = 1e-12


def basic_weights(sets: dict) -> dict:
    """w(i) = Σ_{u ∋ i} 1/√d_u."""
    w: dict = {}
    for items in sets.values():
        for i in items:
            w[i] = w.get(i, 0.0) + 1.0 / math.sqrt(len(items))
    return w


def laplace_weights(sets: dict) -> dict:
    """w(i) = Σ_{u ∋ i} 1/d_u."""
    w: dict = {}
    for items in sets.values():
        for i in items:
            w[i] = w.get(i, 0.0) + 1.0 / len(items)
    return w


def user_weights(items, bias: dict, b_min: float, b_max: float) -> dict:
    """UserWeights(S_u, b, b_min, b_max), literally, with the float safeguards of
    docs/design/selection.md#user-weights-float."""
    items = list(items)
    d = len(items)
    root = math.sqrt(d)
    wb = {}
    biased = [i for i in items if bias.get(i, 1.0) < 1.0]
    unbiased = [i for i in items if bias.get(i, 1.0) >= 1.0]
    for i in biased:
        wb[i] = max(b_min, bias[i]) / root
    k = sum(wb[i] ** 2 for i in biased)
    for i in unbiased:
        wb[i] = min(b_max / root, math.sqrt((1.0 - k) / len(unbiased)))
    for _ in range(d + 1):
        total = sum(v * v for v in wb.values())
        if total >= 1.0 - TOL:
            break
        small = [i for i in items if wb[i] < (1.0 - TOL) / root]
        if not small:
            break
        small_sq = sum(wb[i] ** 2 for i in small)
        c = min(
            (b_max / root) / max(wb[i] for i in small),
            math.sqrt(1.0 + (1.0 - total) / small_sq),
        )
        for i in small:
            wb[i] *= c
    return wb


def mad_parts(sets: dict, tau: float, d_max: int, bias=None, b_min=1.0, b_max=1.0) -> dict:
    """MAD (Alg. 2 ICML) with its intermediate vectors: init, trunc, reroute, final."""
    bias = bias or {}
    alpha = b_min - 1.0 / (2.0 * math.sqrt(d_max))
    d_lo = math.ceil(1.0 / b_min**2)
    adaptive = {u for u, s in sets.items() if d_lo <= len(s) <= d_max}
    init: dict = {}
    for u in adaptive:
        for i in sets[u]:
            init[i] = init.get(i, 0.0) + 1.0 / len(sets[u])
    r = {i: max(0.0, (v - tau) / v) if v > 0 else 0.0 for i, v in init.items()}
    trunc = {i: min(v, tau) for i, v in init.items()}
    reroute: dict = {}
    for u in adaptive:
        e = sum(r[i] for i in sets[u]) / len(sets[u])
        for i in sets[u]:
            reroute[i] = reroute.get(i, 0.0) + alpha * e / d_max
    w = {i: trunc.get(i, 0.0) + reroute.get(i, 0.0) for s in sets.values() for i in s}
    for u, s in sets.items():
        wb = user_weights(s, bias, b_min, b_max)
        for i in s:
            w[i] += wb[i] - (1.0 / len(s) if u in adaptive else 0.0)
    return {"init": init, "trunc": trunc, "reroute": reroute, "w": w}


def mad_weights(sets: dict, tau: float, d_max: int, bias=None, b_min=1.0, b_max=1.0) -> dict:
    """MAD item weights."""
    return mad_parts(sets, tau, d_max, bias, b_min, b_max)["w"]


def round_two(noisy: dict, sigma1: float, rho1: float, rho2: float, c_lb: float, c_ub: float):
    """MAD2R round-2 preprocessing: (found U1, removed U_low, biases of the kept items)."""
    found = {i for i, v in noisy.items() if v >= rho1}
    low = {i for i, v in noisy.items() if v + c_ub * sigma1 < rho2}
    bias = {}
    for i, v in noisy.items():
        if i in found or i in low:
            continue
        lb = max(0.0, v - c_lb * sigma1)
        bias[i] = 1.0 if lb == 0.0 else min(1.0, rho2 / lb)
    return found, low, bias


def l2_change(before: dict, after: dict) -> float:
    """‖w' − w‖₂ with both vectors zero-extended."""
    keys = set(before) | set(after)
    return math.sqrt(sum((after.get(i, 0.0) - before.get(i, 0.0)) ** 2 for i in keys))


def phi(x: float) -> float:
    """Φ(x), the standard normal CDF (from math.erfc)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def tuning_totals(ranked: dict, candidates, sigma: float, rhos) -> list:
    """The exact scores of the choice of Δ0, times 2^32 (docs/design/tuning.md#exact-sums).

    ``ranked`` is ``{user: [items in the order of its keyed ranking]}``; at candidate c every
    user keeps its first min(d, c) items, each pair contributes ⌊2^32/√min(d, c)⌋, and the
    score is Σ_i ⌊2^32·(Φ((W_i/2^32 − ρ)/σ) − Φ(−ρ/σ))⌋ (terms clipped to [0, 1]).
    """
    out = []
    for c, rho in zip(candidates, rhos, strict=True):
        weights: dict = {}
        for items in ranked.values():
            k = min(len(items), c)
            share = math.floor(2**32 / math.sqrt(k))
            for i in items[:k]:
                weights[i] = weights.get(i, 0) + share
        base = phi(-rho / sigma)
        terms = (phi((w / 2**32 - rho) / sigma) - base for w in weights.values())
        out.append(sum(math.floor(min(1.0, max(0.0, t)) * 2**32) for t in terms))
    return out
