"""Checks of spark_dp.filesystem shared by the classic (tests/test_filesystem.py) and the Spark
Connect (tests/connect) runs: the same behaviour through Hadoop and through pyarrow."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_dp import filesystem


def check_makedirs_and_rename(spark, tmp_path: Path) -> None:
    """makedirs creates parents and is idempotent; rename moves a directory and refuses an
    existing target."""
    target = tmp_path / "a" / "b" / ".tmp-out"
    filesystem.makedirs(spark, str(target))
    filesystem.makedirs(spark, str(target))
    (target / "part-0").write_text("rows", encoding="utf-8")
    final = tmp_path / "a" / "b" / "out"
    filesystem.rename(spark, str(target), str(final))
    assert not target.exists() and (final / "part-0").read_text(encoding="utf-8") == "rows"
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(OSError, match="target exists"):
        filesystem.rename(spark, str(other), str(final))
