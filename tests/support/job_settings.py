"""A job's settings and request from a command line, without Spark, a path check or the books:
the parameters and release arguments a run of that command line would use."""

from __future__ import annotations

import argparse
import logging

from spark_dp.io.paths import PathPlan
from spark_dp.jobs.config_source import locate_config
from spark_dp.jobs.request import Books, Request, Settings, resolve_run_params
from spark_dp.jobs.spec import JobSpec

LOG = logging.getLogger("tests.job_settings")


def settings_of(
    spec: JobSpec, parser: argparse.ArgumentParser, args: argparse.Namespace
) -> Settings:
    """``args``' settings: the config file's parameters (its ``spark`` section set aside), no
    Spark settings, no books."""
    config = None if args.config is None else locate_config(args.config)
    file_conf = config.load() if config is not None else {}
    file_conf.pop("spark", None)
    return Settings(spec, parser, args, LOG, config, file_conf, {}, frozenset(), Books())


def request_of(spec: JobSpec, parser: argparse.ArgumentParser, args: argparse.Namespace) -> Request:
    """``args``' request with its parameters resolved (no plan, no paths)."""
    settings = settings_of(spec, parser, args)
    params = resolve_run_params(settings, args, dict(settings.file_conf))
    return Request(settings, args, params, None, PathPlan([]), None)
