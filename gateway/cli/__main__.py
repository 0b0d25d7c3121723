"""`python -m gateway.cli`: the same as the `skillgate` command."""

import sys

from gateway.cli.main import main

sys.exit(main())
