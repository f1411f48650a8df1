"""`python -m qjm.testing.chaos`: run the chaos harness."""

import sys

from qjm.testing.chaos.cli import main

sys.exit(main())
