#!/bin/sh
# sh python.sh A|B SCRIPT [ARGS...]: runs SCRIPT with side A's or B's interpreter and the
# pyperf that this side's setup (setup.sh) linked into $DUET_OUTPUT_DIR/.interp/. The run's
# PYTHONPATH stays in front: in a sduet it starts with duetbench's pyperf shim (docs/sync.md).
interp="${DUET_OUTPUT_DIR:?python.sh is run by duet (DUET_OUTPUT_DIR is unset)}/.interp"
side=${1:?usage: sh python.sh A|B SCRIPT [ARGS...]}
shift
if [ ! -e "$interp/python-$side" ]; then
    echo "python.sh: no $interp/python-$side: this is side ${DUET_PAIR:-?}'s run (setup.sh links its own side only)" >&2
    exit 2
fi
PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$interp/lib"
export PYTHONPATH
exec "$interp/python-$side" "$@"
