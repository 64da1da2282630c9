"""Bounds on what a config may ask for (docs/config.md, section "Limits").

Each bound turns a config that would crash, hang or fill the memory (a YAML alias
bomb, ``repetitions: 10**12``, a 240-character benchmark name that no file system
takes as a directory name) into a :class:`~duetbench.errors.ConfigError` that says
the limit and the value. The bounds lie far above any real experiment.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ..errors import ConfigError

#: the size of a config file (the examples are under 6 KB; 1 MiB holds ~6000 benchmarks)
MAX_CONFIG_BYTES = 1 << 20
#: mappings and lists inside each other (the formats need 5 levels)
MAX_NESTING = 50
#: values in the config once every alias (``*name``) is replaced by what it names
MAX_VALUES = 200_000
#: characters of a benchmark name: run ids (``<name>.<method>.<rep>``) name directories,
#: also as ``runs/.tmp-<run-id>-<pid>`` and ``runs/.superseded/<run-id>.<ns>``, and a
#: directory name may have at most 255 bytes
MAX_NAME_LENGTH = 100
#: runs of one experiment (a seqn repetition is two runs), and so of one method
MAX_RUNS = 100_000
#: iterations of the built-in harness per run; also the largest `warmup`
MAX_ITERATIONS = 1_000_000
#: re-runs of a run on another host (cluster)
MAX_RETRIES = 100
#: the experiment seed (it is stored as a 64-bit integer)
MAX_SEED = 2**63 - 1
#: a CPU number in `cpus:` (Linux supports at most 8192 CPUs)
MAX_CPU = 8191
#: host requirements `min_cores` / `max_cores`
MAX_CORES = 1_000_000


@dataclass(frozen=True)
class HostCpus:
    """A host and the CPUs a process may use there, to check `cpus:` lists against;
    ``note`` ends the error message (what else the user can do)."""

    host: str
    cpus: Collection[int]
    note: str = ""


def runs_of_counts(seqn: int, aduet: int, sduet: int, inproc: int = 0) -> int:
    """Runs a benchmark plans: every seqn repetition is an A run and a B run."""
    return 2 * seqn + aduet + sduet + inproc


def cpu_ranges(cpus: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 8]`` -> ``"0-3, 8"``."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(set(cpus)):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out) or "none"


def unusable_cpus(policy: str | tuple[int, ...] | list[int], usable: Iterable[int]) -> list[int]:
    """The CPUs of a `cpus:` list that this process may not run on (``[]`` for auto/pinned/shared/none)."""
    if isinstance(policy, str):
        return []
    ok = set(usable)
    return [c for c in policy if c not in ok]


def cpus_message(name: str, missing: list[int], here: HostCpus) -> str:
    """What to say when benchmark ``name`` lists CPUs that ``here.host`` does not let it use."""
    what = f"CPU {missing[0]}" if len(missing) == 1 else f"CPUs {cpu_ranges(missing)}"
    return (
        f"benchmark '{name}' is pinned to {what}, which "
        f"{'is' if len(missing) == 1 else 'are'} not usable on host '{here.host}' (usable "
        f"there: {cpu_ranges(here.cpus)}). List CPUs of that host in `cpus:`, or write "
        f"`cpus: auto`.{' ' + here.note if here.note else ''}"
    )


def check_cpus_here(
    benchmarks: Iterable[tuple[str, str | tuple[int, ...]]], here: HostCpus, file: str = ""
) -> None:
    """Raise :class:`ConfigError` when a benchmark's `cpus:` (``(name, cpus)`` pairs) names a
    CPU not usable on ``here``: before a run starts, not as a failure of every run."""
    for name, policy in benchmarks:
        missing = unusable_cpus(policy, here.cpus)
        if missing:
            raise ConfigError(cpus_message(name, missing, here), file=file or None)
