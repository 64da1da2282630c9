"""Result-file parser plugins: fixtures -> iterations, truncated files -> ResultFileError.

Expected timestamps are computed by hand from the fixture values (shown in the
comments), not by calling the code under test.
"""

from __future__ import annotations

import gzip
import json
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from duetbench.errors import DuetError, ResultFileError
from duetbench.parse._dates import parse_date_output
from duetbench.parse.dacapo import parse_dacapo, parse_scalabench
from duetbench.parse.generic import parse_generic
from duetbench.parse.hyperfine import parse_hyperfine
from duetbench.parse.jmh import parse_jmh
from duetbench.parse.pyperf import parse_pyperf
from duetbench.parse.registry import SideContext, get_parser
from duetbench.parse.renaissance import parse_renaissance
from duetbench.parse.speccpu import parse_speccpu

FIX = Path(__file__).parent / "fixtures" / "parsers"
Parser = Callable[[SideContext], pd.DataFrame]


def side(
    side_dir: Path,
    *results: str,
    start_ns: int | None = None,
    end_ns: int | None = None,
    artifacts: Mapping[str, str] | None = None,
) -> SideContext:
    sides: dict[str, Any] = {}
    if start_ns is not None or end_ns is not None:
        sides = {"A": {"start_ns": start_ns, "end_ns": end_ns}}
    return SideContext(
        side_dir=side_dir,
        result_files=tuple(Path(r) for r in results),
        pair="A",
        benchmark="bench",
        method="aduet",
        run={"sides": sides},
        artifacts=dict(artifacts or {}),
    )


def copy_fixture(suite: str, tmp_path: Path) -> Path:
    dst = tmp_path / suite
    shutil.copytree(FIX / suite, dst)
    return dst


def assert_int64(df: pd.DataFrame, *cols: str) -> None:
    for col in cols:
        assert df[col].dtype == "int64", (col, df[col].dtype)


def assert_unusable(parser: Parser, tmp_path: Path, name: str, text: str, message: str) -> None:
    """``text`` written as ``name`` is refused with ``message``, and the error names the file."""
    (tmp_path / name).write_text(text)
    with pytest.raises(ResultFileError, match=message) as exc:
        parser(side(tmp_path, name))
    assert name in str(exc.value)


def row(df: pd.DataFrame, i: int) -> tuple[int, int, int, int]:
    r = df.iloc[i]
    return int(r["iteration"]), int(r["start_ns"]), int(r["end_ns"]), int(r["duration_ns"])


@pytest.fixture
def local_tz(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Set the process time zone (POSIX TZ string); restored afterwards."""

    def set_tz(tz: str) -> None:
        monkeypatch.setenv("TZ", tz)
        time.tzset()

    yield set_tz
    monkeypatch.undo()
    time.tzset()


# ------------------------------------------------------------------ registry


ENTRY_POINTS = {
    "generic": parse_generic,
    "renaissance": parse_renaissance,
    "dacapo": parse_dacapo,
    "scalabench": parse_scalabench,
    "speccpu": parse_speccpu,
    "pyperf": parse_pyperf,
    "pyperformance": parse_pyperf,
    "jmh": parse_jmh,
    "hyperfine": parse_hyperfine,
}


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_get_parser_finds_every_declared_entry_point(name: str) -> None:
    assert get_parser(name) is ENTRY_POINTS[name]


def test_generic_aliases_and_unknown_name() -> None:
    assert get_parser("csv") is parse_generic
    assert get_parser("jsonl") is parse_generic
    with pytest.raises(DuetError, match="no result parser named 'nosuch'"):
        get_parser("nosuch")


# ------------------------------------------------------------------- generic


def test_generic_csv_ns_with_filler_and_extras() -> None:
    df = parse_generic(side(FIX / "generic", "iterations.csv"))
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    assert len(df) == 4
    assert row(df, 0) == (0, 1_700_000_000_000_000_000, 1_700_000_000_250_000_000, 250_000_000)
    # 1700000000981999999 - 1700000000748000000
    assert row(df, 3) == (3, 1_700_000_000_748_000_000, 1_700_000_000_981_999_999, 233_999_999)
    assert df["filler"].dtype == bool
    assert df["filler"].tolist() == [True, False, False, False]
    assert df["rss_kb"].tolist() == [10240, 10496, 10512, 10512]
    assert df["rss_kb"].dtype == "int64"
    assert df["phase"].tolist() == ["warmup", "measure", "measure", "measure"]


def test_generic_jsonl_seconds_exact_and_per_workload_iterations() -> None:
    df = parse_generic(side(FIX / "generic", "iterations.jsonl"))
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    # 1700000000.5 s -> 1700000000500000000 ns exactly (no float rounding)
    assert row(df, 0) == (0, 1_700_000_000_500_000_000, 1_700_000_000_750_000_000, 250_000_000)
    # 1700000000.760000001 .. 1700000001.012345678
    assert row(df, 1) == (1, 1_700_000_000_760_000_001, 1_700_000_001_012_345_678, 252_345_677)
    assert row(df, 2) == (0, 1_700_000_001_100_000_000, 1_700_000_001_300_000_000, 200_000_000)
    assert df["workload"].tolist() == ["parse", "parse", "render"]
    assert df["rows"].tolist() == [1000, 1000, 200]


def test_generic_csv_seconds_and_benchmark_column_becomes_workload() -> None:
    df = parse_generic(side(FIX / "generic", "seconds.csv"))
    assert "benchmark" not in df.columns  # would clash with the core column
    assert df["workload"].tolist() == ["sort"] * 3
    assert row(df, 0) == (0, 1_700_000_000_000_000_123, 1_700_000_000_500_000_000, 499_999_877)
    assert row(df, 2) == (2, 1_700_000_001_020_000_000, 1_700_000_001_530_000_000, 510_000_000)


def test_generic_directory_parses_every_file_in_sorted_order(tmp_path: Path) -> None:
    d = tmp_path / "out"
    d.mkdir()
    (d / "b.jsonl").write_text('{"start_ns": 30, "end_ns": 40}\n{"start_ns": 50, "end_ns": 65}\n')
    (d / "a.csv").write_text("start_ns,end_ns\n10,20\n")
    (d / "notes.txt").write_text("ignored: not a result pattern\n")
    df = parse_generic(side(tmp_path, "out"))
    assert df["start_ns"].tolist() == [10, 30, 50]
    assert df["iteration"].tolist() == [0, 1, 2]
    assert df["duration_ns"].tolist() == [10, 10, 15]
    assert df["source_file"].tolist() == ["out/a.csv", "out/b.jsonl", "out/b.jsonl"]


def test_generic_json_array_duration_only_and_sniffed_extension(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text('{"iterations": [{"duration_ns": 5}, {"duration_ns": 7}]}')
    df = parse_generic(side(tmp_path, "r.json"))
    assert "start_ns" not in df.columns
    assert df["duration_ns"].tolist() == [5, 7]
    (tmp_path / "r.out").write_text("start,end\n1.5,2.25\n")
    df = parse_generic(side(tmp_path, "r.out"))
    assert row(df, 0) == (0, 1_500_000_000, 2_250_000_000, 750_000_000)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("start_ns,end_ns\n10,20\n30,x\n", 3, "expected a number"),
        ("start_ns,end_ns\n10,20\n30,25\n", 3, "ends before it starts"),
        ("start_ns,end_ns\n10,20\n30\n", 3, "1 fields but the header has 2"),
        ("foo,bar\n1,2\n", 2, "no timing columns"),
    ],
)
def test_generic_bad_rows_name_file_and_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    (tmp_path / "it.csv").write_text(text)
    with pytest.raises(ResultFileError, match=message) as exc:
        parse_generic(side(tmp_path, "it.csv"))
    assert exc.value.line == line
    assert str(tmp_path / "it.csv") in str(exc.value)


def test_generic_takes_a_harness_s_cpu_time_and_run_delay(tmp_path: Path) -> None:
    """A harness may report each iteration's CPU time and run delay (docs/parsers.md);
    empty values are unmeasured, anything but a non-negative integer is refused."""
    (tmp_path / "it.csv").write_text(
        "iteration,start_ns,end_ns,cpu_ns,runq_ns\n0,100,300,150,40\n1,400,600,160,\n"
    )
    df = parse_generic(side(tmp_path, "it.csv"))
    assert df["cpu_ns"].dtype == "Int64" and df["cpu_ns"].tolist() == [150, 160]
    assert df["runq_ns"].iloc[0] == 40 and pd.isna(df["runq_ns"].iloc[1])
    (tmp_path / "it.csv").write_text("start_ns,end_ns,cpu_ns\n100,300,lots\n")
    with pytest.raises(ResultFileError, match="cpu_ns must be a non-negative integer") as exc:
        parse_generic(side(tmp_path, "it.csv"))
    assert exc.value.line == 2


def test_builtin_harness_files_with_and_without_cpu_time(tmp_path: Path) -> None:
    """The built-in harness writes cpu_ns and runq_ns (empty where not measured, e.g.
    through a container engine); a file of an older release has neither."""
    from duetbench.parse.builtin import parse_command

    head = "iteration,start_ns,end_ns,duration_ns,filler,exit_code"
    (tmp_path / "iterations.csv").write_text(
        f"{head},cpu_ns,runq_ns\n0,10,30,20,0,0,15,4\n1,40,60,20,0,0,,\n"
    )
    df = parse_command(side(tmp_path))
    assert df["cpu_ns"].tolist()[0] == 15 and pd.isna(df["cpu_ns"].iloc[1])
    assert df["runq_ns"].dtype == "Int64"
    (tmp_path / "iterations.csv").write_text(f"{head},cpu_ns,runq_ns\n0,10,30,20,0,0,,\n")
    assert "cpu_ns" not in parse_command(side(tmp_path)).columns  # nothing measured
    (tmp_path / "iterations.csv").write_text(f"{head}\n0,10,30,20,0,0\n")
    assert list(parse_command(side(tmp_path)).columns) == head.split(",")


# -------------------------------------------------------------- renaissance


def test_renaissance_two_benchmarks() -> None:
    df = parse_renaissance(side(FIX / "renaissance", "results.json"))
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    assert df["workload"].tolist() == ["scrabble"] * 4 + ["chi-square"] * 3
    assert df["iteration"].tolist() == [0, 1, 2, 3, 0, 1, 2]
    # start_unix_ms 1700000000123 -> 1700000000123000000 ns, + uptime_ns 2515700351
    # end = start + duration_ns 911379929
    assert row(df, 0) == (0, 1_700_000_002_638_700_351, 1_700_000_003_550_080_280, 911_379_929)
    # + uptime_ns 9498765432, duration 1594764894
    assert row(df, 6) == (2, 1_700_000_009_621_765_432, 1_700_000_011_216_530_326, 1_594_764_894)
    assert (df["termination"] == "normal").all()


def test_renaissance_missing_vm_start(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(
        '{"data": {"b": {"results": [{"duration_ns": 5, "uptime_ns": 7}]}},'
        ' "environment": {"vm": {}}}'
    )
    with pytest.raises(ResultFileError, match="environment.vm.start_unix_ms"):
        parse_renaissance(side(tmp_path, "r.json"))


def test_renaissance_0_10_json_nanos_and_unixts() -> None:
    # format_version 4 (Renaissance 0.10): no JVM start; nanos + unixts.before/after (ms)
    df = parse_renaissance(side(FIX / "renaissance", "results-0.10.json"))
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    assert df["workload"].tolist() == ["future-genetic"] * 3 + ["akka-uct"]
    assert df["iteration"].tolist() == [0, 1, 2, 0]
    # unixts.before 1600000000701 ms; nanos 3126871449
    assert row(df, 0) == (0, 1_600_000_000_701_000_000, 1_600_000_003_827_871_449, 3_126_871_449)
    # unixts.before 1600000008700 ms; nanos 9876543210
    assert row(df, 3) == (0, 1_600_000_008_700_000_000, 1_600_000_018_576_543_210, 9_876_543_210)
    # the operation lies within [before, after + 1 ms): (3902 + 1 - 701) ms - nanos
    assert int(df["ts_max_error_ns"].iloc[0]) == 3_202_000_000 - 3_126_871_449
    assert df["termination"].tolist() == ["normal"] * 3 + ["failure"]
    assert "unixts.before" not in df.columns and "nanos" not in df.columns


def test_renaissance_failed_benchmark_and_forced_termination() -> None:
    # a failing repetition is not written by the harness; its benchmark says "failure"
    df = parse_renaissance(side(FIX / "renaissance", "failed-0.14.json"))
    assert df["workload"].tolist() == ["finagle-http", "finagle-http", "dotty"]
    assert df["termination"].tolist() == ["failure", "failure", "normal"]
    assert (df["vm_termination"] == "forced").all()
    # 1650000000000 ms + uptime_ns 4830000000, duration 2498765432
    assert row(df, 1) == (1, 1_650_000_004_830_000_000, 1_650_000_007_328_765_432, 2_498_765_432)


def test_renaissance_csv_0_14_and_0_10() -> None:
    df = parse_renaissance(side(FIX / "renaissance", "results-0.14.csv"))
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    assert df["workload"].tolist() == ["scrabble"] * 3 + ["chi-square"] * 2
    assert df["iteration"].tolist() == [0, 1, 2, 0, 1]
    # vm_start_unix_ms 1700000000123 + uptime_ns 2515700351; duration_ns 911379929
    assert row(df, 0) == (0, 1_700_000_002_638_700_351, 1_700_000_003_550_080_280, 911_379_929)
    assert row(df, 4) == (1, 1_700_000_007_632_876_543, 1_700_000_009_593_477_856, 1_960_601_313)
    assert "vm_start_unix_ms" not in df.columns and "benchmark" not in df.columns
    old = parse_renaissance(side(FIX / "renaissance", "results-0.10.csv"))
    assert row(old, 1) == (1, 1_600_000_003_905_000_000, 1_600_000_006_325_115_310, 2_420_115_310)


def test_renaissance_csv_found_when_there_is_no_json(tmp_path: Path) -> None:
    shutil.copy(FIX / "renaissance" / "results-0.14.csv", tmp_path / "out.csv")
    (tmp_path / "stdout.log").write_text("====== scrabble (functional) [default], iteration 0\n")
    df = parse_renaissance(side(tmp_path))
    assert len(df) == 5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"format_version": 2, "results": {"b": []}}', "before 0.10"),
        ('{"data": {"b": {"results": [{"cycles": 5}]}}}', "neither 'duration_ns'"),
        ('{"data": {}}', "no repetition"),
        ("benchmark,cycles\nb,5\n", "not a Renaissance --csv"),
        ("benchmark,duration_ns,uptime_ns,vm_start_unix_ms\nb,x,1,1700000000000\n", "number"),
    ],
)
def test_renaissance_unusable_files(tmp_path: Path, text: str, message: str) -> None:
    assert_unusable(parse_renaissance, tmp_path, "r.json", text, message)


# ------------------------------------------------------------ dacapo/scala


def test_dacapo_start_unix() -> None:
    df = parse_dacapo(side(FIX / "dacapo", "results.csv"))
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    assert df["iteration"].tolist() == list(range(6))
    # start_unix 1700000100512 ms; iteration_time_ns 4123456789
    assert row(df, 0) == (0, 1_700_000_100_512_000_000, 1_700_000_104_635_456_789, 4_123_456_789)
    # start_unix 1700000113766 ms; iteration_time_ns 1943210987
    assert row(df, 5) == (5, 1_700_000_113_766_000_000, 1_700_000_115_709_210_987, 1_943_210_987)
    assert not df["synthetic_ts"].any()
    assert df["total_ms"].tolist()[0] == 4124


def test_container_path_in_results_is_found_in_side_dir() -> None:
    # the thesis' duet.yml lists `/duet/results.csv`, a path inside the container
    df = parse_dacapo(side(FIX / "dacapo", "/duet/results.csv"))
    assert len(df) == 6


SCALA_DURATIONS = [6_312_456_789, 4_120_987_654, 3_611_234_567, 3_587_654_321, 3_571_234_987]


def _check_scalabench_laid_out(df: pd.DataFrame, origin: int) -> None:
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    assert df["duration_ns"].tolist() == SCALA_DURATIONS
    assert df["synthetic_ts"].all()
    assert row(df, 0) == (0, origin, origin + 6_312_456_789, 6_312_456_789)
    # 6312456789 + 4120987654 + 3611234567 + 3587654321 = 17632333331
    assert row(df, 4) == (4, origin + 17_632_333_331, origin + 21_203_568_318, 3_571_234_987)


def test_scalabench_old_build_laid_out_from_process_start() -> None:
    ctx = side(FIX / "scalabench", "results.csv", start_ns=1_700_000_200_000_000_000)
    df = parse_scalabench(ctx)
    _check_scalabench_laid_out(df, 1_700_000_200_000_000_000)
    assert df["iteration"].tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    "date",
    [
        "Tue Nov 14 22:16:40 UTC 2023\n",  # default `date`, C locale
        "Tue Nov 14 11:16:40 PM CET 2023\n",  # en_US locale, another zone
        "2023-11-14T22:16:40+00:00",  # date -Iseconds
        "1700000200\n",  # date +%s
    ],
)
def test_scalabench_old_build_laid_out_from_date_artifact(date: str) -> None:
    df = parse_scalabench(side(FIX / "scalabench", "results.csv", artifacts={"date": date}))
    _check_scalabench_laid_out(df, 1_700_000_200_000_000_000)  # 2023-11-14 22:16:40 UTC


def test_dacapo_old_build_without_any_origin_gives_durations_only() -> None:
    # nothing to place them from: the processing step lays them out from the process start
    df = parse_scalabench(side(FIX / "scalabench", "results.csv"))
    assert "start_ns" not in df.columns and "end_ns" not in df.columns
    assert df["duration_ns"].tolist() == SCALA_DURATIONS
    assert df["iteration"].tolist() == [0, 1, 2, 3, 4]


LOGS = FIX / "dacapo-logs"


def test_dacapo_9_12_log_lines_without_a_csv() -> None:
    # no results: listed and no CSV: the harness' stderr lines are read
    df = parse_dacapo(side(LOGS / "9.12", start_ns=1_700_000_000_000_000_000))
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    assert df["workload"].tolist() == ["lusearch"] * 3
    assert df["duration_ns"].tolist() == [1_873_000_000, 1_104_000_000, 987_000_000]
    assert df["harness_warmup"].tolist() == [True, True, False]
    assert (df["exit_code"] == 0).all()
    assert df["synthetic_ts"].all()
    # laid end to end from the process start: 1873 + 1104 ms
    assert row(df, 2) == (2, 1_700_000_002_977_000_000, 1_700_000_003_964_000_000, 987_000_000)
    assert (df["dacapo_version"] == "9.12").all()


def test_dacapo_23_11_log_with_several_benchmarks_and_latency_lines() -> None:
    df = parse_dacapo(side(LOGS / "23.11", "stderr.log"))
    assert "start_ns" not in df.columns  # no process start, no date: durations only
    assert df["workload"].tolist() == ["h2"] * 3 + ["avrora"]
    assert df["iteration"].tolist() == [0, 1, 2, 0]
    assert df["duration_ns"].tolist() == [
        4_211_000_000,
        2_950_000_000,
        2_803_000_000,
        1_968_000_000,
    ]
    assert df["harness_warmup"].tolist() == [True, True, False, False]
    assert (df["dacapo_version"] == "23.11-chopin").all()
    # the side directory searched: stdout.log has no harness line and is skipped
    assert len(parse_dacapo(side(LOGS / "23.11"))) == 4


def test_dacapo_2006_log_without_version_listed_by_name() -> None:
    df = parse_dacapo(side(LOGS / "2006", "dacapo.txt"))
    assert df["workload"].tolist() == ["antlr", "antlr"]
    assert df["duration_ns"].tolist() == [3_217_000_000, 2_380_000_000]
    assert "dacapo_version" not in df.columns


def test_dacapo_failed_iteration_is_kept_with_an_exit_code() -> None:
    df = parse_dacapo(side(LOGS / "failed", start_ns=1_000_000_000))
    assert df["exit_code"].tolist() == [0, 1]  # the processing step excludes and counts it
    assert df["duration_ns"].tolist() == [2_417_000_000, 0]
    assert df["harness_warmup"].tolist() == [True, True]
    assert df["workload"].tolist() == ["fop", "fop"]


def test_dacapo_log_without_harness_lines(tmp_path: Path) -> None:
    (tmp_path / "stderr.log").write_text("Error: Could not find or load main class Harness\n")
    with pytest.raises(ResultFileError, match="no DaCapo iterations") as exc:
        parse_dacapo(side(tmp_path))
    assert "stderr.log" in str(exc.value)


def test_dacapo_unreadable_date_artifact() -> None:
    ctx = side(
        FIX / "scalabench", "results.csv", artifacts={"date": "Tue Nov 14 22:16:40 XYZ 2023"}
    )
    with pytest.raises(ResultFileError, match="artifact 'date' is unreadable"):
        parse_dacapo(ctx)


def test_dacapo_not_a_harness_csv(tmp_path: Path) -> None:
    (tmp_path / "results.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ResultFileError, match="iteration_time_ns") as exc:
        parse_dacapo(side(tmp_path, "results.csv"))
    assert exc.value.line == 1


def test_date_artifact_formats() -> None:
    assert parse_date_output("Sun, 22 Nov 2026 02:52:58 +0000") == 1_795_315_978_000_000_000
    assert parse_date_output("2026-11-22T02:52:58,123456789+01:00") == 1_795_312_378_123_456_789
    assert parse_date_output("1795315978.25") == 1_795_315_978_250_000_000
    with pytest.raises(ValueError, match="no UTC offset"):
        parse_date_output("2026-11-22T02:52:58")


# ------------------------------------------------------------------ speccpu


def test_speccpu_rate_start_end_per_benchmark() -> None:
    df = parse_speccpu(side(FIX / "speccpu", "result"))
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    assert df["workload"].tolist() == ["505.mcf_r"] * 2 + ["531.deepsjeng_r"] * 2
    assert df["iteration"].tolist() == [0, 1, 0, 1]
    # Rate Start (1654092292.28303), Rate End (1654092757.17651)
    assert row(df, 0) == (0, 1_654_092_292_283_030_000, 1_654_092_757_176_510_000, 464_893_480_000)
    # Rate Start (1654093521.20455), Rate End (1654093819.98011)
    assert row(df, 3) == (1, 1_654_093_521_204_550_000, 1_654_093_819_980_110_000, 298_775_560_000)
    assert "source_file" not in df.columns  # the build log (CPU2017.001.log) has no iterations


def test_speccpu_speed_run_without_rate_lines_and_a_failed_iteration() -> None:
    df = parse_speccpu(side(FIX / "speccpu-speed", "result"))
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    assert df["workload"].tolist() == ["605.mcf_s", "619.lbm_s"]
    # Run Start (1676016010) + Run Reported 581.734512 s
    assert row(df, 0) == (0, 1_676_016_010_000_000_000, 1_676_016_591_734_512_000, 581_734_512_000)
    assert row(df, 1) == (0, 1_676_016_593_000_000_000, 1_676_016_810_102_938_000, 217_102_938_000)
    assert df["ts_source"].tolist() == ["run", "run"]
    # the miscompare ("Error 619.lbm_s ...") is excluded and counted by the processing step
    assert df["status"].tolist() == ["Success", "Error"]
    assert df["exit_code"].tolist() == [0, 1]


def test_speccpu_rate_run_reports_status_and_reported_time() -> None:
    df = parse_speccpu(side(FIX / "speccpu", "result"))
    assert df["ts_source"].tolist() == ["rate"] * 4
    assert (df["exit_code"] == 0).all() and (df["status"] == "Success").all()
    # Run Reported (464 893480000 464.893480) equals Rate End - Rate Start here
    assert int(df["reported_ns"].iloc[0]) == 464_893_480_000 == int(df["duration_ns"].iloc[0])


def test_speccpu_truncated_block_names_its_line(tmp_path: Path) -> None:
    d = tmp_path / "result"
    d.mkdir()
    text = (FIX / "speccpu-speed" / "result" / "CPU2017.007.log").read_text()
    (d / "CPU2017.007.log").write_text(text[: text.rindex("  Run Stop:")])
    with pytest.raises(ResultFileError, match="truncated") as exc:
        parse_speccpu(side(tmp_path, "result"))
    assert exc.value.line == 25  # the last block's 'Run Start:'


def test_speccpu_log_without_iterations(tmp_path: Path) -> None:
    d = tmp_path / "result"
    d.mkdir()
    shutil.copy(FIX / "speccpu" / "result" / "CPU2017.001.log", d)
    with pytest.raises(ResultFileError, match="no 'Benchmark Times:' block"):
        parse_speccpu(side(tmp_path, "result"))


# ------------------------------------------------------------------- pyperf

# run dates (naive local time, written on a UTC machine) as UTC epoch ns
D_SUM_0 = 1_795_315_974_676_687_000  # 2026-11-22 02:52:54.676687
D_SORT_1 = 1_795_315_975_367_516_000  # 2026-11-22 02:52:55.367516
PYPERF_PROC = (1_795_315_974_000_000_000, 1_795_315_976_000_000_000)  # 02:52:54 .. 02:52:56 UTC


def _check_pyperf(df: pd.DataFrame, shift: int = 0) -> None:
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    assert len(df) == 16  # 2 benchmarks x 2 runs x (1 warm-up + 3 values)
    assert df["workload"].tolist() == ["sum_range"] * 8 + ["sorted_list"] * 8
    assert df["iteration"].tolist() == list(range(8)) * 2
    assert df["filler"].tolist() == ([True, False, False, False] * 4)
    # run 0 of sum_range, loops=10: warm-up 1.4002000000346015e-06*10 s -> raw 14002 ns,
    # values 12010, 11805, 11694 ns; sum 49511; the last value ends at the run's date.
    # duration_ns is pyperf's own value, the time per loop: 1400.2000000346015 ns -> 1400
    assert row(df, 0) == (0, D_SUM_0 - 49_511 + shift, D_SUM_0 - 35_509 + shift, 1_400)
    assert row(df, 3) == (3, D_SUM_0 - 11_694 + shift, D_SUM_0 + shift, 1_169)
    # last value of sorted_list run 1: 1.8522999994274869e-06 s * 10 loops * 2 inner_loops
    assert row(df, 15) == (7, D_SORT_1 - 37_046 + shift, D_SORT_1 + shift, 1_852)
    assert df["raw_ns"].tolist()[:4] == [14_002, 12_010, 11_805, 11_694]
    assert (df["raw_ns"] == df["end_ns"] - df["start_ns"]).all()
    assert df["loops"].tolist() == [10] * 16
    assert df["inner_loops"].tolist() == [1] * 8 + [2] * 8
    # error bound: duration 0.012520469000037338 s - 49511 ns measured + 1 us date resolution
    assert int(df["ts_max_error_ns"].iloc[0]) == 12_520_469 - 49_511 + 1_000
    assert df["worker"].tolist()[:8] == [0] * 4 + [1] * 4


def test_pyperf_timestamps_from_run_dates() -> None:
    start, end = PYPERF_PROC
    df = parse_pyperf(side(FIX / "pyperf", "bench.json", start_ns=start, end_ns=end))
    _check_pyperf(df)


def test_pyperf_infers_utc_offset_from_process_lifetime() -> None:
    # the same file as if written at UTC+1: the process ran an hour earlier in UTC
    hour = 3_600_000_000_000
    start, end = PYPERF_PROC
    df = parse_pyperf(side(FIX / "pyperf", "bench.json", start_ns=start - hour, end_ns=end - hour))
    _check_pyperf(df, shift=-hour)


def test_pyperf_without_process_times_uses_local_zone(local_tz: Callable[[str], None]) -> None:
    local_tz("UTC0")
    _check_pyperf(parse_pyperf(side(FIX / "pyperf", "bench.json")))
    local_tz("XXX-1")  # POSIX: UTC+1
    _check_pyperf(parse_pyperf(side(FIX / "pyperf", "bench.json")), shift=-3_600_000_000_000)


def test_pyperf_gzip(tmp_path: Path) -> None:
    with gzip.open(tmp_path / "bench.json.gz", "wb") as fh:
        fh.write((FIX / "pyperf" / "bench.json").read_bytes())
    start, end = PYPERF_PROC
    _check_pyperf(parse_pyperf(side(tmp_path, "bench.json.gz", start_ns=start, end_ns=end)))


def test_pyperf_file_from_another_run() -> None:
    day = 86_400_000_000_000
    start, end = PYPERF_PROC
    with pytest.raises(ResultFileError, match="outside the side's process lifetime"):
        parse_pyperf(side(FIX / "pyperf", "bench.json", start_ns=start + day, end_ns=end + day))


def test_pyperf_truncated_gzip(tmp_path: Path) -> None:
    data = gzip.compress((FIX / "pyperf" / "bench.json").read_bytes())
    (tmp_path / "bench.json.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ResultFileError, match="gzip") as exc:
        parse_pyperf(side(tmp_path, "bench.json.gz"))
    assert "bench.json.gz" in str(exc.value)


T_PYPERFORMANCE = 1_709_287_200_000_000_000  # 2024-03-01 10:00:00 UTC


def test_pyperformance_suite_with_calibration_run_and_inner_loops() -> None:
    # compact one-line suite file: common metadata at the top, a calibration-only run
    # (warm-ups only, calibrate_loops), loops per run, inner_loops per benchmark
    t0 = T_PYPERFORMANCE
    ctx = side(FIX / "pyperf", "pyperformance.json", start_ns=t0, end_ns=t0 + 4_000_000_000)
    df = parse_pyperf(ctx)
    assert_int64(df, "iteration", "start_ns", "end_ns", "duration_ns")
    assert df["workload"].tolist() == ["nbody"] * 7 + ["unpack_sequence"] * 3
    assert df["iteration"].tolist() == list(range(7)) + [0, 1, 2]
    assert df["filler"].tolist() == [True] * 4 + [False] * 3 + [True, False, False]
    assert df["calibration"].tolist() == [True] * 3 + [False] * 7
    # calibration warm-ups [1, 0.005] [2, 0.004] [4, 0.00375]: 5, 8, 15 ms, ending at 01.5;
    # per loop 5, 4, 3.75 ms
    assert df["raw_ns"].tolist()[:3] == [5_000_000, 8_000_000, 15_000_000]
    assert df["duration_ns"].tolist()[:3] == [5_000_000, 4_000_000, 3_750_000]
    assert df["loops"].tolist()[:3] == [1, 2, 4]
    assert row(df, 0) == (0, t0 + 1_472_000_000, t0 + 1_477_000_000, 5_000_000)
    # run 1, loops 4: warm-up 15 ms, values 0.0035 * 4 = 14 ms, 13 ms, 13.6 ms, ending at 02.0
    assert row(df, 4) == (4, t0 + 1_959_400_000, t0 + 1_973_400_000, 3_500_000)
    assert row(df, 6) == (6, t0 + 1_986_400_000, t0 + 2_000_000_000, 3_400_000)
    # inner_loops 400 x loops 1024: 4.75e-08 s -> 19.456 ms; the date has no fraction;
    # per loop (pyperf's value, per inner loop) 47.5 ns -> 48 (half to even)
    assert row(df, 9) == (2, t0 + 2_980_544_000, t0 + 3_000_000_000, 48)
    assert df["raw_ns"].iloc[9] == 19_456_000
    assert df["loops"].tolist()[7:] == [1024, 1024, 1024]
    assert df["inner_loops"].tolist()[7:] == [400, 400, 400]
    # duration 0.05 s - 28 ms measured + 1 us
    assert int(df["ts_max_error_ns"].iloc[0]) == 22_001_000


def _pyperf_doc(**bench_meta: Any) -> dict[str, Any]:
    return {
        "version": "1.0",
        "benchmarks": [
            {
                "metadata": {"name": "b", **bench_meta},
                "runs": [{"metadata": {"loops": 2}, "values": [0.5, 0.25]}],
            }
        ],
    }


def test_pyperf_run_without_date_gives_durations_only(tmp_path: Path) -> None:
    # e.g. after `pyperf convert --remove-all-metadata`: no date to place the run
    (tmp_path / "b.json").write_text(json.dumps(_pyperf_doc(unit="second")))
    df = parse_pyperf(side(tmp_path, "b.json"))
    assert "start_ns" not in df.columns
    assert df["duration_ns"].tolist() == [500_000_000, 250_000_000]  # per loop
    assert df["raw_ns"].tolist() == [1_000_000_000, 500_000_000]  # value x loops 2


def test_pyperf_run_without_date_is_laid_out_by_raw_times(tmp_path: Path) -> None:
    # with the process start known, the undated runs are laid end to end from it by their
    # raw times (the processing step would use the per-loop durations: far too short)
    (tmp_path / "b.json").write_text(json.dumps(_pyperf_doc(unit="second")))
    df = parse_pyperf(side(tmp_path, "b.json", start_ns=10**18, end_ns=10**18 + 5 * 10**9))
    assert df["start_ns"].tolist() == [10**18, 10**18 + 10**9]
    assert df["end_ns"].tolist() == [10**18 + 10**9, 10**18 + 1_500_000_000]
    assert df["duration_ns"].tolist() == [500_000_000, 250_000_000]
    assert df["synthetic_ts"].all()
    assert "ts_max_error_ns" not in df.columns


def test_pyperf_memory_benchmarks_are_skipped_or_an_error(tmp_path: Path) -> None:
    mem = _pyperf_doc(unit="byte")
    (tmp_path / "mem.json").write_text(json.dumps(mem))
    with pytest.raises(ResultFileError, match="--track-memory") as exc:
        parse_pyperf(side(tmp_path, "mem.json"))
    assert "b (byte)" in str(exc.value)
    both = _pyperf_doc()
    both["benchmarks"].append({**mem["benchmarks"][0], "metadata": {"name": "m", "unit": "byte"}})
    (tmp_path / "both.json").write_text(json.dumps(both))
    df = parse_pyperf(side(tmp_path, "both.json"))
    assert df["workload"].tolist() == ["b", "b"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"version": 5, "benchmarks": []}, "unsupported pyperf file format version 5"),
        ({"version": "1.0", "benchmarks": [{"runs": [{"values": "x"}]}]}, "values is not a list"),
        ({"version": "1.0", "benchmarks": [{"runs": [{"warmups": [[0, 1.0]]}]}]}, "positive"),
        ({"version": "1.0", "benchmarks": [{"runs": [{"metadata": {"date": 5}}]}]}, "date"),
        ({"version": "1.0", "benchmarks": []}, "no runs"),
    ],
)
def test_pyperf_unusable_files(tmp_path: Path, doc: dict[str, Any], message: str) -> None:
    assert_unusable(parse_pyperf, tmp_path, "b.json", json.dumps(doc), message)


# ---------------------------------------------------------------- jmh


def test_jmh_scores_to_ns_per_op() -> None:
    df = parse_jmh(side(FIX / "jmh", "result.json"))
    assert_int64(df, "iteration", "duration_ns")
    assert "start_ns" not in df.columns and "end_ns" not in df.columns
    parse = "org.example.JsonBench.parse(size=1000)"
    assert df["workload"].tolist() == [parse] * 6 + ["org.example.JsonBench.serialize"] * 3
    assert df["iteration"].tolist() == [0, 1, 2, 3, 4, 5, 0, 1, 2]
    assert df["fork"].tolist() == [0, 0, 0, 1, 1, 1, 0, 0, 0]
    # avgt ms/op: 3.25 ms -> 3250000 ns ... 3.175 ms -> 3175000 ns
    assert df["duration_ns"].tolist()[:6] == [
        3_250_000,
        3_187_500,
        3_200_000,
        3_300_000,
        3_150_000,
        3_175_000,
    ]
    # thrpt ops/s: 1e9/125000 = 8000; 1e9/128000 = 7812.5 -> 7812 (half to even);
    # 1e9/131072 = 7629.39453125 -> 7629
    assert df["duration_ns"].tolist()[6:] == [8_000, 7_812, 7_629]
    assert df["ns_per_op"].iloc[7] == pytest.approx(7812.5)
    assert df["param_size"].iloc[0] == "1000"


def test_jmh_sample_ss_thrpt_units_and_nan_iterations() -> None:
    df = parse_jmh(side(FIX / "jmh", "modes.json"))
    assert_int64(df, "iteration", "duration_ns")
    cache = "org.example.Cache.get(keys=100, policy=lru)"
    assert df["workload"].tolist() == (
        [cache] * 2
        + ["org.example.Startup.boot"] * 2
        + ["org.example.Queue.offer"] * 3
        + ["org.example.Hash.murmur"] * 3
    )
    assert df["mode"].tolist() == ["sample"] * 2 + ["ss"] * 2 + ["thrpt"] * 3 + ["avgt"] * 3
    # sample, us/op: histogram mean (10.24 x 3 + 11.0) / 4 = 10.43 us; (9.5 x 2 + 10.5 x 2) / 4
    # ss, s/op: 0.0123 s, 0.0119 s (one iteration in each of two forks)
    # thrpt, ops/ms: 1e6 / 2500 = 400 ns, 1e6 / 2000 = 500, 1e6 / 3 = 333333.3 -> 333333
    # avgt, ns/op: 12.25 -> 12 (half to even), "NaN" -> failed row, 12.75 -> 13
    assert df["duration_ns"].tolist() == [
        10_430,
        10_000,
        12_300_000,
        11_900_000,
        400,
        500,
        333_333,
        12,
        0,
        13,
    ]
    assert df["fork"].tolist()[2:4] == [0, 1]
    assert df["exit_code"].tolist() == [0] * 8 + [1, 0]  # excluded and counted as failed
    assert df["ns_per_op"].iloc[6] == pytest.approx(1e6 / 3)
    assert df["param_policy"].iloc[0] == "lru"
    assert df["threads"].tolist()[4] == 4


def test_jmh_old_version_with_line_ends_inside_strings() -> None:
    # JMH < 1.21 pretty-printed a @Param value "a,b" as "a,<line end>    b"
    df = parse_jmh(side(FIX / "jmh", "old-jmh-1.19.json"))
    assert df["workload"].tolist() == ["org.example.Split.csv(line=a,b)"] * 2
    assert df["duration_ns"].tolist() == [1_250, 1_750]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "no benchmark results"),
        (
            '[{"benchmark": "b", "primaryMetric": {"scoreUnit": "ms/op", "rawData": []}}]',
            "jmh.json.rawData=false",
        ),
        ('[{"benchmark": "b", "primaryMetric": {"scoreUnit": "ms/op"}}]', "neither 'rawData'"),
        (
            '[{"benchmark": "b", "primaryMetric": {"scoreUnit": "ms/op", "rawData": [["x"]]}}]',
            "expected a number",
        ),
        ('{"benchmark": "b"}', "expected an array"),
    ],
)
def test_jmh_unusable_files(tmp_path: Path, text: str, message: str) -> None:
    assert_unusable(parse_jmh, tmp_path, "r.json", text, message)


def test_jmh_unknown_unit(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(
        '[{"benchmark": "b", "mode": "thrpt", "primaryMetric": {"scoreUnit": "bananas", "rawData": [[1.0]]}}]'
    )
    with pytest.raises(ResultFileError, match="bananas"):
        parse_jmh(side(tmp_path, "r.json"))


# ------------------------------------------------------------- hyperfine


def test_hyperfine_commands_as_workloads() -> None:
    df = parse_hyperfine(side(FIX / "hyperfine", "results.json"))
    assert_int64(df, "iteration", "duration_ns")
    assert "start_ns" not in df.columns
    assert df["workload"].tolist() == ["sleep 0.01"] * 5 + ["sleep 0.02"] * 5
    assert df["iteration"].tolist() == list(range(5)) * 2
    # times[0] 0.013563332 s; last 0.021157442000000002 s -> 21157442 ns
    assert row_dur(df, 0) == (0, 13_563_332)
    assert row_dur(df, 9) == (4, 21_157_442)
    assert (df["exit_code"] == 0).all()


def test_hyperfine_failed_runs_memory_and_parameters() -> None:
    # hyperfine -i (--ignore-failure): a run killed by a signal has a null exit code
    df = parse_hyperfine(side(FIX / "hyperfine", "failing-1.18.json"))
    assert df["duration_ns"].tolist() == [612_000_000, 225_000_000, 725_000_000]
    assert df["exit_code"].tolist() == [0, -1, 3]  # non-zero: excluded and counted as failed
    assert df["exit_code"].dtype == "int64"
    assert df["memory_usage_byte"].tolist() == [52_428_800, 13_107_200, 52_461_568]
    assert (df["param_threads"] == "8").all()


def test_hyperfine_1_10_parameter_scan_and_1_5_without_exit_codes(tmp_path: Path) -> None:
    # 1.6-1.10 wrote one unnamed "parameter"; before 1.11 there were no exit codes
    df = parse_hyperfine(side(FIX / "hyperfine", "scan-1.10.json"))
    assert df["workload"].tolist() == ["make -j 2"] * 2 + ["make -j 4"] * 2
    assert df["param"].tolist() == ["2", "2", "4", "4"]
    assert df["duration_ns"].tolist() == [
        4_000_000_000,
        5_000_000_000,
        2_500_000_000,
        3_000_000_000,
    ]
    old = parse_hyperfine(side(FIX / "hyperfine", "old-1.5.json"))
    assert "exit_code" not in old.columns
    assert old["duration_ns"].tolist() == [222_400_000, 198_100_000]
    # read together, the file without exit codes has no failed run (not a missing code)
    shutil.copy(FIX / "hyperfine" / "old-1.5.json", tmp_path / "a.json")
    shutil.copy(FIX / "hyperfine" / "failing-1.18.json", tmp_path / "b.json")
    both = parse_hyperfine(side(tmp_path))
    assert both["exit_code"].tolist() == [0, 0, 0, -1, 3]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"results": [{"command": "x", "times": [1.0], "exit_codes": []}]}', "exit_codes"),
        ('{"results": [{"command": "x", "times": ["a"]}]}', "expected a number"),
        ('{"results": [{"command": "x"}]}', "no 'times'"),
        ('{"results": []}', "no iterations"),
    ],
)
def test_hyperfine_unusable_files(tmp_path: Path, text: str, message: str) -> None:
    assert_unusable(parse_hyperfine, tmp_path, "h.json", text, message)


def row_dur(df: pd.DataFrame, i: int) -> tuple[int, int]:
    return int(df["iteration"].iloc[i]), int(df["duration_ns"].iloc[i])


# --------------------------------------------- truncated and missing files


def _cut_after_comma(text: str) -> str:
    """Cut a CSV in the middle of a data row, right after a field separator."""
    lines = text.splitlines(keepends=True)
    keep = "".join(lines[: len(lines) // 2 + 1])
    last = lines[len(lines) // 2 + 1]
    return keep + last[: last.index(",") + 1]


def _cut_half(text: str) -> str:
    """Cut in the middle of a line (never right after a line end)."""
    cut = text[: len(text) // 2]
    return cut[:-2] if cut.endswith("\n") else cut


def _cut_after_rate_start(text: str) -> str:
    return text[: text.rindex("Rate End:")]


TRUNCATED = [
    # (suite dir, file to truncate (relative), results entry, parser, how to cut)
    ("generic", "iterations.csv", "iterations.csv", parse_generic, _cut_after_comma),
    ("generic", "iterations.jsonl", "iterations.jsonl", parse_generic, _cut_half),
    ("renaissance", "results.json", "results.json", parse_renaissance, _cut_half),
    ("dacapo", "results.csv", "results.csv", parse_dacapo, _cut_half),
    ("scalabench", "results.csv", "results.csv", parse_scalabench, _cut_half),
    ("speccpu", "result/CPU2017.002.log", "result", parse_speccpu, _cut_after_rate_start),
    ("pyperf", "bench.json", "bench.json", parse_pyperf, _cut_half),
    ("jmh", "result.json", "result.json", parse_jmh, _cut_half),
    ("hyperfine", "results.json", "results.json", parse_hyperfine, _cut_half),
]


@pytest.mark.parametrize(
    ("suite", "name", "entry", "parser", "cut"), TRUNCATED, ids=[t[1] for t in TRUNCATED]
)
def test_truncated_file_is_a_result_file_error(
    tmp_path: Path,
    suite: str,
    name: str,
    entry: str,
    parser: Parser,
    cut: Callable[[str], str],
) -> None:
    d = copy_fixture(suite, tmp_path)
    path = d / name
    path.write_text(cut(path.read_text()))
    ctx = side(d, entry, start_ns=1, artifacts={"date": "1700000000"})
    with pytest.raises(ResultFileError) as exc:
        parser(ctx)
    assert str(path) in str(exc.value)
    assert exc.value.path == str(path)
    assert exc.value.line is not None


@pytest.mark.parametrize("parser", sorted(set(ENTRY_POINTS.values()), key=lambda p: p.__name__))
def test_no_result_file_is_a_result_file_error(tmp_path: Path, parser: Parser) -> None:
    with pytest.raises(ResultFileError, match="no .* result file found"):
        parser(side(tmp_path, "results.json"))  # listed but never written
    with pytest.raises(ResultFileError, match="no .* result file found"):
        parser(side(tmp_path))  # nothing listed, empty side dir


@pytest.mark.parametrize(
    ("parser", "suite", "entry"),
    [
        (parse_renaissance, "renaissance", "results.json"),
        (parse_pyperf, "pyperf", "bench.json"),
        (parse_jmh, "jmh", "result.json"),
        (parse_hyperfine, "hyperfine", "results.json"),
    ],
)
def test_wrong_json_kind_is_a_result_file_error(
    parser: Parser, suite: str, entry: str, tmp_path: Path
) -> None:
    # each JSON parser fed another suite's JSON file
    other = "hyperfine/results.json" if suite != "hyperfine" else "renaissance/results.json"
    shutil.copy(FIX / other, tmp_path / entry)
    with pytest.raises(ResultFileError) as exc:
        parser(side(tmp_path, entry))
    assert entry in str(exc.value)


@pytest.mark.parametrize(
    ("directory", "results", "start_ns", "suite"),
    [
        ("dacapo", ("results.csv",), None, "dacapo"),
        ("dacapo-logs/9.12", ("stderr.log",), 1_700_000_000_000_000_000, "dacapo"),
        ("dacapo-logs/9.12", (), 1_700_000_000_000_000_000, "dacapo"),
        ("renaissance", ("results.json",), None, "renaissance"),
        ("jmh", ("result.json",), None, "jmh"),
        ("pyperf", ("bench.json",), None, "pyperf"),
        ("hyperfine", ("results.json",), None, "hyperfine"),
        ("speccpu", ("result",), None, "speccpu"),
    ],
)
def test_generic_hands_a_suites_own_file_to_that_suites_parser(
    directory: str, results: tuple[str, ...], start_ns: int | None, suite: str
) -> None:
    """A benchmark with results but no suite:/harness: (thesis listing 1) still parses."""
    ctx = side(FIX / directory, *results, start_ns=start_ns)
    df = parse_generic(ctx)
    assert (df["detected_format"] == suite).all()
    expected = get_parser(suite)(ctx)
    pd.testing.assert_frame_equal(df.drop(columns="detected_format"), expected)


def test_generic_keeps_its_own_error_for_unrecognised_files(tmp_path: Path) -> None:
    (tmp_path / "r.csv").write_text("when,how_long\n1,2\n")
    with pytest.raises(ResultFileError, match="r.csv"):
        parse_generic(side(tmp_path, "r.csv"))
    (tmp_path / "r.json").write_text('[{"benchmark": "x"}]')  # JMH-like, no primaryMetric
    with pytest.raises(ResultFileError, match="r.json"):
        parse_generic(side(tmp_path, "r.json"))
