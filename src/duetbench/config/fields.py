"""Values both config formats check and resolve the same way: benchmark and experiment
names (docs/config.md, section Limits), `hang_timeout`, `cpus`."""

from __future__ import annotations

import re
from typing import Any

from .errors import key_text, located_error
from .limits import MAX_NAME_LENGTH
from .model import DEFAULT_HANG_TIMEOUT
from .yamlload import LocatedYaml

_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def hang_value(*choices: float | None) -> float | None:
    """The first `hang_timeout` set (most specific first), else the default; 0 (off): None."""
    for v in choices:
        if v is not None:
            return v or None
    return DEFAULT_HANG_TIMEOUT


def cpus_value(v: Any) -> str | tuple[int, ...]:
    """A validated `cpus:` value: ``auto``/``pinned``/``shared``/``none`` (the older name of
    ``shared``) as they are, a CPU list as a tuple (docs/config.md, `cpus`)."""
    return v if isinstance(v, str) else tuple(v)


#: external harnesses that synchronize a sduet by themselves: duet puts its pyperf shim in
#: front of their scripts (docs/sync.md, "pyperf scripts as they are"; execute/local.py)
#: harnesses that wait at the handshake themselves: pyperf scripts through the shim
#: (sync/pyperf_shim), the micro worker per sample (docs/micro.md)
SELF_SYNCING_HARNESSES = frozenset({"pyperf", "pyperformance", "micro"})


def check_busy_shorter_side(
    doc: LocatedYaml, name: str, harness: str, busy: bool, *paths: tuple[Any, ...]
) -> None:
    """`busy_shorter_side` needs the built-in harness: only its loop can keep the side that
    finishes first iterating; an external harness would silently run without it."""
    if busy and harness != "command":
        raise located_error(
            doc,
            f"benchmark '{name}' sets `busy_shorter_side`, but its harness '{harness}' runs "
            "its own iteration loop, which duet cannot keep going after it ends: only the "
            "built-in harness (no `harness:`, no `results:`) implements it (docs/config.md). "
            "Remove `busy_shorter_side`, or let duet run the command per iteration",
            *paths,
        )


def check_benchmark_name(name: str, doc: LocatedYaml, path: tuple[Any, ...]) -> None:
    """A benchmark name must fit as a directory name (docs/config.md, section Limits)."""
    if len(name) > MAX_NAME_LENGTH:
        raise located_error(
            doc,
            f"benchmark name '{name[:30]}...' has {len(name)} characters; it may have at most "
            f"{MAX_NAME_LENGTH}: it names the directories of the benchmark's runs "
            "(docs/config.md, section Limits). Shorten it",
            path,
        )
    if not _NAME_OK.match(name):
        raise located_error(
            doc,
            f"benchmark name '{key_text(name)}' can only use letters, digits and _ . + - "
            "(it names directories)",
            path,
        )


#: an experiment name is one directory name under -o (docs/config.md, `name`)
EXPERIMENT_NAME_MAX = 100
_EXPERIMENT_NAME_OK = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


def safe_experiment_name(text: str) -> str:
    """A valid experiment name made from ``text`` (a file name or a suite label the user
    did not write as a name): other characters become ``-``."""
    name = re.sub(r"[^A-Za-z0-9_.+-]+", "-", text)
    name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:EXPERIMENT_NAME_MAX].rstrip("-_.+")
    return name or "experiment"


def experiment_name(name: str, doc: LocatedYaml, path: tuple[str, ...]) -> str:
    """``name`` if it is a valid experiment name, else a ConfigError saying why and what to write."""
    problem = experiment_name_problem(name)
    if problem is None:
        return name
    raise located_error(doc, problem, path)


def experiment_name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid experiment name (None: it is), with what to write: the
    rule of every experiment name, from a config or a command line (`duet micro --name`)."""
    ok = _EXPERIMENT_NAME_OK.fullmatch(name) and len(name) <= EXPERIMENT_NAME_MAX
    if ok and not name.endswith("."):
        return None
    if not name:
        why = "is empty"
    elif name in (".", ".."):
        why = f"is {name!r}, which names a directory that is not the experiment's own"
    elif len(name) > EXPERIMENT_NAME_MAX:
        why = f"has {len(name)} characters"
    elif bad := [c for c in name if not c.isprintable()]:
        why = f"contains the control character {bad[0]!r}"
    elif "/" in name or "\\" in name:
        why = "contains a path separator, so results would go outside the -o directory"
    elif bad := sorted({c for c in name if not re.fullmatch(r"[A-Za-z0-9_.+-]", c)}):
        why = "contains " + ", ".join(f"{c!r}" for c in bad)
    elif ok:
        why = "ends with '.' (a name some file systems and tools cut)"
    else:
        why = "starts with " + repr(name[0])
    return (
        f"the experiment name {name[:120]!r} {why}. It names the results directory "
        f"(<-o>/<name>/), so it must be 1 to {EXPERIMENT_NAME_MAX} letters, digits and _ . + -, "
        f"starting with a letter or digit and not ending with '.'; e.g. "
        f"`name: {safe_experiment_name(name)}`"
    )
