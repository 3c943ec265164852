"""Job ``generate``: write a synthetic dataset as Parquet.

Kinds: ``regular`` and ``skewed`` hypergraphs (record_id, user_id) for contribution bounding
(docs/design/bounding.md#generators); ``zipf`` and ``heavy-light`` user item sets
(user_id, item) for partition selection and distinct count (docs/design/selection.md#heavy-light).
The data is a deterministic function of the parameters and ``--seed``; without a seed one is
drawn and written to the report (``dataset.seed``) so the data can be regenerated. That seed is
public metadata of public synthetic data, never a noise key: it is the one seed a report may
hold (the job reads no private data and spends no budget).
"""

from __future__ import annotations

import argparse
import secrets
import sys
from dataclasses import dataclass

from spark_dp.checks import check_choice, check_int_at_least, check_positive
from spark_dp.config import param
from spark_dp.generators.spark_frames import KINDS, hypergraph_frame, pairs_frame
from spark_dp.jobs.publish import write_rows
from spark_dp.jobs.runner import run_job
from spark_dp.jobs.spec import Answer, JobContext, JobSpec
from spark_dp.report import PrivacyReport

__all__ = ["GenerateParams", "main"]


@dataclass(frozen=True)
class GenerateParams:
    """Parameters of the ``generate`` job."""

    kind: str = param("zipf", "dataset kind", choices=KINDS)
    records: int = param(125_000, "records generated |E| (regular, skewed)")
    records_per_user: float = param(2.0, "expected records per user d_u (regular, skewed)")
    mean_size: float = param(2.0, "expected users per record μ (regular, skewed)")
    alpha: float = param(1.5, "preferential-attachment exponent (skewed)")
    users: int = param(100_000, "number of users (zipf, heavy-light)")
    mean_items: float = param(30.0, "mean word draws per user before de-duplication (zipf)")
    zipf_exponent: float = param(1.3, "tail exponent a > 1 of word popularity (zipf)")
    degree_sigma: float = param(1.0, "log-normal shape of user set sizes (zipf)")
    max_items: int = param(100_000, "largest user set (zipf)")
    light_items: int = param(1_000, "number of light items m (heavy-light)")

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        check_int_at_least("records", self.records, 1)
        check_positive("records_per_user", self.records_per_user)
        check_positive("mean_size", self.mean_size)
        check_positive("alpha", self.alpha)
        check_int_at_least("users", self.users, 1)
        check_positive("mean_items", self.mean_items)
        check_int_at_least("max_items", self.max_items, 1)
        check_int_at_least("light_items", self.light_items, 2)


def _execute(ctx: JobContext) -> str:
    p: GenerateParams = ctx.params
    seed = ctx.args.seed if ctx.args.seed is not None else secrets.randbits(31)
    with ctx.timer.stage("generate"):
        if p.kind in ("regular", "skewed"):
            df, desc = hypergraph_frame(
                ctx.spark,
                p.kind,
                n_records=p.records,
                records_per_user=p.records_per_user,
                mean_size=p.mean_size,
                alpha=p.alpha,
                seed=seed,
            )
        else:
            df, desc = pairs_frame(
                ctx.spark,
                p.kind,
                n_users=p.users,
                mean_items=p.mean_items,
                exponent=p.zipf_exponent,
                degree_sigma=p.degree_sigma,
                max_items=p.max_items,
                n_light=p.light_items,
                seed=seed,
            )
    rows = write_rows(ctx, df)
    desc["seed"] = seed
    desc["rows"] = rows
    if p.kind in ("regular", "skewed") and "empty_records" not in desc:
        kept = ctx.read_staged().select("record_id").distinct().count()
        desc["empty_records"] = p.records - kept
    ctx.report.guarantee = "none: synthetic public data"
    ctx.report.algorithm = f"generate {desc.get('generator', p.kind)}"
    ctx.report.extra["dataset"] = desc
    ctx.report.randomness = {"mode": "none: public synthetic data (its seed is dataset.seed)"}
    return f"{rows} rows of {p.kind} data written to {ctx.args.output}"


def _answer(report: PrivacyReport, args: argparse.Namespace) -> Answer:
    """What was written (synthetic public data: its size and seed are public)."""
    data, kind = report.extra["dataset"], report.parameters["kind"]
    where = args.output_table or args.output
    return Answer(
        f"wrote {data['rows']} rows of {kind} data to {where} (seed {data['seed']})",
        {
            "job": "generate",
            "kind": kind,
            "rows": data["rows"],
            "output": where,
            "seed": data["seed"],
        },
    )


SPEC = JobSpec(
    name="generate",
    description=__doc__.split("\n\n")[0],
    params_cls=GenerateParams,
    execute=_execute,
    needs_input=False,
    columns=(),
    uses_key=False,
    answer=_answer,
    examples=(
        "python jobs/generate.py --kind zipf --users 100000 --output data/zipf --seed 1",
        "spark-submit --py-files dist/spark_dp.zip jobs/generate.py --kind skewed "
        "--records 1000000 --records-per-user 4 --output data/skewed",
    ),
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``jobs/generate.py``."""
    return run_job(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
