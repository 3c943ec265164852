"""spark-submit entry point of the ``distinct_count`` job (logic: spark_dp/jobs/distinct_count.py).

    spark-submit --py-files dist/spark_dp.zip jobs/distinct_count.py --input data/zipf \
        --epsilon 1 --failure-probability 0.05 --method exact --max-contributions 100 \
        --report out/count.json
    python jobs/distinct_count.py --input data/zipf --epsilon 1 --method greedy
"""

import sys
from pathlib import Path

try:
    import spark_dp  # noqa: F401
except ImportError:  # plain checkout: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_dp.jobs.distinct_count import main

if __name__ == "__main__":
    sys.exit(main())
