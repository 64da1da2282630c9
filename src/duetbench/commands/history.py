"""`duet history add | import | list | show | changes | mark | unmark | marks | remove`: the
results
repository across versions (docs/history.md).

``--repo`` takes a file path (SQLite) or a ``postgresql://`` URL; without it the
``DUET_HISTORY`` environment variable names the repository.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DuetError, ExitCode
from ..workflow.output import print_tables
from ._flags import (
    add_format_flag,
    add_keep_unbalanced,
    add_repo_flag,
    add_version_flags,
    refuse_unused,
    repo_location,
)

if TYPE_CHECKING:
    from ..history import Repository, Version

FORMATS = ("table", "json", "markdown")
#: history/importers.py's tools (kept here so that `duet --help` imports no pandas)
IMPORT_TOOLS = ("asv", "pytest-benchmark", "pyperf", "github-action-benchmark")


DESCRIPTION = (
    "Keep experiments of many versions in one repository, show each "
    "benchmark's series and find the versions that changed it (docs/history.md)."
)


def register(p: argparse.ArgumentParser) -> None:
    hs = p.add_subparsers(dest="history_command", metavar="SUBCOMMAND")
    hs.required = True

    a = hs.add_parser("add", help="add a results directory (or iterations table) as one experiment")
    a.add_argument("results", type=Path, help="results/NAME of `duet run`, or an iterations table")
    add_repo_flag(a)
    add_version_flags(a)
    add_format_flag(a, ("table", "json"))
    add_keep_unbalanced(a)

    im = hs.add_parser(
        "import",
        help="add other tools' results: asv, pytest-benchmark, pyperf, github-action-benchmark",
        description="Add results of asv (a results directory), pytest-benchmark (saved runs "
        "or a directory of them), pyperf (JSON) or github-action-benchmark (data.js) as "
        "absolute series: one experiment per version and machine (docs/history.md, "
        "'Importing other tools' results'). Runs already in the repository are skipped.",
    )
    im.add_argument("paths", type=Path, nargs="+", metavar="PATH", help="files or directories")
    add_repo_flag(im)
    im.add_argument("--tool", choices=IMPORT_TOOLS, help="what wrote PATH (default: detected)")
    im.add_argument(
        "--label",
        metavar="LABEL",
        help="the version of a file that names no commit (pyperf); with --git, a revision",
    )
    im.add_argument(
        "--git",
        metavar="CHECKOUT",
        type=Path,
        help="the git checkout whose commit (--label, or HEAD) and date the files get",
    )
    add_format_flag(im, ("table", "json"))

    ls = hs.add_parser("list", help="the versions, experiments, hosts and benchmarks it holds")
    add_repo_flag(ls)
    add_format_flag(ls, FORMATS)

    _add_show(hs)

    ch = hs.add_parser("changes", help="the versions that made a benchmark slower or faster")
    add_repo_flag(ch)
    _filter_flags(ch, benchmark_required=False)
    ch.add_argument("--since", metavar="VERSION", help="only changes from this version on")
    add_format_flag(ch, FORMATS)
    ch.add_argument("-o", "--output", type=Path, help="write JSON/Markdown here, not to stdout")
    ch.add_argument(
        "--fail-on-regression",
        action="store_true",
        help=f"exit {int(ExitCode.REGRESSION)} when a change makes something slower",
    )

    m = hs.add_parser("mark", help="mark a version of a benchmark as a change, or exclude it")
    add_repo_flag(m)
    m.add_argument("--benchmark", required=True, help="the benchmark to mark")
    m.add_argument(
        "--at", dest="version", required=True, metavar="VERSION", help="the version to mark"
    )
    kind = m.add_mutually_exclusive_group(required=True)
    kind.add_argument(
        "--change",
        dest="kind",
        action="store_const",
        const="change",
        help="the version is a known change (a step the detection accepts)",
    )
    kind.add_argument(
        "--exclude",
        dest="kind",
        action="store_const",
        const="exclude",
        help="leave the version's experiments out of the series (a broken build)",
    )
    m.add_argument("--note", required=True, help="why (shown with the mark)")
    m.add_argument("--suite", help="only this suite (default: all)")
    m.add_argument("--method", help="only this method: seqn, aduet or sduet (default: all)")
    m.add_argument(
        "--host", help="only this host: a fingerprint or its first characters (default: all)"
    )

    rm = hs.add_parser(
        "remove", help="remove an experiment (its # from `duet history list`) from the repository"
    )
    add_repo_flag(rm)
    rm.add_argument(
        "experiment", type=int, metavar="ID", help="the experiment's # in `duet history list`"
    )

    gc = hs.add_parser(
        "gc",
        help="remove stored tables no experiment uses (what a killed add leaves behind)",
    )
    add_repo_flag(gc)
    gc.add_argument(
        "--min-age",
        default="1h",
        metavar="TIME",
        help="leave files younger than this (an add running now may be about to use them; "
        "default 1h; 0 when no add runs)",
    )

    um = hs.add_parser("unmark", help="remove a mark (its # from `duet history marks`)")
    add_repo_flag(um)
    um.add_argument("mark", type=int, metavar="ID", help="the mark's # in `duet history marks`")

    mk = hs.add_parser("marks", help="list the marks")
    add_repo_flag(mk)
    mk.add_argument("--benchmark", help="only this benchmark's marks (default: all)")
    add_format_flag(mk, FORMATS)


def _filter_flags(p: argparse.ArgumentParser, *, benchmark_required: bool = True) -> None:
    p.add_argument(
        "--benchmark",
        required=benchmark_required,
        help="the benchmark" if benchmark_required else "only this benchmark (default: all)",
    )
    p.add_argument("--suite", help="only this suite (default: all)")
    p.add_argument("--method", help="only this method: seqn, aduet or sduet (default: all)")
    p.add_argument(
        "--host", help="only this host: a fingerprint or its first characters (default: all)"
    )


def run(args: argparse.Namespace) -> int:
    from ..history import Repository
    from ..workflow.repository import versions_of

    location = repo_location(args)
    command = args.history_command
    if command == "changes":
        refuse_unused(
            [("-o/--output", args.output, args.format != "table", "--format json|markdown")]
        )
    if command == "add":  # bad flags are refused before a repository is created
        sides = versions_of(args.versions, args.git)
        if not args.results.exists():
            raise DuetError(f"{args.results} does not exist: give results/NAME of `duet run`")
        with Repository.open(location) as repo:
            return _add(repo, args, sides)
    if command == "import":  # every file is read before a repository is created
        runs = _imported_runs(args)
        with Repository.open(location) as repo:
            return _import(repo, args, runs)
    with Repository.open(location, create=False) as repo:
        return int(_COMMANDS[command](repo, args))


def _imported_runs(args: argparse.Namespace) -> list[Any]:
    from ..history.importers import read, with_version
    from ..history.versions import Version, version_from_git

    version = None
    if args.git is not None:
        version = version_from_git(args.git, rev=args.label or "HEAD", label=args.label)
    elif args.label:
        version = Version(args.label)
    runs = [run for path in args.paths for run in read(path, args.tool)]
    return with_version(runs, version)


def _import(repo: Repository, args: argparse.Namespace, runs: list[Any]) -> int:
    from ..history import HistoryError
    from ..report.tables import Column, Note, Table

    rows, skipped = [], []
    for run in runs:
        try:
            info = repo.add_imported(run)
        except HistoryError as exc:
            if "already in the repository" not in str(exc):
                raise
            skipped.append(run)
            continue
        rows.append(
            {
                "id": info.id,
                "tool": run.tool,
                "version": info.version_a,
                "commit": (run.version.commit or "")[:12] or None,
                "host": ", ".join(f"{n} ({fp[:8]})" for n, fp in info.hosts),
                "benchmarks": len(run.results),
                "source": run.source,
                "notes": list(run.notes),
            }
        )
    if args.format == "json":
        doc = {
            "repository": repo.location,
            "added": rows,
            "skipped": [{"source": r.source, "version": r.version.label} for r in skipped],
        }
        _json(doc, None)
        return ExitCode.OK
    notes = [Note("note", n) for r in rows for n in r["notes"]]
    if skipped:
        notes.append(Note("info", f"{len(skipped)} run(s) already in the repository, skipped"))
    table = Table(
        name="imported",
        title=f"imported {len(rows)} run(s) into {repo.location} (absolute series)",
        columns=(
            Column("id", "#", "count"),
            Column("tool", "tool"),
            Column("version", "version"),
            Column("commit", "commit"),
            Column("host", "host"),
            Column("benchmarks", "benchmarks", "count"),
            Column("source", "source"),
        ),
        rows=tuple(rows),
        notes=tuple(notes),
        empty="nothing new to import",
    )
    print_tables([table])
    return ExitCode.OK


def _add(repo: Repository, args: argparse.Namespace, sides: dict[str, Version]) -> int:
    from ..options import CompareOptions
    from ..report.history_tables import added_table, experiment_json

    options = CompareOptions(keep_unbalanced=args.keep_unbalanced) if args.keep_unbalanced else None
    info = repo.add(args.results, sides, options=options)
    if args.format == "json":
        _json(experiment_json(info), None)
    else:
        print_tables([added_table(info, repo.location)])
    return ExitCode.OK


def _list(repo: Repository, args: argparse.Namespace) -> int:
    from ..report.history_tables import summary_json, summary_tables

    summary = repo.summary()
    if args.format == "json":
        _json(summary_json(summary, repo.location), None)
    else:
        _render(f"results repository {repo.location}", summary_tables(summary), args.format, None)
    return ExitCode.OK


def _add_show(hs: argparse._SubParsersAction) -> None:
    """`duet history show`: a benchmark's series and its priors."""
    sh = hs.add_parser(
        "show",
        help="a benchmark's series: paired steps and absolute levels, and its priors",
    )
    add_repo_flag(sh)
    _filter_flags(sh)
    sh.add_argument(
        "--last",
        type=int,
        default=10,
        metavar="N",
        help="the priors (spread, machine time, warm-up) from the last N experiments of "
        "each series (default 10; docs/history.md, 'Priors')",
    )
    add_format_flag(sh, FORMATS)


def _show(repo: Repository, args: argparse.Namespace) -> int:
    from ..history import HistoryError, priors, series
    from ..report.history_tables import priors_table, series_tables

    if args.last < 1:
        raise HistoryError(f"--last must be at least 1 (experiments), got {args.last}")
    found = series(repo, **_selected(args))
    if not found:
        raise HistoryError(
            f"no series of benchmark '{args.benchmark}' (with these filters) in {repo.location}; "
            "`duet history list` shows the benchmarks it has"
        )
    prior = priors(repo, **_selected(args), last=args.last)
    if args.format == "json":
        doc = {
            "repository": repo.location,
            "series": [s.to_json() for s in found],
            "priors": [p.to_json() for p in prior],
        }
        _json(doc, None)
    else:
        tables = [*series_tables(found), priors_table(prior, args.last)]
        _render(f"history of {args.benchmark}", tables, args.format, None)
    return ExitCode.OK


def _selected(args: argparse.Namespace) -> dict[str, str | None]:
    """The series a subcommand selects: its --benchmark, --suite, --host and --method."""
    return {k: getattr(args, k) for k in ("benchmark", "suite", "host", "method")}


def _changes(repo: Repository, args: argparse.Namespace) -> int:
    from ..history import detect_changes
    from ..report.history_tables import changes_tables

    report = detect_changes(repo, **_selected(args), since=args.since)
    if args.format == "json":
        _json({"repository": repo.location, **report.to_json()}, args.output)
    else:
        title = f"changes in {repo.location}" + (f" since {args.since}" if args.since else "")
        _render(title, changes_tables(report), args.format, args.output)
    if args.fail_on_regression and report.regressions:
        return ExitCode.REGRESSION
    return ExitCode.OK


def _mark(repo: Repository, args: argparse.Namespace) -> int:
    from ..report.history_tables import marks_table

    m = repo.mark(
        args.benchmark,
        args.version,
        args.kind,
        args.note,
        suite=args.suite,
        method=args.method,
        host=args.host,
    )
    print_tables([marks_table([m])])
    return ExitCode.OK


def _remove(repo: Repository, args: argparse.Namespace) -> int:
    e = repo.experiment(args.experiment)  # a HistoryError naming the repository if none
    repo.remove(e.id)
    repo.collect_garbage()  # its stored table goes once no experiment uses it
    print_tables(
        [],
        f"removed experiment #{e.id} '{e.name}' ({e.version_a} vs {e.version_b}) from "
        f"{repo.location}",
    )
    return ExitCode.OK


def _unmark(repo: Repository, args: argparse.Namespace) -> int:
    repo.unmark(args.mark)
    print_tables([], f"removed mark #{args.mark}")
    return ExitCode.OK


def _marks(repo: Repository, args: argparse.Namespace) -> int:
    from ..report.history_tables import mark_json, marks_table

    marks = repo.marks(args.benchmark)
    if args.format == "json":
        _json({"repository": repo.location, "marks": [mark_json(m) for m in marks]}, None)
    else:
        _render(f"marks in {repo.location}", [marks_table(marks)], args.format, None)
    return ExitCode.OK


def _gc(repo: Repository, args: argparse.Namespace) -> int:
    from ._flags import parse_duration

    text = str(args.min_age).strip()
    min_age = 0.0 if text in ("0", "0s") else parse_duration(text, "--min-age")
    removed = repo.collect_garbage(min_age_s=min_age)
    where = "files" if repo.db.kind == "sqlite" else "tables"
    print_tables([], f"removed {len(removed)} unused stored {where} from {repo.location}")
    return ExitCode.OK


_COMMANDS = {
    "gc": _gc,
    "list": _list,
    "show": _show,
    "changes": _changes,
    "mark": _mark,
    "remove": _remove,
    "unmark": _unmark,
    "marks": _marks,
}


# ---------------------------------------------------------------------- rendering


def _json(doc: dict[str, Any], output: Path | None) -> None:
    from ..report.history_tables import strict_json
    from ..report.json_docs import dumps
    from ..workflow.output import write_output

    write_output(dumps(strict_json(doc)), output)


def _render(title: str, tables: list[Any], fmt: str, output: Path | None) -> None:
    if fmt == "markdown":
        from ..report.markdown import tables_markdown
        from ..workflow.output import write_output

        write_output(tables_markdown(title, tables), output)
    else:
        print_tables(tables, title)
