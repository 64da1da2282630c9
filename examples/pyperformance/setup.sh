#!/bin/sh
# Finds the two interpreters and pyperf; writes nothing into this folder (it may be a
# read-only checkout). Two uses, both in the example's duet.yml files:
#
#   sh setup.sh check [pyperformance]   the experiment's `setup:` (once, before any run):
#       checks that both interpreters import the same pyperf (and that pyperformance's
#       benchmarks are installed) and prints what will run. Writes only to a temporary
#       directory, removed at once.
#   sh setup.sh                         every side's `setup:` (per run, untimed, before the
#       go): links into $DUET_OUTPUT_DIR/.interp/, the side's own directory of the run,
#         python-A        -> $PYTHON_A (default /usr/bin/python3, Debian's 3.11.2), on side A
#         python-B        -> $PYTHON_B (default: the python3 first on PATH), on side B;
#                            both resolved through shims such as pyenv's to the real binary
#         lib/pyperf      -> the pyperf package of an interpreter that has it
#         benchmarks      -> pyperformance's benchmark folder, when it is installed
#       `sh python.sh A|B SCRIPT ...` then runs `.interp/python-A|B` with `.interp/lib` on
#       PYTHONPATH.
set -eu

resolve() {  # the real executable behind a command name (pyenv shims exec it)
    "$1" -c 'import os, sys; print(os.path.realpath(sys.executable))'
}

python_for() {
    case "$1" in
        A) resolve "${PYTHON_A:-/usr/bin/python3}" ;;
        B) resolve "${PYTHON_B:-$(command -v python3)}" ;;
        *) echo "setup.sh: DUET_PAIR must be A or B, not '$1'" >&2; exit 2 ;;
    esac
}

# two lines, pyperf's folder and pyperformance's benchmarks (or an empty line), from the
# first of the given interpreters that has pyperf
find_packages() {
    for py in "$@" python3; do
        if found=$("$py" -c '
import os, pyperf
try:
    import pyperformance
    bench = os.path.join(os.path.dirname(pyperformance.__file__), "data-files", "benchmarks")
except ImportError:
    bench = ""
print(os.path.dirname(pyperf.__file__)); print(bench)' 2>/dev/null); then
            echo "$found"
            return 0
        fi
    done
    echo "setup.sh: no interpreter has pyperf; run: python3 -m pip install pyperf" >&2
    return 1
}

link_into() {  # DIR SIDE PYTHON PYPERF_DIR BENCHMARKS_DIR
    mkdir -p "$1/lib"
    ln -sfn "$3" "$1/python-$2"
    ln -sfn "$4" "$1/lib/pyperf"
    if [ -n "$5" ]; then ln -sfn "$5" "$1/benchmarks"; fi
}

if [ "${1:-}" = check ]; then
    python_a=$(python_for A)
    python_b=$(python_for B)
    found=$(find_packages "$python_b" "$python_a")
    pyperf_dir=$(echo "$found" | sed -n 1p)
    bench_dir=$(echo "$found" | sed -n 2p)
    if [ "${2:-}" = pyperformance ] && [ -z "$bench_dir" ]; then
        echo "setup.sh: pyperformance is not installed; run: python3 -m pip install pyperformance" >&2
        exit 1
    fi
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    for side in A B; do
        if [ "$side" = A ]; then py=$python_a; else py=$python_b; fi
        link_into "$tmp/$side" "$side" "$py" "$pyperf_dir" ""
        PYTHONPATH="$tmp/$side/lib" PYTHONDONTWRITEBYTECODE=1 "$tmp/$side/python-$side" -c \
            'import os, platform, sys, pyperf; print(f"{sys.argv[1]}: Python {platform.python_version()} ({os.path.realpath(sys.executable)}), pyperf {pyperf.__version__}")' \
            "$side"
    done
    exit 0
fi

if [ -z "${DUET_OUTPUT_DIR:-}" ] || [ -z "${DUET_PAIR:-}" ]; then
    echo "setup.sh: run by duet as a side's setup (DUET_OUTPUT_DIR and DUET_PAIR unset); by hand: sh setup.sh check" >&2
    exit 2
fi
python=$(python_for "$DUET_PAIR")
found=$(find_packages "${PYTHON_B:-python3}" "$python")  # B's pyperf first: the same for both
link_into "$DUET_OUTPUT_DIR/.interp" "$DUET_PAIR" "$python" "$(echo "$found" | sed -n 1p)" "$(echo "$found" | sed -n 2p)"
