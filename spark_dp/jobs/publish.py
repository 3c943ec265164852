"""The boundary of a run: what leaves it, and what each thing that leaves may depend on.

docs/privacy/boundary.md states the contract.
"""

from __future__ import annotations

__all__ = ["CONFIDENTIAL_REPORT_FIELDS", "PUBLIC_REPORT_FIELDS"]

PUBLIC_REPORT_FIELDS: tuple[tuple[str, ...], ...] = (
    ("created_utc",),
    ("release", "id"),
    ("spark", "application_id"),
    ("budget", "run"),
    ("outputs", "output_items"),
    ("privacy", "steps", "*", "output_items"),
    ("privacy", "steps", "*", "chosen_max_contributions"),
    ("privacy", "steps", "*", "released_estimate"),
    ("privacy", "mechanism", "max_contributions"),
    ("parameters", "max_contributions_chosen"),
    ("outputs", "preview"),
    ("estimate",),
    ("ell",),
    ("lower_bound",),
    ("lower_bound_clamped",),
)
"""The fields of a report that may differ between two runs on neighbouring inputs: the time,
the run's ids, and the release itself (released sizes and values). ``*``: every element of a
list."""

CONFIDENTIAL_REPORT_FIELDS: tuple[tuple[str, ...], ...] = (
    ("selected",),
    ("rounds",),
    ("max_degree",),
    ("contribution_bounding",),
    ("privacy", "mechanism", "contribution_bound_k"),
    ("privacy", "mechanism", "dataset_size"),
)
"""The fields of a confidential report (contribution bounding's) that hold counts of the
hypergraph: like its outputs, they are not released."""
