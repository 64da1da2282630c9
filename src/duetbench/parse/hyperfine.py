"""hyperfine ``--export-json`` results.

``results[]`` has one entry per command (in the order hyperfine ran them, all
runs of one command before the next); ``times`` are the wall-clock seconds of
the timed runs (warm-up runs are not recorded), ``exit_codes`` their exit codes
(``null`` for a run killed by a signal, kept as -1; older versions have none)
and ``parameters`` the values of ``--parameter-*`` placeholders (1.6-1.10:
one unnamed ``parameter``). hyperfine
records no timestamps: the rows are duration-only, ``workload`` = the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ResultFileError
from ._many import parse_each
from ._util import (
    NS_PER_S,
    build_frame,
    load_json,
    plain_value,
    scaled_ns,
)
from .registry import SideContext


def parse_hyperfine(ctx: SideContext) -> pd.DataFrame:
    """One duration-only row per timed run of every command in the hyperfine JSON file(s)."""
    return parse_each(ctx, ("*.json",), "hyperfine JSON (--export-json)", _parse_file)


def _parse_file(path: Path) -> pd.DataFrame:
    doc = load_json(path)
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list):
        raise ResultFileError(path, "not a hyperfine --export-json file: no 'results' list")
    rows: list[dict[str, Any]] = []
    for c, result in enumerate(results):
        where = f"results[{c}]"
        if not isinstance(result, dict) or not isinstance(result.get("times"), list):
            raise ResultFileError(path, f"{where} has no 'times' list")
        command = str(result.get("command", f"command_{c}"))
        exit_codes = result.get("exit_codes")
        if exit_codes is not None and (
            not isinstance(exit_codes, list) or len(exit_codes) != len(result["times"])
        ):
            raise ResultFileError(path, f"{where}: 'exit_codes' does not match 'times'")
        params = result.get("parameters") or {}
        if not isinstance(params, dict):
            raise ResultFileError(path, f"{where}: 'parameters' is not an object")
        legacy = result.get("parameter")  # hyperfine 1.6-1.10: one unnamed scan value
        memory = result.get("memory_usage_byte")  # hyperfine 1.19+: peak RSS per run
        if memory is not None and (
            not isinstance(memory, list) or len(memory) != len(result["times"])
        ):
            raise ResultFileError(path, f"{where}: 'memory_usage_byte' does not match 'times'")
        for i, seconds in enumerate(result["times"]):
            row: dict[str, Any] = {
                "workload": command,
                "duration_ns": scaled_ns(seconds, NS_PER_S, path, None, f"{where}.times[{i}]"),
            }
            if exit_codes is not None:
                # null: killed by a signal -- a failed run like a non-zero code
                code = exit_codes[i]
                row["exit_code"] = -1 if code is None else plain_value(code)
            if memory is not None:
                row["memory_usage_byte"] = plain_value(memory[i])
            if legacy is not None:
                row["param"] = plain_value(legacy)
            for key, value in params.items():
                row[f"param_{key}"] = plain_value(value)
            rows.append(row)
    return build_frame(rows, path)
