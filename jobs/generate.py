"""spark-submit entry point of the ``generate`` job (logic: spark_dp/jobs/generate.py).

    spark-submit --py-files dist/spark_dp.zip jobs/generate.py --kind zipf --users 100000 \
        --output data/zipf --seed 1
    python jobs/generate.py --kind regular --records 125000 --output data/regular
"""

import sys
from pathlib import Path

try:
    import spark_dp  # noqa: F401
except ImportError:  # plain checkout: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_dp.jobs.generate import main

if __name__ == "__main__":
    sys.exit(main())
