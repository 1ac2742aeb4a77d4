"""`python -m ortflow.engine.cli`: the same as the `engine` command."""

import sys

from ortflow.engine.cli.app import main

sys.exit(main())
