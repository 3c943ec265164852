"""spark-submit entry point of the ``contribution_bounding`` job (logic:
spark_dp/jobs/contribution_bounding.py).

    spark-submit --py-files dist/spark_dp.zip jobs/contribution_bounding.py \
        --input data/graph --output out/records --max-contributions 4
    python jobs/contribution_bounding.py --input data/graph --output out/records \
        --capacities data/caps --max-contributions 2 --algorithm greedy-dup
"""

import sys
from pathlib import Path

try:
    import spark_dp  # noqa: F401
except ImportError:  # plain checkout: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_dp.jobs.contribution_bounding import main

if __name__ == "__main__":
    sys.exit(main())
