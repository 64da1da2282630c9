#!/bin/sh
# A workload with run-level noise: every run (and side) does a different amount of extra
# work, drawn from its run id -- the kind of spread that needs 20+ runs to average out.
# usage: noisy.sh WORKLOAD KIND OPS SPREAD_PERCENT
w=$1 kind=$2 ops=$3 spread=$4
h=$(printf '%s' "$DUET_RUN.$DUET_PAIR" | cksum | cut -d' ' -f1)
extra=$(( h % (2 * spread + 1) ))          # 0 .. 2*spread percent
exec "$w" "$kind" $(( ops * (100 - spread + extra) / 100 )) 1
