"""The ``micro`` parser plugin and the small API around the worker (no worker runs here).

Expected values are computed by hand from the fixture rows.
"""

from __future__ import annotations

import json
import os
import tomllib
from importlib import import_module
from pathlib import Path

import pandas as pd
import pytest

from duetbench.errors import ResultFileError
from duetbench.micro import (
    Settings,
    evaluation_mismatches,
    resolve_target,
    worker_command,
    worker_path,
)
from duetbench.parse.micro import (
    COLUMNS,
    ERROR_FILE,
    FORMER_COLUMNS,
    META_FILE,
    SAMPLES_FILE,
    parse_micro,
    per_evaluation_ns,
    read_worker_error,
)
from duetbench.parse.registry import SideContext

REPO = Path(__file__).resolve().parents[1]
T0 = 1_700_000_000_000_000_000
META = {
    "format": 1,
    "side": "A",
    "benchmark": {"name": "bench_known.TimeKnown.time_work('x2', '100us')"},
    "python": {"implementation": "CPython", "version": "3.11.2"},
    "calibration": {"call_overhead_ns": 15.5},
}


def write_side(side_dir: Path, rows: list[str], meta: dict | None = META, tail: str = "\n") -> Path:
    side_dir.mkdir(parents=True, exist_ok=True)
    header = COLUMNS if rows and rows[0].count(",") == len(COLUMNS) - 1 else FORMER_COLUMNS
    text = ",".join(header) + "\n" + "\n".join(rows) + (tail if rows else "")
    (side_dir / SAMPLES_FILE).write_text(text)
    if meta is not None:
        (side_dir / META_FILE).write_text(json.dumps(meta))
    return side_dir


def parse(side_dir: Path, *results: str) -> pd.DataFrame:
    ctx = SideContext(
        side_dir=side_dir,
        result_files=tuple(Path(r) for r in results),
        pair="A",
        benchmark="b",
        method="sduet",
    )
    return parse_micro(ctx)


def row(i: int, phase: str, start: int, total: int, evaluations: int) -> str:
    return f"{i},{phase},{start},{start + total},{total},{evaluations}"


@pytest.mark.parametrize(
    ("total", "evaluations", "expected"),
    [
        (7, 2, 4),  # 3.5 -> 4 (even)
        (5, 2, 2),  # 2.5 -> 2 (even)
        (9, 2, 4),  # 4.5 -> 4
        (1_000_000_001, 3, 333_333_334),  # .67 up
        (1_000_000_000, 3, 333_333_333),  # .33 down
        (2**62 + 1, 2, 2**61),  # exact beyond float precision: 2^61 + 0.5 -> 2^61 (even)
        (0, 5, 0),
    ],
)
def test_per_evaluation_rounds_half_to_even_exactly(
    total: int, evaluations: int, expected: int
) -> None:
    assert per_evaluation_ns(total, evaluations) == expected


def test_rows_phases_and_columns(tmp_path: Path) -> None:
    side = write_side(
        tmp_path / "A",
        [
            row(0, "calibration", T0, 90_000, 1),
            row(1, "calibration", T0 + 100_000, 1_000_003, 10),
            row(2, "warmup", T0 + 2_000_000, 1_300_007, 13),
            row(3, "sample", T0 + 4_000_000, 1_300_013, 13),
            row(4, "sample", T0 + 6_000_000, 1_299_987, 13),
        ],
    )
    df = parse(side)
    assert df["iteration"].tolist() == [0, 1, 2, 3, 4]
    assert df["start_ns"].tolist() == [
        T0,
        T0 + 100_000,
        T0 + 2_000_000,
        T0 + 4_000_000,
        T0 + 6_000_000,
    ]
    assert df["end_ns"].tolist()[-1] == T0 + 6_000_000 + 1_299_987  # the whole sample
    # per evaluation: 90000/1, 100000.3, 100000.538..., 100001, 99999
    assert df["duration_ns"].tolist() == [90_000, 100_000, 100_001, 100_001, 99_999]
    assert df["total_ns"].tolist() == [90_000, 1_000_003, 1_300_007, 1_300_013, 1_299_987]
    assert df["evaluations"].tolist() == [1, 10, 13, 13, 13]
    assert df["ns_per_evaluation"].tolist()[3] == 1_300_013 / 13
    assert df["filler"].tolist() == [True, True, True, False, False]
    assert df["calibration"].tolist() == [True, True, False, False, False]
    assert df["harness_warmup"].tolist() == [False, False, True, False, False]
    assert set(df["workload"]) == {META["benchmark"]["name"]}
    assert set(df["python"]) == {"CPython 3.11.2"}
    assert set(df["call_overhead_ns"]) == {15.5}
    assert df["start_ns"].dtype == "int64" and df["duration_ns"].dtype == "int64"


def test_results_entry_may_name_the_directory(tmp_path: Path) -> None:
    write_side(tmp_path / "A" / "micro", [row(0, "sample", T0, 1000, 10)])
    assert parse(tmp_path / "A", "micro")["duration_ns"].tolist() == [100]


def test_a_row_cut_off_by_a_kill_is_dropped(tmp_path: Path) -> None:
    side = write_side(tmp_path / "A", [row(0, "sample", T0, 1000, 10), "1,sample,17000"], tail="")
    assert parse(side)["iteration"].tolist() == [0]


@pytest.mark.parametrize(
    ("rows", "line", "match"),
    [
        (
            [row(0, "sample", T0, 1000, 10), row(1, "sprint", T0, 1000, 10)],
            3,
            "unknown phase 'sprint'",
        ),
        ([f"0,sample,{T0},{T0 + 5},1000,10"], 2, "end = start \\+ total"),
        ([row(0, "sample", T0, 1000, 0)], 2, "evaluations >= 1"),
        (["0,sample,x,1,1,1"], 2, "non-integer"),
        (["0,sample,1,2"], 2, "row has 4 fields"),
    ],
)
def test_malformed_rows_name_file_and_line(
    tmp_path: Path, rows: list[str], line: int, match: str
) -> None:
    side = write_side(tmp_path / "A", rows)
    with pytest.raises(ResultFileError, match=match) as info:
        parse(side)
    assert info.value.line == line and Path(info.value.path).name == SAMPLES_FILE


def test_missing_or_foreign_files(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="no duet micro worker result file found"):
        parse(tmp_path)
    side = write_side(tmp_path / "A", [row(0, "sample", T0, 10, 1)], meta=None)
    with pytest.raises(ResultFileError, match="missing: the worker writes it"):
        parse(side)
    (side / META_FILE).write_text(json.dumps({"format": 99}))
    with pytest.raises(ResultFileError, match="format 1"):
        parse(side)
    (side / META_FILE).write_text(json.dumps(META))
    (side / SAMPLES_FILE).write_text("iteration,start_ns,end_ns\n1,2,3\n")
    with pytest.raises(ResultFileError, match="unexpected header"):
        parse(side)
    write_side(side, [])
    with pytest.raises(ResultFileError, match="no samples"):
        parse(side)


def test_worker_error_file_is_the_message(tmp_path: Path) -> None:
    side = write_side(tmp_path / "B", [row(0, "sample", T0, 10, 1)])
    summary = "side B, benchmark 'bench_x': setup failed: ValueError: no"
    (side / ERROR_FILE).write_text(
        json.dumps({"summary": summary, "location": 'File "b.py", line 3'})
    )
    assert read_worker_error(side) == summary + ' (File "b.py", line 3)'
    with pytest.raises(ResultFileError, match="setup failed: ValueError: no"):
        parse(side)
    (side / ERROR_FILE).write_text("{not json")
    assert "unreadable" in (read_worker_error(side) or "")
    assert read_worker_error(tmp_path) is None


def test_registered_as_the_micro_parser() -> None:
    """pyproject.toml names the plugin (installed metadata refreshes on `pip install -e .`)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    value = project["project"]["entry-points"]["duetbench.parsers"]["micro"]
    module, _, name = value.partition(":")
    assert getattr(import_module(module), name) is parse_micro


# ------------------------------------------------------------------ API


def test_worker_command_makes_paths_absolute(tmp_path: Path) -> None:
    argv = worker_command(
        "env A/bin/python",
        "bench dir/bench_x.py:bench_y",
        benchmark="bench_y",
        paths=["src a"],
        evaluations=13,
        samples=40,
        budget_s=2.5,
        warmup=2,
        keep_gc=True,
        settings=Settings(min_sample_ns=2_000_000, resolution_multiple=10),
        timeout_s=30.0,
        output="out",
        cwd=tmp_path,
    )
    assert argv == [
        str(tmp_path / "env A/bin/python"),
        str(worker_path()),
        str(tmp_path / "bench dir/bench_x.py") + ":bench_y",
        "--benchmark", "bench_y",
        "--path", str(tmp_path / "src a"),
        "--evaluations", "13",
        "--samples", "40",
        "--budget", "2.5",
        "--warmup", "2",
        "--timeout", "30.0",
        "--min-sample-time", "0.002",
        "--resolution-multiple", "10",
        "--overhead-multiple", "1000",
        "--max-evaluations", "100000000",
        "--keep-gc",
        "--output", str(tmp_path / "out"),
    ]  # fmt: skip
    assert worker_command("python3", "mod.sub:fn")[:3] == [
        "python3",
        str(worker_path()),
        "mod.sub:fn",
    ]


def test_resolve_target(tmp_path: Path) -> None:
    (tmp_path / "suite").mkdir()
    assert resolve_target("suite", tmp_path) == str(tmp_path / "suite")
    assert resolve_target("b.py", tmp_path) == str(tmp_path / "b.py")
    assert resolve_target("x/b.py:C.m", tmp_path) == str(tmp_path / "x/b.py") + ":C.m"
    assert resolve_target("pkg.mod:Class.method", tmp_path) == "pkg.mod:Class.method"
    assert resolve_target(str(tmp_path / "b.py"), Path(os.sep)) == str(tmp_path / "b.py")


def test_evaluation_mismatches() -> None:
    def side(
        run: int, pair: str, counts: list[int], filler: list[bool] | None = None
    ) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "benchmark": "b",
                "method": "sduet",
                "run": run,
                "pair": pair,
                "evaluations": counts,
                "filler": filler or [False] * len(counts),
            }
        )

    equal = pd.concat([side(0, "A", [13, 13]), side(0, "B", [13, 13])])
    assert evaluation_mismatches(equal) == []
    trials = pd.concat(
        [side(0, "A", [1, 10, 13, 13], [True, True, False, False]), side(0, "B", [13, 13])]
    )
    assert evaluation_mismatches(trials) == []
    unequal = pd.concat([equal, side(1, "A", [13]), side(1, "B", [12])])
    assert evaluation_mismatches(unequal) == [
        "benchmark b, method sduet, run 1: unequal evaluations per sample (side A: 13; side B: 12)"
    ]
    assert evaluation_mismatches(pd.DataFrame({"pair": ["A"], "duration_ns": [1]})) == []


def test_an_inproc_file_names_each_row_s_side_and_benchmark(tmp_path: Path) -> None:
    """Both sides timed in one process (method inproc): the last column is the side;
    each side's rows carry its own benchmark name as the workload."""
    meta = {**META, "side": "A+B", "inproc": True, "pair": {"benchmark": {"name": "v2"}}}
    side_dir = tmp_path / "A"
    side_dir.mkdir()
    (side_dir / META_FILE).write_text(json.dumps(meta))
    rows = [
        f"0,warmup,{T0},{T0 + 100},100,10,90,10,A",
        f"0,warmup,{T0 + 200},{T0 + 400},200,10,180,,B",
        f"1,sample,{T0 + 500},{T0 + 700},200,10,190,10,B",
        f"1,sample,{T0 + 800},{T0 + 900},100,10,100,0,A",
    ]
    text = ",".join((*COLUMNS, "side")) + "\n" + "\n".join(rows) + "\n"
    (side_dir / SAMPLES_FILE).write_text(text)
    df = parse(side_dir)
    assert df["inproc_side"].tolist() == ["A", "B", "B", "A"]
    assert df["workload"].tolist() == [
        META["benchmark"]["name"],
        "v2",
        "v2",
        META["benchmark"]["name"],
    ]
    assert df["duration_ns"].tolist() == [10, 20, 20, 10]
    assert df["cpu_ns"].tolist() == [9, 18, 19, 10]
    (side_dir / SAMPLES_FILE).write_text(text.replace(",B\n", ",C\n", 1))
    with pytest.raises(ResultFileError, match="unknown side 'C'"):
        parse(side_dir)


def test_cpu_time_and_run_delay_per_evaluation(tmp_path: Path) -> None:
    """A worker of this release writes the sample's CPU time and run delay; the table has
    them per evaluation like duration_ns (an empty run delay: not measured)."""
    side = write_side(
        tmp_path,
        [
            f"0,sample,{T0},{T0 + 1000},1000,4,900,102",
            f"1,sample,{T0 + 2000},{T0 + 3000},1000,4,1001,",
        ],
    )
    df = parse(side)
    assert df["cpu_ns"].tolist() == [225, 250]  # 900 / 4, 1001 / 4 half to even
    assert df["runq_ns"].iloc[0] == 26 and pd.isna(df["runq_ns"].iloc[1])
    bad = write_side(tmp_path / "bad", [f"0,sample,{T0},{T0 + 1000},1000,4,-5,0"])
    with pytest.raises(ResultFileError, match="negative cpu_ns"):
        parse(bad)
