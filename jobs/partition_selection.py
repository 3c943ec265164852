"""spark-submit entry point of the ``partition_selection`` job (logic: spark_dp/jobs/).

    spark-submit --py-files dist/spark_dp.zip jobs/partition_selection.py \
        --input data/zipf --output out/items --algorithm mad2r --epsilon 1 --delta 1e-5
    python jobs/partition_selection.py --config conf/partition_selection.yaml \
        --input data/zipf --output out/items
"""

import sys
from pathlib import Path

try:
    import spark_dp  # noqa: F401
except ImportError:  # plain checkout: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_dp.jobs.partition_selection import main

if __name__ == "__main__":
    sys.exit(main())
