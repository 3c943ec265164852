"""Build the zip that ``spark-submit --py-files`` ships to the driver and the executors.

    python -m spark_dp.packaging dist/spark_dp.zip      (what ``make package`` runs)

The zip holds the ``spark_dp`` package only (no tests, no caches). Executors need its Python
dependencies (numpy, scipy, pandas, pyarrow) installed in their interpreter, as for any PySpark
job; docs/operations/cluster.md lists them.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

__all__ = ["build_zip"]

PACKAGE_DIR = Path(__file__).resolve().parent


def build_zip(dest: str | Path) -> Path:
    """Write ``spark_dp/**`` (without ``__pycache__``) to ``dest``, atomically; return its path."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(PACKAGE_DIR.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                z.write(path, Path("spark_dp") / path.relative_to(PACKAGE_DIR))
    tmp.replace(dest)
    return dest


if __name__ == "__main__":
    out = build_zip(sys.argv[1] if len(sys.argv) > 1 else "dist/spark_dp.zip")
    print(f"built {out}")
