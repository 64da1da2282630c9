"""Two versions of one code base in one interpreter, kept apart (method inproc).

Loaded by duet micro's worker (``worker.py``) from its own directory, like its other
helpers, so it runs under the side's interpreter with the standard library only
(Python >= 3.8). A side *owns* the modules imported from its own directories -- its
``--path`` entries and the target's directory; when the other side's turn comes they
leave ``sys.modules`` and come back before the side's next sample (docs/micro.md,
"In one process: inproc"). Modules from anywhere else are shared.
"""

from __future__ import annotations

import os
import sys
from typing import Any


class Loaded:
    """One side of an in-process pair: its benchmark, ready to time, the directories that
    are its own, the modules imported from them, and the ``sys.path`` it was imported
    with."""

    def __init__(self, name: str, bench: Any, prepared: Any, roots: list, path: list) -> None:
        self.name = name
        self.bench = bench
        self.prepared = prepared
        self.roots = roots
        self.modules: dict = {}
        self.path = path

    def owns(self, module: Any) -> bool:
        """Whether ``module`` was imported from one of this side's directories."""
        where = getattr(module, "__file__", None)
        if where is None:  # a namespace package
            where = next(iter(getattr(module, "__path__", None) or ()), None)
        if not isinstance(where, str):
            return False
        where = os.path.abspath(where)
        return any(where.startswith(root + os.sep) for root in self.roots)

    def collect(self, shared: set) -> None:
        """Take the modules imported from this side's directories since the last look
        (at import, setup, or lazily inside the function) out of ``sys.modules``;
        ``shared``: the modules there before either side was imported."""
        for key, module in list(sys.modules.items()):
            if key not in shared and key not in self.modules and self.owns(module):
                self.modules[key] = module
        for key in self.modules:
            sys.modules.pop(key, None)

    def enter(self, previous: Loaded, shared: set) -> None:
        """Make this side's modules and ``sys.path`` current; ``previous``'s leave."""
        previous.collect(shared)
        sys.modules.update(self.modules)
        sys.path[:] = self.path
