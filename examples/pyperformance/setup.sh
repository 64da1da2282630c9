#!/bin/sh
# Run once by `duet run` before the first run (experiment `setup:`), in this directory.
#
# Makes .interp/ (ignored by git):
#   .interp/python-A  -> $PYTHON_A (default /usr/bin/python3, Debian's 3.11.2)
#   .interp/python-B  -> $PYTHON_B (default: the python3 first on PATH, resolved through
#                        shims such as pyenv's to the real binary)
#   .interp/lib/pyperf -> the pyperf package of an interpreter that has it
# and checks that both interpreters import pyperf with PYTHONPATH=.interp/lib.
# The benchmarks then run `.interp/python-A bm_x.py` / `.interp/python-B bm_x.py`:
# no shim or PATH lookup at run time, and the same pyperf code on both sides.
set -eu
cd "$(dirname "$0")"

resolve() {  # the real executable behind a command name (pyenv shims exec it)
    "$1" -c 'import os, sys; print(os.path.realpath(sys.executable))'
}

python_a=$(resolve "${PYTHON_A:-/usr/bin/python3}")
python_b=$(resolve "${PYTHON_B:-$(command -v python3)}")

pyperf_dir=
for py in "$python_b" "$python_a" python3; do
    if pyperf_dir=$("$py" -c 'import os, pyperf; print(os.path.dirname(pyperf.__file__))' 2>/dev/null); then
        break
    fi
    pyperf_dir=
done
if [ -z "$pyperf_dir" ]; then
    echo "setup.sh: no interpreter has pyperf; run: python3 -m pip install pyperf" >&2
    exit 1
fi

mkdir -p .interp/lib
ln -sfn "$python_a" .interp/python-A
ln -sfn "$python_b" .interp/python-B
ln -sfn "$pyperf_dir" .interp/lib/pyperf

for side in A B; do
    PYTHONPATH=.interp/lib ".interp/python-$side" -c \
        'import platform, sys, pyperf; print(f"{sys.argv[1]}: Python {platform.python_version()} ({sys.executable}), pyperf {pyperf.__version__}")' \
        "$side"
done
