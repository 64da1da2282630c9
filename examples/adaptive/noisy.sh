#!/bin/sh
# A workload with run-level noise: every run (and side) does a different amount of extra
# work -- the kind of spread that needs 20+ runs to average out. The amount is drawn from
# the side's output directory ($DUET_OUTPUT_DIR: results root, run id and side), so the
# same results directory gets the same noise again, and another one (another try of a
# study, a pilot and the run it plans) gets fresh draws: from the run id alone every
# try would repeat the same "noise" run for run.
# usage: noisy.sh WORKLOAD KIND OPS SPREAD_PERCENT
w=$1 kind=$2 ops=$3 spread=$4
h=$(printf '%s' "${DUET_OUTPUT_DIR:-$DUET_RUN.$DUET_PAIR}" | cksum | cut -d' ' -f1)
extra=$(( h % (2 * spread + 1) ))          # 0 .. 2*spread percent
exec "$w" "$kind" $(( ops * (100 - spread + extra) / 100 )) 1
