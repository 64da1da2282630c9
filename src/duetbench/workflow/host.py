"""This machine's facts a command checks a config against before it runs anything."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config.limits import HostCpus


def this_host_cpus(note: str = "") -> HostCpus:
    """The CPUs this host offers, to check a config's ``cpus:`` lists against (``note``:
    said with a list this host cannot give)."""
    from ..config.limits import HostCpus
    from ..hosts import available_cpus, host_name

    return HostCpus(host_name(), available_cpus(), note)
