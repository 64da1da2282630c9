"""``python -m duetbench.sync wait|done|path|coordinate`` (see :func:`duetbench.sync.main`)."""

import sys

from .cli import main

sys.exit(main())
