"""Series-to-Series pandas UDFs, with pandas loaded when a UDF is made, not when a module is
imported: a job's ``--help`` and ``--dry-run`` load no pandas (docs/getting-started.md).

Spark reads a pandas UDF's kind from its type hints; spark_dp's modules keep their annotations
as strings (``from __future__ import annotations``), so :func:`series_udf` sets them to the
``pandas.Series`` class itself before Spark reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["series_udf"]


def series_udf(fn: Callable[..., Any], return_type: str) -> Any:
    """``fn`` (one ``pandas.Series`` per argument, a Series of the same length back) as a
    scalar pandas UDF returning ``return_type`` (a Spark SQL type string)."""
    import inspect

    import pandas as pd
    from pyspark.sql import functions as F

    hints: dict[str, Any] = {name: pd.Series for name in inspect.signature(fn).parameters}
    fn.__annotations__ = {**hints, "return": pd.Series}
    return F.pandas_udf(fn, return_type)  # type: ignore[call-overload]
