"""What a config's `harness:` (or a thesis `suite:`) may name (docs/config.md, `harness`).

``command`` is the built-in harness (duetbench runs the command once per iteration and
times it); ``builtin`` and ``duet`` are the thesis's names for it. Any other name is a
result parser: those shipped with duetbench and the ones other packages register under
the entry-point group ``duetbench.parsers``.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from ..parse.names import ALIASES
from .errors import located_error
from .yamlload import LocatedYaml

BUILTIN = "command"
#: other names of the built-in harness (the thesis's), read as ``command``
BUILTIN_ALIASES = frozenset(k for k, v in ALIASES.items() if v == BUILTIN)
#: the result parsers shipped with duetbench, with the registry's aliases
SHIPPED = frozenset(
    {"command", "generic", "renaissance", "dacapo", "scalabench", "speccpu", "pyperf", "micro"}
    | {"pyperformance", "jmh", "hyperfine"}
    | set(ALIASES)
)


@functools.lru_cache(maxsize=1)
def known_harnesses() -> frozenset[str]:
    """Every name a harness may have here: the shipped ones and the registered parsers."""
    from importlib.metadata import entry_points

    try:
        names = {ep.name for ep in entry_points(group="duetbench.parsers")}
    except Exception:  # a broken installation must not stop the config from loading
        names = set()
    return SHIPPED | names


def canonical(harness: str) -> str:
    """``harness`` as the executor and the parsers know it: the built-in's aliases are
    ``command`` (which runs the command per iteration, where any other name runs it once
    as a harness that writes its own results)."""
    return BUILTIN if harness in BUILTIN_ALIASES else harness


def near_miss(name: str, known: frozenset[str]) -> str | None:
    """The known name ``name`` is likely a typo of, if any."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
    return close[0] if close else None


def checked(doc: LocatedYaml, harness: str, path: tuple[Any, ...]) -> str:
    """``harness`` as written at ``path`` of ``doc``, canonical; a name no parser has is an
    error now, before anything is measured (it would fail every run's parsing after)."""
    known = known_harnesses() | {"python"}
    if harness in known:
        return canonical(harness)
    close = near_miss(harness, known)
    hint = f"Did you mean '{close}'? " if close else ""
    raise located_error(
        doc,
        f"harness '{harness}' names no result parser. {hint}Known: "
        f"{', '.join(sorted(known - BUILTIN_ALIASES))} (`command` is the built-in harness, "
        "which times the command per iteration; docs/config.md, `harness`). A parser of "
        "another package counts once that package is installed.",
        path,
    )
