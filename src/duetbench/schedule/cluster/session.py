"""One coordinator's session on a Dask cluster: its token, task keys, and what it tells the
user (notes for the closing summary, events in cluster.jsonl)."""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

from ...store import ResultsStore
from ..inline import ExperimentSummary

log = logging.getLogger("duetbench.schedule.cluster")


class Session:
    def __init__(self, store: ResultsStore, summary: ExperimentSummary) -> None:
        self.store = store
        self.summary = summary
        #: names this session's tasks and the run directories on the workers (abort_session)
        self.token = uuid.uuid4().hex[:12]
        #: set by every future's done-callback: a result (or a probe) is there
        self.wake = threading.Event()
        self._keys = 0
        self._noted: set[str] = set()

    def note(self, text: str, once: str | None = None) -> None:
        """A line for the closing summary (``once``: only the first note with this key)."""
        if once is not None:
            if once in self._noted:
                return
            self._noted.add(once)
        self.summary.notes.append(text)
        log.info(text)

    def event(self, kind: str, **fields: Any) -> None:
        self.store.log_cluster_event({"event": kind, "session": self.token, **fields})

    def key(self, what: str) -> str:
        """A unique Dask task key."""
        self._keys += 1
        return f"duet-{what}-{self.token}-{self._keys}"

    def on_done(self, _future: Any) -> None:
        self.wake.set()
