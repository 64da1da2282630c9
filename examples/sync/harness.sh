#!/bin/sh
# Example harness for a synchronous duet, in POSIX sh (dash, bash, busybox ash).
#
#   harness.sh RESULT_CSV [ITERATIONS [WORK]]
#
# Runs ITERATIONS (default 10) iterations of a small CPU workload (a shell loop
# of WORK steps, default 20000). Before each iteration it waits for the other
# side (duet_sync_wait; a no-op outside a synchronous duet). Writes
# `iteration,start_ns,end_ns` (0-based, epoch ns) to RESULT_CSV.
#
# It sources duet_sync.sh from $DUET_SYNC_SH, else from next to this script,
# else from the duetbench source tree (`python -m duetbench.sync path sh`
# prints where the installed one is). In a container image, copy both files.
set -u

result=${1:?usage: harness.sh RESULT_CSV [ITERATIONS [WORK]]}
iterations=${2:-10}
work=${3:-20000}

here=$(dirname "$0")
if [ -z "${DUET_SYNC_SH:-}" ]; then
    if [ -f "$here/duet_sync.sh" ]; then
        DUET_SYNC_SH=$here/duet_sync.sh
    else
        DUET_SYNC_SH=$here/../../src/duetbench/sync/duet_sync.sh
    fi
fi
. "$DUET_SYNC_SH"

workload() {
    _i=0
    _x=1
    while [ "$_i" -lt "$1" ]; do
        _x=$(((_x * 1103515245 + 12345) % 2147483648))
        _i=$((_i + 1))
    done
}

printf 'iteration,start_ns,end_ns\n' >"$result" || exit 2
i=0
while [ "$i" -lt "$iterations" ]; do
    duet_sync_wait || exit $?
    duet_sync_now_ns start
    workload "$work"
    duet_sync_now_ns end
    printf '%s,%s,%s\n' "$i" "$start" "$end" >>"$result"
    i=$((i + 1))
done
duet_sync_done || exit $?
