"""Fuzzed configs: every mutation of the shipped configs loads and plans, or is refused with
a clear error (DuetError, exit 2). Never a traceback, never a hang.

Seeded: ``FUZZ_SEED`` and ``FUZZ_CASES`` below fix the cases, so a failure repeats.
For a longer search, set ``DUET_FUZZ_SEED`` and ``DUET_FUZZ_CASES``, e.g.
``DUET_FUZZ_SEED=7 DUET_FUZZ_CASES=5000 python3 -m pytest -q tests/test_fuzz_config.py``.
A failing case is written to the test's temporary directory and named in the message.
Configs the fuzzer found that broke duetbench are kept in ``REGRESSIONS`` (with the
explicit cases of tests/test_config_hardening.py).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import signal
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.helpers import ROOT
from tests.watchdog import Hang, deadline

from duetbench.cli import main as duet_main
from duetbench.config import load_config
from duetbench.errors import ConfigError, DuetError
from duetbench.plan import make_plan

FUZZ_SEED = int(os.environ.get("DUET_FUZZ_SEED", "20260513"))
FUZZ_CASES = int(os.environ.get("DUET_FUZZ_CASES", "400"))
#: per case; it only catches hangs (the slowest legal case, a 100 000-run plan, takes a
#: few seconds on a busy 2-core machine)
CASE_DEADLINE_S = 60.0
#: plans up to this size also go through `duet plan`'s table (in-process)
TABLE_MAX_RUNS = 300

SOURCES = sorted(
    [
        *ROOT.glob("examples/**/duet*.yml"),
        *ROOT.glob("docs/examples/*.yml"),
        *ROOT.glob("tests/fixtures/thesis_configs/*.yml"),
    ]
)

# values that have broken (or could break) a loader: other YAML types, huge and special
# numbers, control characters (as YAML escapes), rich markup, shell syntax, unreadable
# scalars, aliases and nesting
HOSTILE_VALUES = [
    "[1, 2]",
    "{a: 1, b: [x]}",
    "[]",
    "{}",
    "null",
    "~",
    '""',
    "true",
    "no",
    "0",
    "-1",
    "1",
    "2026",
    "100001",
    "10000000000000",
    "1" + "0" * 30,
    "9" * 5000,
    "0x" + "f" * 2000,
    "1.0e+300",
    "-1.5",
    "0.0000001",
    ".nan",
    ".inf",
    "-.inf",
    "'5m'",
    "'1" + " " * 3000 + "x'",
    '"\\x01\\x07\\x1b[2J"',
    '"a\\0b"',
    '"\\ud800"',
    '"x[/]"',
    '"[bold red]x[/]"',
    "'$(touch PWNED) `id`; rm -rf ~ | cat && echo $$'",
    '"a b\\nc"',
    "2001-13-45",
    "2001-12-14",
    "!!float abc",
    "!!binary Zm9v",
    "!!python/object:os.system x",
    "*nowhere",
    "&anchor x",
    "x" * 240,
    "é" * 120,
    "[" * 60 + "]" * 60,
    "[[[[[[[[",
]

HOSTILE_KEYS = ["", "x[/]", "a b", "../x", "x" * 240, "'yes'", "<<", "'1'", "'\\0'"]

BILLION_LAUGHS = 'l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10)
)

_KEY_VALUE = re.compile(r"^(\s*(?:-\s+)?[^\s:#'\"{}\[\]][^:#]*?):(\s+)(\S.*)$")

Mutator = Callable[[random.Random, bytes], bytes]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def _flip_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        if b:
            b[rng.randrange(len(b))] ^= rng.randint(1, 255)
    return bytes(b)


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _delete_lines(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    for _ in range(rng.randint(1, 3)):
        if len(lines) > 1:
            del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def _duplicate_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return b"".join(lines)


def _value_lines(data: bytes) -> tuple[list[str], list[int]]:
    lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
    idx = [i for i, line in enumerate(lines) if _KEY_VALUE.match(line.rstrip("\n"))]
    return lines, idx


def _swap_values(rng: random.Random, data: bytes) -> bytes:
    lines, idx = _value_lines(data)
    if len(idx) < 2:
        return data
    i, j = rng.sample(idx, 2)
    mi, mj = (_KEY_VALUE.match(lines[k].rstrip("\n")) for k in (i, j))
    assert mi and mj
    lines[i] = f"{mi.group(1)}:{mi.group(2)}{mj.group(3)}\n"
    lines[j] = f"{mj.group(1)}:{mj.group(2)}{mi.group(3)}\n"
    return "".join(lines).encode()


def _replace_value(rng: random.Random, data: bytes) -> bytes:
    lines, idx = _value_lines(data)
    if not idx:
        return data
    i = rng.choice(idx)
    m = _KEY_VALUE.match(lines[i].rstrip("\n"))
    assert m
    lines[i] = f"{m.group(1)}:{m.group(2)}{rng.choice(HOSTILE_VALUES)}\n"
    return "".join(lines).encode()


def _rename_key(rng: random.Random, data: bytes) -> bytes:
    lines, idx = _value_lines(data)
    if not idx:
        return data
    i = rng.choice(idx)
    m = _KEY_VALUE.match(lines[i].rstrip("\n"))
    assert m
    indent = m.group(1)[: len(m.group(1)) - len(m.group(1).lstrip(" -"))]
    lines[i] = f"{indent}{rng.choice(HOSTILE_KEYS)}:{m.group(2)}{m.group(3)}\n"
    return "".join(lines).encode()


def _deep_nesting(rng: random.Random, data: bytes) -> bytes:
    """Lists in lists as a value, or (unclosed) as a key of its own."""
    k = rng.choice([10, 49, 51, 200, 5000])
    lines, idx = _value_lines(data)
    if idx and rng.random() < 0.5:
        i = rng.choice(idx)
        m = _KEY_VALUE.match(lines[i].rstrip("\n"))
        assert m
        lines[i] = f"{m.group(1)}:{m.group(2)}{'[' * k}1{']' * k}\n"
    else:
        closing = "]" * k if rng.random() < 0.5 else ""
        lines.insert(rng.randrange(len(lines) + 1), f"deep: {'[' * k}{closing}\n")
    return "".join(lines).encode()


def _aliases(rng: random.Random, data: bytes) -> bytes:
    """An anchor on one value and an alias to it in another place, a self-reference, or
    an alias bomb in front."""
    choice = rng.randrange(3)
    if choice == 0:
        return BILLION_LAUGHS.encode() + data
    lines, idx = _value_lines(data)
    if len(idx) < 2:
        return data
    i, j = sorted(rng.sample(idx, 2))
    mi = _KEY_VALUE.match(lines[i].rstrip("\n"))
    mj = _KEY_VALUE.match(lines[j].rstrip("\n"))
    assert mi and mj
    lines[i] = f"{mi.group(1)}:{mi.group(2)}&fz {mi.group(3)}\n"
    if choice == 1:
        lines[j] = f"{mj.group(1)}:{mj.group(2)}*fz\n"
    else:  # a mapping that contains an alias to itself
        lines[i] = f"{mi.group(1)}: &fz\n{' ' * (len(mi.group(1)) + 2)}self: *fz\n"
    return "".join(lines).encode()


def _control_character(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + bytes([rng.choice([0, 1, 7, 8, 0x1B, 0x7F])]) + data[at:]


MUTATORS: list[Mutator] = [
    _flip_bytes,
    _truncate,
    _delete_lines,
    _duplicate_line,
    _swap_values,
    _replace_value,
    _replace_value,  # the richest source of wrong values: twice as often
    _rename_key,
    _deep_nesting,
    _aliases,
    _control_character,
]

# Configs the fuzzer found that broke duetbench (trimmed to what matters), with the seed
# and case that found each.
REGRESSIONS: list[tuple[str, bytes, str]] = [
    (
        # seed 20260513, case 30: an unknown key holding `[` lost its name in the error
        # (IndexError while saying which key is unknown)
        "markup-key",
        b"duetbench:\n  x[/]: renaissance\n  duets: [a]\na:\n  A: {run: x}\n",
        "line 2: key 'duetbench.x[/]': unknown key 'x[/]'",
    ),
    (
        # seed 2, case 1353 and seed 3, case 81: a timeout of 0xfff...f (2000 digits)
        # overflowed float() (OverflowError)
        "huge-hex-timeout",
        b"experiment: {name: x, timeout: 0x" + b"f" * 2000 + b"}\nbenchmarks: {a: {command: x}}\n",
        "at most 30 days",
    ),
    (
        "huge-hex-thesis-timeout",
        b"duetbench: {duets: [a], timeout: 0x" + b"f" * 2000 + b"}\na: {A: {run: x}}\n",
        "at most 30 days",
    ),
]


def outcome(path: Path) -> str:
    """``"ok"``, ``"refused"`` (a DuetError) or raises what else happened (the bug)."""
    try:
        exp = load_config(path)
        plan = make_plan(exp)
    except DuetError:
        return "refused"
    if len(plan) <= TABLE_MAX_RUNS:  # what `duet plan` prints, in-process
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = duet_main(["plan", str(path), "--no-cpu-check"])
        assert rc == 0, err.getvalue()
    return "ok"


def _cases() -> list[tuple[str, bytes]]:
    rng = random.Random(FUZZ_SEED)
    cases = []
    for i in range(FUZZ_CASES):
        src = rng.choice(SOURCES)
        data = src.read_bytes()
        names = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):  # mostly one mutation, some stacked
            mutate = rng.choice(MUTATORS)
            data = mutate(rng, data)
            names.append(mutate.__name__.lstrip("_"))
        cases.append((f"{i:04d} {src.relative_to(ROOT)} {'+'.join(names)}", data))
    return cases


def test_sources_are_found():
    """The fuzzer mutates the shipped configs; it fails loudly if it finds none."""
    assert len(SOURCES) >= 10, SOURCES
    for src in SOURCES:
        assert outcome(src) == "ok", src


def test_fuzzed_configs_load_or_are_refused_never_crash_or_hang(tmp_path, monkeypatch):
    monkeypatch.delenv("DUET_DEBUG", raising=False)
    failures: list[str] = []
    counts = {"ok": 0, "refused": 0}
    for name, data in [(n, d) for n, d, _ in REGRESSIONS] + _cases():
        path = tmp_path / f"case-{name.split()[0]}.duet.yml"
        path.write_bytes(data)
        try:
            with deadline(CASE_DEADLINE_S, name):
                counts[outcome(path)] += 1
        except Hang as exc:
            failures.append(f"{name} ({path}): HANG: {exc}")
            break  # one hang is enough to know
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            tb = traceback.format_exception(exc)
            failures.append(f"{name} ({path}): {type(exc).__name__}: {exc}\n{''.join(tb[-3:])}")
    print(
        f"\nfuzz seed {FUZZ_SEED}: {FUZZ_CASES} cases, {counts} (+{len(REGRESSIONS)} regressions)"
    )
    assert not failures, f"{len(failures)} of {FUZZ_CASES} cases failed:\n" + "\n".join(
        failures[:10]
    )
    # a fuzzer whose every case is refused tests only the first check; one whose every
    # case loads mutates nothing that matters
    assert counts["ok"] >= FUZZ_CASES // 10 and counts["refused"] >= FUZZ_CASES // 4, counts


@pytest.mark.parametrize("name, data, says", REGRESSIONS, ids=[r[0] for r in REGRESSIONS])
def test_regressions_found_by_the_fuzzer(tmp_path, name, data, says):
    path = tmp_path / "regression.duet.yml"
    path.write_bytes(data)
    with deadline(CASE_DEADLINE_S, name), pytest.raises(ConfigError) as ei:
        load_config(path)
    assert says in str(ei.value)


def test_the_deadline_stops_a_hang_even_inside_c_code():
    """The fuzz test's guard: a match that would run for hours inside the regular-expression
    engine (which holds the GIL), and a blocking sleep, end at the deadline; a timer that was
    running before (pytest-timeout's) runs on afterwards."""
    outer_before = signal.getitimer(signal.ITIMER_REAL)[0]
    quadratic = re.compile(r"^\s*(\d+)\s*(ms)?\s*$")
    with pytest.raises(Hang, match="regex: still running after 0.5 s"):
        with deadline(0.5, "regex"):
            quadratic.match("1" + " " * 2_000_000 + "x")
    with pytest.raises(Hang):
        with deadline(0.5, "sleep"):
            time.sleep(600)
    if outer_before:
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] < outer_before
