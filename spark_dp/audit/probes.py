"""The audit's neighbouring datasets: one probe per worst case a mechanism's proof allows.

A probe is one pair of neighbours, per copy: D (``base``) and D' = D plus one user, the canary,
holding ``canary``; the audit runs the mechanism on ``runs`` copies of each and watches the
items of a few named groups (how many of each group one run released). Which items a canary
holds, and the datasets around them, follow the proof step each probe targets
(docs/privacy/audit.md#worst-cases):

* **novel** (every selection mechanism; t = 1, Δ0, the t attaining the threshold's maximum,
  and NOVEL_CAP_FACTOR·Δ0 items, capped to Δ0): a user whose items nobody else holds. The
  threshold ρ is calibrated so that t novel items of weight h(t) cross it with probability
  δ_threshold (Chen et al. 2025, proof of Thm. 3.3); the sizes are searched rather than read
  from the calibration's own arg-max, so a wrong arg-max cannot hide a wrong ρ.
* **epsilon item** (every selection mechanism): ``width`` items x, each held by ``fillers``
  users of degree 1 and by the canary: the canary adds the whole sensitivity (1 per item, k
  items for count thresholding at k per user). The fillers put the item where the claimed
  release probability moves most (:func:`~.placement.place_epsilon_item`): the Gaussian or
  Laplace mechanism's privacy loss is realised by a threshold event there (Neyman–Pearson).
* **reroute** (MAD): a canary holding a popular item z, truncated at τ with excess fraction
  r(z) ≥ REROUTE_EXCESS, and one other item, near the threshold or novel. MAD hands the
  canary's excess back as α·e_v/d_max on each of its items; Lemma B.3 (novel weight
  ≤ α/d_max·(1 − t/d_v) + 1/√d_v ≤ 1/√t) and the ℓ2 bound of Lemma B.6 rest on that divisor.
* **bias** (MAD2R with b_max > 1): an item x whose round-1 lower bound w̃1 − C_lb·σ1 sits at
  ρ2, held by L groups of users {x, y_l} whose y_l sit at ρ2 in round 2. Round 2 may read
  round 1 only through its noisy weights (Thm. B.1, post-processing); the canary moves x's
  weight by 1, which a bias computed from anything else than w̃1 turns into a deterministic
  change of every y_l.

Names are per copy (a copy prefixes them with its index, :mod:`.scenario`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from spark_dp.audit.scenario import NOVEL_PREFIX, Copies

__all__ = [
    "CANARY",
    "NOVEL_CAP_FACTOR",
    "REROUTE_EXCESS",
    "Probe",
    "bias_probe",
    "epsilon_probe",
    "novel_probes",
    "probe_copies",
    "reroute_probes",
]

CANARY = "canary"
"""The user that D' adds to D."""

NOVEL_CAP_FACTOR = 10
"""The largest novel canary holds this many times Δ0 items, so the cap itself is exercised."""

REROUTE_EXCESS = 0.9
"""The excess fraction r(z) = 1 − τ/w_init(z) of the reroute probe's popular item."""

Sets = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class Probe:
    """One pair of neighbouring datasets and the items the audit watches on it.

    Attributes:
        name: short name (``novel-2``, ``epsilon-item``, ``reroute-shared``, ``bias``).
        base: D, one copy: user → items.
        canary: the items of the user D' adds.
        watched: (group name, its items) in order; a run's outcome is how many items of each
            group it released.
        runs: copies of each of D and D'.
        targets: the proof step the probe targets (for the report and the docs).
    """

    name: str
    base: Sets
    canary: tuple[str, ...]
    watched: tuple[tuple[str, tuple[str, ...]], ...]
    runs: int
    targets: str

    def neighbour(self) -> dict[str, list[str]]:
        """D' = D + the canary."""
        sets = {u: list(items) for u, items in self.base.items()}
        sets[CANARY] = list(self.canary)
        return sets

    @property
    def novel(self) -> frozenset[str]:
        """The canary's items that nobody in D holds."""
        held = {i for items in self.base.values() for i in items}
        return frozenset(i for i in self.canary if i not in held)

    def group_kind(self, group: str) -> str:
        """``novel`` when every item of the group is novel, else ``shared``."""
        items = dict(self.watched)[group]
        return "novel" if set(items) <= self.novel else "shared"

    def to_report(self) -> dict[str, object]:
        """Public description (synthetic data: sizes are not private here)."""
        return {
            "name": self.name,
            "targets": self.targets,
            "users_in_D": len(self.base),
            "canary_items": len(self.canary),
            "novel_items": len(self.novel),
            "watched": {g: len(items) for g, items in self.watched},
            "runs_per_dataset": self.runs,
        }


def probe_copies(probes: Sequence[Probe]) -> Copies:
    """For each probe in order, ``runs`` copies of D then ``runs`` copies of D'."""
    groups: list[tuple[Sets, int]] = []
    for p in probes:
        groups += [(p.base, p.runs), (p.neighbour(), p.runs)]
    return Copies(tuple(groups))


def novel_probes(cap: int, argmax_t: int | None, runs: int) -> list[Probe]:
    """Novel canaries of t = 1, Δ0, the threshold's arg-max t and NOVEL_CAP_FACTOR·Δ0 items."""
    sizes = {1, cap, NOVEL_CAP_FACTOR * cap} | ({argmax_t} if argmax_t else set())
    out = []
    for t in sorted(sizes):
        items = tuple(f"{NOVEL_PREFIX}{k}" for k in range(t))
        capped = " (more than the cap Δ0)" if t > cap else ""
        out.append(
            Probe(
                f"novel-{t}",
                {},
                items,
                (("novel", items),),
                runs,
                f"threshold ρ against {t} novel items{capped} (proof of Thm. 3.3: union bound "
                "over the novel items)",
            )
        )
    return out


def epsilon_probe(fillers: int, width: int, runs: int) -> Probe:
    """``width`` shared items, each held by ``fillers`` users of degree 1 and by the canary."""
    items = ("x",) if width == 1 else tuple(f"x{j}" for j in range(width))
    base = {f"filler{j}-{k}": [x] for j, x in enumerate(items) for k in range(fillers)}
    return Probe(
        "epsilon-item",
        base,
        items,
        (("x", items),),
        runs,
        f"the noise: the canary adds its whole sensitivity to {width} item(s) of base weight "
        f"{fillers}, where the claimed release probability moves most",
    )


def reroute_probes(tau: float, fillers: int, runs: int) -> list[Probe]:
    """MAD's reroute worst cases: the canary {z, y} (y shared, at ``fillers`` users of degree
    1) and {z, novel0}, z truncated at τ with r(z) ≥ REROUTE_EXCESS."""
    popular = math.ceil(tau / (1.0 - REROUTE_EXCESS))
    holders = {f"z-holder{k}": ["z"] for k in range(popular)}
    shared = {**holders, **{f"filler{k}": ["y"] for k in range(fillers)}}
    novel = f"{NOVEL_PREFIX}0"
    return [
        Probe(
            "reroute-shared",
            shared,
            ("z", "y"),
            (("y", ("y",)),),
            runs,
            "MAD's ℓ2 bound (Lemma B.6): the canary's excess on a truncated item, re-sent as "
            "α·e_v/d_max to its item near the threshold",
        ),
        Probe(
            "reroute-novel",
            holders,
            ("z", novel),
            (("novel", (novel,)),),
            runs,
            "MAD's novel ℓ∞ bound (Lemma B.3): the canary's excess on a truncated item, re-sent "
            "onto its novel item",
        ),
    ]


def bias_probe(sigma1: float, rho2: float, c_lb: float, runs: int) -> Probe:
    """MAD2R's round-2 bias worst case (see the module docstring).

    Each y_l has n = round(√2·ρ2) holders {x, y_l} (round-2 weight n/√2 ≈ ρ2 unbiased);
    x's round-1 weight F + L·n/√2 (F fillers of degree 1) just reaches ρ2 + C_lb·σ1, where its
    bias starts to fall, and L is as large as that allows.
    """
    per_y = max(1, round(math.sqrt(2.0) * rho2))
    target = rho2 + c_lb * sigma1
    groups = max(1, math.floor(target * math.sqrt(2.0) / per_y))
    fillers = max(0, math.ceil(target - groups * per_y / math.sqrt(2.0)))
    ys = tuple(f"y{j}" for j in range(groups))
    base: dict[str, list[str]] = {f"filler{k}": ["x"] for k in range(fillers)}
    for j, y in enumerate(ys):
        base.update({f"holder{j}-{k}": ["x", y] for k in range(per_y)})
    return Probe(
        "bias",
        base,
        ("x",),
        (("y", ys),),
        runs,
        "MAD2R round 2 reads round 1 only through its noisy weights (Thm. B.1): x's lower "
        "bound at ρ2 biases every y_l by the canary's weight on x",
    )
