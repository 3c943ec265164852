"""Which arguments of a job enter its release id: all of them, but an explicit allow-list.

A release id must change with every argument that can change the output (a column name, null
handling, the input format, a component method, a capacity column, ...), so it is derived from
the **effective** arguments of the run: every parameter as resolved from defaults, the config
file and the command line, and every other flag of the job's parser, minus :data:`NOT_IN_RELEASE`.
A flag added later is therefore covered by default; leaving one out takes an entry here with
its reason, and ``tests/test_release_binding.py`` checks both ways: every other flag of every
job changes the id, and every listed one leaves the release unchanged.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from spark_dp.config import params_to_dict
from spark_dp.io.probe import input_format
from spark_dp.jobs.cli_args import build_parser

if TYPE_CHECKING:
    from spark_dp.jobs.run import Run

__all__ = ["NOT_IN_RELEASE", "release_arguments"]

NOT_IN_RELEASE: dict[str, str] = {
    "help": "prints the usage; no run",
    # where the run reads: each table enters the request and the release id through its input
    # identity (location and listing) and the release id through its content digest
    "input": "a table: its input identity and content digest are in the ids",
    "capacities": "a table: its input identity and content digest are in the ids",
    "record_weights": "a table: its input identity and content digest are in the ids",
    "config": "a path; the values it sets are in the resolved parameters",
    "input_table": "a table: its location's input identity and content digest are in the ids",
    "input_version": "the Delta version read (given or the latest) is in the input identity",
    # where the run writes: the same release may be written anywhere
    "output": "where the release is written, not what it is",
    "output_table": "where the release is written, not what it is",
    "output_format": "how the release is written (Parquet or Delta files), not what it is",
    "report": "where the report is written",
    "user_state": "where the user state is written",
    "work_dir": "where the resumable state is kept",
    "keep_work_dir": "whether the work directory is kept after the commit",
    "debug_report": "an extra NON-PRIVATE file beside the release; the release is the same",
    "overwrite": "whether an existing output may be replaced",
    # the key: it enters through its fingerprint
    "noise_key_file": "the key's path; the key enters through its fingerprint",
    "seed": "the test key's seed; the key enters through its fingerprint (a job without a key, "
    "generate, keeps its public data seed in)",
    "allow_test_seed_with_budget_store": "confirms --seed with a store; the seed's key is in",
    # how Spark runs: a release is a function of (key, rows, arguments), whatever the plan
    "spark_conf": "Spark settings: the noise is keyed by each row, never by the partitioning",
    "master": "where Spark runs: the same release on local[1] and a cluster",
    "private_spark_ui": "turns Spark's UI and event log off; the computation is the same",
    "log_level": "what the log shows",
    "allow_unsafe_debug": "confirms an unsafe debugging flag (the flags it confirms are in)",
    "allow_large_delta": "confirms a δ above 1e-3 (the δ it confirms is in)",
    "dry_run": "prints the plan; no release",
    "json": "how the answer (the preview: its predictions) is printed; the release is the same",
    # the budget: where the release is charged, not what it is
    "budget_store": "where the release is charged",
    "dataset_id": "which budget the release is charged to",
    "ledger": "replaced by --budget-store; refused",
    "ledger_file": "where the release is recorded",
    "no_ledger": "whether the release is recorded",
}


def release_arguments(run: Run) -> dict[str, Any]:
    """The effective arguments of ``run`` that enter its release id (module docstring)."""
    parser = build_parser(run.spec)
    params = params_to_dict(run.params) if dataclasses.is_dataclass(run.params) else {}
    out = dict(params)
    for action in parser._actions:
        dest = action.dest
        if dest not in out and dest != argparse.SUPPRESS:
            out[dest] = getattr(run.args, dest, None)
    if "input_format" in out:  # the format the input is read as (the name's, by default)
        out["input_format"] = input_format(str(run.args.input), run.args.input_format)
    for dest in NOT_IN_RELEASE:
        if dest == "seed" and not run.spec.uses_key:
            continue  # generate's --seed is its public data seed, not a key
        out.pop(dest, None)
    return out
