"""The steps several commands share (docs/architecture.md, "Packages and layers"):
judge a results directory and render its verdicts (``verdicts.py``), the runs of an
experiment that did not end well (``runs.py``). `duet compare`, `run`, `micro` and the
pytest plugin call these instead of each other."""
