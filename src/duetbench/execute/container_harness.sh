# container_harness.sh -- duetbench's built-in harness, run *inside* a container.
#
# The container executor bind-mounts this file read-only (at /.duetbench/harness.sh)
# and starts it once per side with `<engine> exec`, instead of one `exec` per
# iteration (which costs 0.1-0.3 s and would be inside the timed region).
# POSIX sh; tested with busybox ash, dash and bash. See docs/containers.md.
#
#   sh harness.sh [-n N | -t BUDGET_NS] [-o DIR] [-B -d OWN_DONE -p PEER_DONE] [-s]
#                 [-g GATE_FIFO -a ARMED_FILE] [-1] -- COMMAND [ARG...]
#
#   -n N        run COMMAND N times (default 10 when -t is not given)
#   -t NS       iterate for NS nanoseconds (at least once); with -n, whichever ends first
#   -o DIR      write DIR/iterations.csv and DIR/harness.txt (default $DUET_OUTPUT_DIR)
#   -B          busy shorter side: after the last iteration keep iterating (filler=1)
#               until PEER_DONE exists; touch OWN_DONE when the real iterations are over
#   -s          synchronous duet: duet_sync_wait before every (non-filler) iteration;
#               duet_sync.sh is sourced from $DUET_SYNC_SH
#   -g, -a      start gate: create ARMED_FILE, then block until a line arrives on
#               GATE_FIFO (the host driver writes it on "go"; end-of-file = driver gone)
#   -1          run COMMAND once after the gate, in place of this shell (an external
#               harness); no loop, no iterations.csv
#
# iterations.csv has the columns of the driver's built-in harness:
#   iteration,start_ns,end_ns,duration_ns,filler,exit_code[,cpu_ns]
# cpu_ns: the container's control group's CPU time around the iteration (cgroup v1
# cpuacct.usage, v2 cpu.stat usage_usec; read with shell builtins), where it can be read.
# Timestamps (harness.txt says which clock was used):
#   epochrealtime  $EPOCHREALTIME (busybox ash >= 1.30, bash >= 5): microsecond
#                  resolution, read without starting a process. If /bin/sh lacks it,
#                  the script re-runs itself under bash or `busybox sh` when present.
#   date           `date +%s%N` (GNU coreutils): ns resolution, but one process per
#                  timestamp (~1 ms, partly inside the timed region).
# busybox `date` has no %N; without either clock the script refuses to run (exit 4).
#
# Exit status: 0 all iterations ok; the command's status when an iteration failed;
# 2 usage or sync error; 3 no go on the gate; 4 no usable clock.

if [ -z "${EPOCHREALTIME:-}" ] && [ -z "${_DUETBENCH_REEXEC:-}" ]; then
    _DUETBENCH_REEXEC=1
    export _DUETBENCH_REEXEC
    if command -v bash >/dev/null 2>&1; then
        exec bash "$0" "$@"
    fi
    if command -v busybox >/dev/null 2>&1; then
        exec busybox sh "$0" "$@"
    fi
fi
unset _DUETBENCH_REEXEC

_h_err() {
    printf 'duetbench harness: %s\n' "$*" >&2
}

_h_n=
_h_budget=
_h_out=${DUET_OUTPUT_DIR:-.}
_h_busy=
_h_own_done=
_h_peer_done=
_h_sync=
_h_gate=
_h_armed=
_h_once=
while getopts n:t:o:Bd:p:sg:a:1 _h_opt; do
    case $_h_opt in
        n) _h_n=$OPTARG ;;
        t) _h_budget=$OPTARG ;;
        o) _h_out=$OPTARG ;;
        B) _h_busy=1 ;;
        d) _h_own_done=$OPTARG ;;
        p) _h_peer_done=$OPTARG ;;
        s) _h_sync=1 ;;
        g) _h_gate=$OPTARG ;;
        a) _h_armed=$OPTARG ;;
        1) _h_once=1 ;;
        *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [ -z "$_h_n" ] && [ -z "$_h_budget" ]; then
    _h_n=10
fi
if [ "$#" -eq 0 ]; then
    _h_err "usage: harness.sh [options] -- COMMAND [ARG...]"
    exit 2
fi

# ---------------------------------------------------------------- clock
if [ -n "${EPOCHREALTIME:-}" ]; then
    _h_clock=epochrealtime
    _h_stamp() { _h_ts=$EPOCHREALTIME; }
    _h_ns() { _h_n_out=${1%[.,]*}${1#*[.,]}000; }
else
    case $(date +%s%N 2>/dev/null) in
        '' | *[!0-9]*) _h_clock= ;;
        *) _h_clock=date ;;
    esac
    _h_stamp() { _h_ts=$(date +%s%N); }
    _h_ns() { _h_n_out=$1; }
fi
if [ -z "$_h_once" ] && [ -z "$_h_clock" ]; then
    _h_err "no usable clock: this shell has no \$EPOCHREALTIME and \`date +%s%N\` does not print" \
        "nanoseconds (busybox date). Install bash or busybox, or GNU coreutils, in the image."
    exit 4
fi

# ---------------------------------------------------------------- CPU time
# the container's own group: where /proc/self/cgroup puts it under /sys/fs/cgroup, else
# the group mounted there (an engine mounts the container's own, or its namespace's root)
_h_cg=
_h_cgv2=
if [ -z "$_h_once" ] && [ -r /proc/self/cgroup ]; then
    while IFS=: read -r _h_id _h_ctl _h_path; do
        case ",$_h_ctl," in
            *,cpuacct,*)
                for _h_f in "/sys/fs/cgroup/$_h_ctl$_h_path/cpuacct.usage" \
                    "/sys/fs/cgroup/$_h_ctl/cpuacct.usage"; do
                    if [ -r "$_h_f" ]; then
                        _h_cg=$_h_f
                        break
                    fi
                done
                ;;
            ,,)
                for _h_f in "/sys/fs/cgroup$_h_path/cpu.stat" /sys/fs/cgroup/cpu.stat; do
                    if [ -r "$_h_f" ]; then
                        _h_cg=$_h_f
                        _h_cgv2=1
                        break
                    fi
                done
                ;;
        esac
        [ -n "$_h_cg" ] && break
    done </proc/self/cgroup
fi
_h_cpu() { # the group's CPU time in ns, in _h_c ("" where it cannot be read)
    _h_c=
    if [ -z "$_h_cg" ]; then
        return 0
    elif [ -z "$_h_cgv2" ]; then
        read -r _h_c 2>/dev/null <"$_h_cg"
    else
        while read -r _h_k _h_v; do
            if [ "$_h_k" = usage_usec ]; then
                _h_c=${_h_v}000
                break
            fi
        done 2>/dev/null <"$_h_cg"
    fi
    case $_h_c in
        '' | *[!0-9]*) _h_c= ;;
    esac
    return 0
}

if [ -n "$_h_sync" ]; then
    if [ -z "${DUET_SYNC_SH:-}" ] || ! . "$DUET_SYNC_SH"; then
        _h_err "cannot source duet_sync.sh (DUET_SYNC_SH='${DUET_SYNC_SH:-}')"
        exit 2
    fi
fi

# ---------------------------------------------------------------- start gate
if [ -n "$_h_gate" ]; then
    if [ -n "$_h_armed" ]; then
        : >"$_h_armed" || exit 2
    fi
    if ! IFS= read -r _h_go <"$_h_gate"; then
        _h_err "no go on $_h_gate (the driver is gone)"
        exit 3
    fi
fi

if [ -n "$_h_once" ]; then
    exec "$@"
fi

# ---------------------------------------------------------------- the loop
printf 'clock=%s\n' "$_h_clock" >"$_h_out/harness.txt"
exec 7>>"$_h_out/iterations.csv" || exit 2
_h_cpu
if [ -n "$_h_c" ]; then
    printf 'cpu=%s\n' "$_h_cg" >>"$_h_out/harness.txt"
    printf 'iteration,start_ns,end_ns,duration_ns,filler,exit_code,cpu_ns\n' >&7
else
    _h_cg=
    printf 'iteration,start_ns,end_ns,duration_ns,filler,exit_code\n' >&7
fi

_h_mark_done() {
    if [ -n "$_h_own_done" ]; then
        : >"$_h_own_done"
    fi
    if [ -n "$_h_sync" ]; then
        duet_sync_done
    fi
    return 0
}

_h_i=0
_h_real=0
_h_stamp
_h_ns "$_h_ts"
_h_begin=$_h_n_out
while :; do
    _h_filler=0
    _h_over=
    if [ -n "$_h_n" ] && [ "$_h_i" -ge "$_h_n" ]; then
        _h_over=1
    elif [ -n "$_h_budget" ] && [ "$_h_i" -gt 0 ]; then
        _h_stamp
        _h_ns "$_h_ts"
        [ $((_h_n_out - _h_begin)) -ge "$_h_budget" ] && _h_over=1
    fi
    if [ -n "$_h_over" ]; then
        if [ -z "$_h_busy" ] || [ -z "$_h_peer_done" ] || [ -e "$_h_peer_done" ]; then
            break
        fi
        if [ "$_h_i" -eq "$_h_real" ]; then
            _h_mark_done # our real iterations are over: release the peer's handshake
        fi
        _h_filler=1
    elif [ -n "$_h_sync" ]; then
        duet_sync_wait || exit 2
    fi
    DUET_ITERATION=$_h_i
    export DUET_ITERATION
    _h_cpu
    _h_c0=$_h_c
    _h_stamp
    _h_t0=$_h_ts
    (exec "$@") 7>&- # a process, like the driver's: never a shell builtin (true, echo...)
    _h_rc=$?
    _h_stamp
    _h_cpu
    _h_ns "$_h_t0"
    _h_s=$_h_n_out
    _h_ns "$_h_ts"
    _h_used=
    if [ -n "$_h_c" ] && [ -n "$_h_c0" ]; then
        _h_used=$((_h_c - _h_c0))
    fi
    printf '%s,%s,%s,%s,%s,%s%s\n' "$_h_i" "$_h_s" "$_h_n_out" $((_h_n_out - _h_s)) \
        "$_h_filler" "$_h_rc" "${_h_cg:+,$_h_used}" >&7
    if [ "$_h_rc" -ne 0 ]; then
        exit "$_h_rc"
    fi
    [ "$_h_filler" = 0 ] && _h_real=$((_h_real + 1))
    _h_i=$((_h_i + 1))
done
_h_mark_done
exit 0
