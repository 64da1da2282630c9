"""The defaults of `duet gate` and `duet bisect` that their `--help` states.

Standard library only: the command line reads them when it builds its parser, and
`duet --help` must not import what a comparison needs (pandas, pydantic, yaml)."""

from __future__ import annotations

#: the stopping goal of a gate's comparison (docs/adaptive.md)
GATE_UNTIL = "decided"
#: the practical threshold of a gate's verdicts when neither --threshold nor the config's
#: `stop: threshold` gives one: without a threshold `equivalent` cannot be decided
GATE_THRESHOLD = "2%"
#: comparisons of one bisect candidate (the first and its extensions) before it is skipped
MAX_LOOKS = 4
