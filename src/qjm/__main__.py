"""`python -m qjm` runs the qjm command."""

import sys

from qjm.cli.main import main

sys.exit(main())
