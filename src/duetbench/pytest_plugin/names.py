"""Names the plugin's modules share (docs/pytest.md)."""

from __future__ import annotations

#: the side's instruction (JSON), set by the duet for each side process
ENV = "DUET_PYTEST"
#: the plugin's name for ``-p`` (and its entry point's, so it is never loaded twice)
PLUGIN = "duetbench.pytest_plugin"
#: set when pytest-xdist was turned off in this process (the duet says so in its header)
XDIST_OFF: list[bool] = []
