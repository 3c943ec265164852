"""The privacy report: a JSON account of what a job released and what it spent.

Filled by the objects that did the work, so nobody re-describes a mechanism by hand:

* a **calibration** (the :class:`~spark_dp.dp.protocol.Calibration` protocol) states
  its own mechanism, sensitivity and constants;
* a family's **plan** (:class:`Plan`: computed once per run from the checked parameters, before
  any data is read) pairs each calibration with a label as a :class:`Step` (a round, the GEM
  choice, a Laplace release); :meth:`PrivacyReport.spend_step` books it;
* a family's **result** (:class:`Release`) writes its steps, mechanism description and released
  values into the report with ``fill_report``; the job runner adds parameters, randomness and
  versions.

It holds only public values: parameters, calibrated constants (σ, ρ, thresholds, GEM details),
the budget spent per step, the randomness mode and key fingerprint, sizes of *released* outputs
and versions. Never private statistics, never a key or a seed, and no timings (wall seconds
depend on the data; they go to the log only). The one seed a report may hold is the ``generate``
job's ``dataset.seed``: the recipe of public synthetic data, not a noise key.

A job writes its report last, when its outputs are in place (:mod:`spark_dp.io.staging`): **a
report's presence marks a complete release**. ``release.kind`` says whether it is a normal
release or a debugging run (``--unsafe-debug-logs``, the distinct count's ``--debug-report``),
which a reader must not treat as one.
"""

from __future__ import annotations

import datetime as _dt
import platform
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from spark_dp import __version__
from spark_dp.dp.protocol import Calibration
from spark_dp.io import json_text, write_json_atomic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "BudgetEntry",
    "Plan",
    "PrivacyReport",
    "Release",
    "Step",
    "StepTotals",
    "software_versions",
]


C_co = TypeVar("C_co", bound=Calibration, covariant=True)


@dataclass(frozen=True)
class Step(Generic[C_co]):
    """One budget-spending step of a plan: a label and the calibration that spends it (typed
    by the protocol its readers need, e.g. ``Step[RoundCalibration]`` for a selection round)."""

    label: str
    calibration: C_co

    @property
    def epsilon(self) -> float:
        """ε of the step."""
        return float(self.calibration.epsilon)

    @property
    def delta(self) -> float:
        """δ of the step."""
        return float(self.calibration.delta)

    def to_report(self) -> dict[str, Any]:
        """Label, (ε, δ) and the calibration's own description."""
        return {
            **self.calibration.to_report(),
            "label": self.label,
            "epsilon": self.epsilon,
            "delta": self.delta,
        }


class Plan(Protocol):
    """A family's data-free plan: what its algorithm is called and the steps that spend the
    budget (none for contribution bounding). The job runner computes it once, reserves its
    steps' (ε, δ) and hands it to the algorithm."""

    @property
    def algorithm(self) -> str: ...

    @property
    def steps(self) -> Sequence[Step[Calibration]]: ...


class _HasSteps(Protocol):
    @property
    def steps(self) -> Sequence[Step[Calibration]]: ...


class StepTotals:
    """Mixin of a plan with ``steps``: its total (ε, δ) by basic composition over them."""

    @property
    def epsilon(self: _HasSteps) -> float:
        """Total ε (basic composition over the steps)."""
        return sum(s.epsilon for s in self.steps)

    @property
    def delta(self: _HasSteps) -> float:
        """Total δ (basic composition over the steps)."""
        return sum(s.delta for s in self.steps)


class Release(Protocol):
    """What a family's run returns: it writes its own account into a report."""

    def fill_report(self, report: PrivacyReport) -> None: ...


@dataclass(frozen=True)
class BudgetEntry:
    """Privacy spent by one step (a round, a selection, a release)."""

    label: str
    epsilon: float
    delta: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "epsilon": self.epsilon, "delta": self.delta, **self.details}


def software_versions() -> dict[str, str]:
    """Versions of Python, spark_dp and the numeric stack (pyspark when importable)."""
    out = {"spark_dp": __version__, "python": platform.python_version()}
    for mod in ("pyspark", "numpy", "scipy", "pandas", "pyarrow"):
        m = sys.modules.get(mod)
        if m is None:
            try:
                m = __import__(mod)
            except ImportError:
                continue
        out[mod] = getattr(m, "__version__", "unknown")
    return out


class PrivacyReport:
    """Builder for a job's JSON report.

    Args:
        job: job name (``partition_selection``, ...).
        guarantee: one sentence: the DP notion and the neighbouring relation.
    """

    def __init__(self, job: str, guarantee: str = "") -> None:
        self.job = job
        self.guarantee = guarantee
        self.algorithm: str | None = None
        self.parameters: dict[str, Any] = {}
        self.mechanism: dict[str, Any] = {}
        self.budget: list[BudgetEntry] = []
        self.randomness: dict[str, Any] = {}
        self.outputs: dict[str, Any] = {}
        self.notes: list[str] = []
        self.release_id = uuid.uuid4().hex
        self.unsafe_debug: list[str] = []
        self.extra: dict[str, Any] = {}
        self.spark: dict[str, Any] = {}
        self.certificate: dict[str, Any] | None = None

    def spend(self, label: str, epsilon: float, delta: float = 0.0, **details: Any) -> None:
        """Record the budget one step spends (basic composition sums the entries)."""
        self.budget.append(BudgetEntry(label, float(epsilon), float(delta), details))

    def spend_step(self, step: Step, **released: Any) -> None:
        """Book a plan step: its (ε, δ) and its calibration's description, plus released
        values of the step (e.g. the number of items it selected)."""
        details = {k: v for k, v in step.to_report().items() if k not in ("label", "epsilon")}
        details.pop("delta", None)
        self.spend(step.label, step.epsilon, step.delta, **details, **released)

    def mark_unsafe(self, reason: str) -> None:
        """Record an unsafe debugging switch: the run is then not a normal release."""
        self.unsafe_debug.append(reason)

    def note(self, sentence: str) -> None:
        """Append one plain sentence describing a step that ran."""
        self.notes.append(sentence)

    def certify(self, epsilon: float, delta: float, **description: Any) -> None:
        """The release's (ε, δ) proven by a tight composition of its steps (below their sum):
        it replaces the sum in ``epsilon_spent``/``delta_spent``; ``description`` (public
        constants, with a ``composition`` sentence) goes into the report."""
        self.certificate = {"epsilon": float(epsilon), "delta": float(delta), **description}

    @property
    def epsilon_spent(self) -> float:
        """The certified ε, else Σ ε over the budget entries (basic composition)."""
        if self.certificate is not None:
            return self.certificate["epsilon"]
        return float(sum(b.epsilon for b in self.budget))

    @property
    def delta_spent(self) -> float:
        """The certified δ, else Σ δ over the budget entries (basic composition)."""
        if self.certificate is not None:
            return self.certificate["delta"]
        return float(sum(b.delta for b in self.budget))

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        privacy: dict[str, Any] = {
            "guarantee": self.guarantee,
            "epsilon_spent": self.epsilon_spent,
            "delta_spent": self.delta_spent,
            "composition": "basic (sum over steps)",
            "steps": [b.to_dict() for b in self.budget],
        }
        if self.certificate is not None:
            privacy["composition"] = self.certificate.get("composition", "tight")
            privacy["certificate"] = dict(self.certificate)
        if self.mechanism:
            privacy["mechanism"] = self.mechanism
        release: dict[str, Any] = {"id": self.release_id, "kind": "normal"}
        if self.unsafe_debug:
            release["kind"] = "debug: NOT a normal release"
            release["unsafe_debug"] = list(self.unsafe_debug)
        out: dict[str, Any] = {
            "job": self.job,
            "release": release,
            "algorithm": self.algorithm,
            "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "parameters": self.parameters,
            "privacy": privacy,
            "randomness": self.randomness,
            "outputs": self.outputs,
        }
        out.update(self.extra)
        out["notes"] = self.notes
        out["software"] = software_versions()
        if self.spark:
            out["spark"] = self.spark
        return out

    def write(self, path: str | None, *, spark: SparkSession | None = None) -> None:
        """Write the report atomically to ``path``, or to stdout when ``path`` is ``None``."""
        if path is None:
            sys.stdout.write(self.to_json())
            sys.stdout.flush()
            return
        write_json_atomic(self.to_dict(), path, overwrite=True, spark=spark)

    def to_json(self) -> str:
        """The report as indented JSON text."""
        return json_text(self.to_dict())
