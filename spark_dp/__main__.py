"""``python -m spark_dp``: the ``spark-dp`` command."""

import sys

from spark_dp.cli import main

sys.exit(main())
