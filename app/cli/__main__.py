"""`python -m app.cli`: the demo and the tests start the worker and the API this way."""

import sys

from app.cli import main

sys.exit(main())
