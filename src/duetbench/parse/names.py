"""Other names of the result parsers (standard library only: the config loader reads it
without loading the parsers): a harness or thesis suite named on the left is parsed, and
run, as the one on the right."""

from __future__ import annotations

#: ``builtin`` and ``duet`` are the thesis's names for the built-in harness (``command``)
ALIASES = {"duet": "command", "builtin": "command", "csv": "generic", "jsonl": "generic"}
