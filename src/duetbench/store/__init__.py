"""The results directory of an experiment (docs/results.md).

- :mod:`.layout` -- the names of its files and directories (no other module knows them);
- :mod:`.results` -- :class:`ResultsStore`: create/open, runs, hosts, resume, cluster log;
- :mod:`.journal` -- journal.jsonl; :mod:`.checks` -- damage checks of run directories;
- :mod:`.manifest` -- the list of a run's files in run.json;
- :mod:`.lock` -- one `duet run` per results directory.
"""

from __future__ import annotations

from ..atomic import fsync_dir, write_json_atomic
from .journal import DAMAGED
from .layout import LOCK_FILE
from .lock import ExperimentLock
from .results import ResultsStore, is_empty_dir

__all__ = [
    "DAMAGED",
    "LOCK_FILE",
    "ExperimentLock",
    "ResultsStore",
    "fsync_dir",
    "is_empty_dir",
    "write_json_atomic",
]
