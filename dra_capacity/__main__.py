"""`python -m dra_capacity`."""

import sys

from dra_capacity.cli import main

sys.exit(main())
