#!/bin/sh
# Build examples/workloads/workload if it is missing or older than workload.c.
set -eu
cd "$(dirname "$0")"
if [ ! -x workload ] || [ workload.c -nt workload ]; then
    if command -v make >/dev/null 2>&1; then
        make workload
    else
        # no make: the same flags; sduet support when duetbench's header is found
        h=$(python3 -m duetbench.sync path h 2>/dev/null || true)
        if [ -n "$h" ]; then
            set -- -DDUET_SYNC -I"$(dirname "$h")"
        fi
        ${CC:-gcc} -O2 -Wall -Wextra -std=c11 "$@" -o workload workload.c
    fi
fi
