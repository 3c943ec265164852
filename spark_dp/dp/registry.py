"""One registry per family: algorithm name → (plan, run).

A family's registry is the single list of its algorithms. The job, ``spark-dp calibrate``, the
audit and the benchmark read it; nothing else spells the algorithm names or branches on them.

* ``plan(params)`` computes, without reading any data, everything an algorithm calibrates from
  its public parameters (σ, ρ, thresholds, budget split) and returns the family's plan object;
* ``run(data, plan, randomness, **options)`` runs the algorithm with that plan and returns the
  family's result, which fills the privacy report itself
  (:class:`spark_dp.report.Release`).

Adding an algorithm is one :class:`Algorithm` entry in the family's ``registry.py`` plus the
module that implements its ``plan`` and ``run``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from spark_dp.errors import ParameterError

__all__ = ["Algorithm", "Registry"]

ParamsT = TypeVar("ParamsT")
PlanT = TypeVar("PlanT")


@dataclass(frozen=True)
class Algorithm(Generic[ParamsT, PlanT]):
    """One registered algorithm.

    Attributes:
        name: the name users pass (``--algorithm NAME``).
        summary: one line for ``--help`` and the docs.
        plan: ``plan(params) -> plan``: data-free calibration from the public parameters.
        run: ``run(data, plan, randomness, **options) -> result``.
    """

    name: str
    summary: str
    plan: Callable[[ParamsT], PlanT]
    run: Callable[..., Any]


class Registry(Generic[ParamsT, PlanT]):
    """The algorithms of one family, in a fixed order (the order of ``--help`` and tables)."""

    def __init__(self, family: str, algorithms: Iterable[Algorithm[ParamsT, PlanT]]) -> None:
        self.family = family
        self._by_name: dict[str, Algorithm[ParamsT, PlanT]] = {}
        for algorithm in algorithms:
            if algorithm.name in self._by_name:
                raise ValueError(f"{family}: algorithm {algorithm.name!r} registered twice")
            self._by_name[algorithm.name] = algorithm

    @property
    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._by_name)

    def __getitem__(self, name: str) -> Algorithm[ParamsT, PlanT]:
        try:
            return self._by_name[name]
        except KeyError:
            hint = difflib.get_close_matches(str(name), list(self._by_name), n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ParameterError(
                f"unknown {self.family} algorithm {name!r}{extra} (known: {', '.join(self.names)})"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[Algorithm[ParamsT, PlanT]]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def summaries(self) -> str:
        """``name: summary`` lines, for ``--help`` texts."""
        return "; ".join(f"{a.name}: {a.summary}" for a in self)
