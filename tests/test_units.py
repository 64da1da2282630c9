"""Durations and percentages: one parser and one range per kind, in the config and in
every flag (duetbench/units.py)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest
from tests.helpers import run_duet

from duetbench.cli import build_parser
from duetbench.commands._options import compare_options
from duetbench.config import load_config
from duetbench.config.stop import parse_stop, with_stop_overrides
from duetbench.errors import ConfigError, DuetError, OptionError
from duetbench.options import CompareOptions
from duetbench.units import (
    DURATION_RANGE,
    PERCENTAGE_RANGE,
    ValueTextError,
    duration,
    percentage,
)

CONFIG = """\
experiment:
  name: units
benchmarks:
  tiny:
    command: "true"
    iterations: 2
    repetitions: {sduet: 2}
"""


@pytest.mark.parametrize(
    ("text", "seconds"),
    [(30, 30.0), (2.5, 2.5), ("90s", 90.0), ("500ms", 0.5), ("5m", 300.0), ("1h", 3600.0),
     (" 2 min ", 120.0), ("1ms", 0.001), ("720h", 30 * 24 * 3600.0)],
)  # fmt: skip
def test_durations_in_every_unit(text: object, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("soon", "is not a duration"),
        ("0.1ms", "at least 1 ms"),
        ("721h", "at most 30 days"),
        (0, "must be positive"),
        (-5, "must be positive"),
        (math.nan, "not NaN"),
        (math.inf, "at most 30 days"),
        (10**400, "at most 30 days"),
        (True, "not a boolean"),
        ("1" + " " * 10_000 + "s", "is not a duration"),
    ],
)
def test_a_duration_outside_its_range_names_the_range(value: object, says: str) -> None:
    with pytest.raises(ValueTextError, match=says) as err:
        duration(value, "--budget")
    text = str(err.value)
    assert text.startswith("--budget: ") and len(text) < 300
    if says != "not a boolean":
        assert DURATION_RANGE in text


@pytest.mark.parametrize(
    ("text", "fraction"),
    [("1%", 0.01), ("0.5 %", 0.005), ("0.01", 0.01), (0.02, 0.02), ("0", 0.0), ("99.9%", 0.999)],
)
def test_percentages_with_and_without_the_sign(text: object, fraction: float) -> None:
    assert percentage(text) == pytest.approx(fraction)


@pytest.mark.parametrize("value", ["100%", "1", "1.5", "-1%", "-0.01", "nan", "inf", "x", True])
def test_a_percentage_outside_its_range_is_refused_with_the_range(value: object) -> None:
    with pytest.raises(ValueTextError) as err:
        percentage(value, "--threshold")
    assert str(err.value).startswith("--threshold: ")
    if value is not True:
        assert PERCENTAGE_RANGE in str(err.value)


def test_the_errors_are_duet_errors_and_value_errors() -> None:
    """Exit status 2 on the command line; a pydantic validation error in the config."""
    with pytest.raises(DuetError):
        percentage("x")
    with pytest.raises(ValueError):
        duration("x")


THRESHOLDS = ["0", "0.5%", "1%", "2 %", "0.02", "0.999", "99%", "100%", "1", "2", "150%",
              "-1%", "-0.01", "nan", "inf", "1e-3", "two", "%", ""]  # fmt: skip


def _run_accepts(config: Path, text: str) -> bool:
    """What `duet run CONFIG --until decided --threshold TEXT` does with the threshold
    before any run (commands/run.py: the overrides on the loaded config)."""
    args = build_parser().parse_args(
        ["run", str(config), "--until", "decided", f"--threshold={text}"]
    )
    try:
        with_stop_overrides(load_config(args.config), until=args.until, threshold=args.threshold)
    except DuetError:
        return False
    return True


def _compare_accepts(text: str) -> bool:
    args = build_parser().parse_args(["compare", "somewhere", f"--threshold={text}"])
    assert isinstance(args, argparse.Namespace)
    try:
        compare_options(args)
    except DuetError:
        return False
    return True


def _config_accepts(text: str) -> bool:
    try:
        parse_stop({"until": "decided", "threshold": text})
    except ConfigError as exc:
        return "needs a practical threshold" in str(exc)  # 0: a valid value, not for decided
    return True


def test_run_compare_and_the_config_take_the_same_thresholds(tmp_path: Path) -> None:
    config = tmp_path / "duet.yml"
    config.write_text(CONFIG)
    for text in THRESHOLDS:
        expected = _compare_accepts(text)
        # `until decided` needs a threshold above 0: that is the rule, not the parser
        run = _run_accepts(config, text) or percentage_or_none(text) == 0.0
        assert run == expected, text
        assert _config_accepts(text) == expected, text
        lib = library_accepts(text)
        assert lib == expected, text
    assert _compare_accepts("99%") and not _compare_accepts("100%")


def percentage_or_none(text: str) -> float | None:
    try:
        return percentage(text)
    except ValueTextError:
        return None


def library_accepts(text: str) -> bool:
    try:
        CompareOptions.create(threshold=text)
    except OptionError:
        return False
    return True


def test_refused_thresholds_exit_2_in_both_commands_and_say_the_range(tmp_path: Path) -> None:
    config = tmp_path / "duet.yml"
    config.write_text(CONFIG)
    out = tmp_path / "results"
    for cmd in (
        ["run", str(config), "--until", "decided", "--threshold", "150%", "-o", str(out)],
        ["compare", str(tmp_path / "missing"), "--threshold", "150%"],
    ):
        res = run_duet(*cmd)
        assert res.returncode == 2, (cmd, res.stderr)
        assert "--threshold" in res.stderr and PERCENTAGE_RANGE in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
    assert not out.exists()  # refused before any run


def test_durations_of_the_config_and_the_flags_share_the_range(tmp_path: Path) -> None:
    config = tmp_path / "duet.yml"
    config.write_text(CONFIG.replace("iterations: 2", "iterations: 2\n    timeout: 721h"))
    with pytest.raises(ConfigError, match="at most 30 days"):
        load_config(config)
    config.write_text(CONFIG)
    with pytest.raises(ConfigError, match="at most 30 days"):
        with_stop_overrides(load_config(config), until="precise:1%", budget="721h")
    res = run_duet("micro", "m:f", "--budget", "721h", "-o", str(tmp_path / "r"))
    assert res.returncode == 2 and "at most 30 days" in res.stderr, res.stderr
    res = run_duet("noise", "--duration", "0.1ms", "--print-schedule")
    assert res.returncode == 2 and "at least 1 ms" in res.stderr, res.stderr
