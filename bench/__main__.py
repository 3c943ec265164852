"""``python -m bench``: run the registered benchmark cases."""

import sys

from bench.harness import main

sys.exit(main())
