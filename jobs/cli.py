"""spark-submit entry point of the ``spark-dp`` command (logic: spark_dp/cli.py).

    spark-submit --py-files dist/spark_dp.zip jobs/cli.py partition-selection \
        --input data/zipf --output out/items --algorithm mad2r
"""

import sys
from pathlib import Path

try:
    import spark_dp  # noqa: F401
except ImportError:  # plain checkout: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_dp.cli import main

if __name__ == "__main__":
    sys.exit(main())
