"""spark-submit entry point of the ``preview`` job (logic: spark_dp/jobs/preview.py).

spark-submit --py-files dist/spark_dp.zip jobs/preview.py --input data/zipf --epsilon 0.2
python jobs/preview.py --input data/zipf --epsilon 0.2 --json
"""

import sys
from pathlib import Path

try:
    import spark_dp  # noqa: F401
except ImportError:  # plain checkout: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_dp.jobs.preview import main

if __name__ == "__main__":
    sys.exit(main())
