# duet_sync.sh -- duetbench's synchronous-duet handshake for POSIX shells.
#
# Source it (". /path/to/duet_sync.sh"), then call duet_sync_wait before each
# iteration and duet_sync_done after the last one. Works with dash, bash, and
# busybox ash; the protocol is in duetbench's docs/sync.md.
#
#   duet_sync_wait       signal ready, block until go. Returns at once (0) when
#                        DUET_SYNC_DIR is unset or empty (not a synchronous duet).
#                        Status: 0 go, 1 timeout, 2 other error (message on stderr).
#   duet_sync_done       tell the coordinator this side will not iterate any more.
#   duet_sync_now_ns VAR set VAR to the current epoch time in nanoseconds
#                        ($EPOCHREALTIME in bash/busybox ash: microsecond steps;
#                        else GNU `date +%s%N`; else `date +%s`: 1 s steps).
#
# Environment: DUET_SYNC_DIR, DUET_PAIR (A or B), DUET_SYNC_TIMEOUT (seconds to
# wait for go, default 600, 0 = forever).
#
# No process is started per wait (all builtins). If the coordinator exits (or
# never ran), the wait fails at once (end-of-file on go). Shells with
# `read -t` (bash, busybox ash, ksh, zsh) also time out after DUET_SYNC_TIMEOUT;
# in shells without it (dash) only the executor's run timeout ends a wait on a
# coordinator that is alive but never answers (e.g. the other side hangs).
# Uses file descriptors 8 and 9 during the wait (restored afterwards).
#
# All names this file defines start with duet_sync_ or _duet_sync_.

# Does this shell's `read` take -t? (probed once, in a subshell)
if (printf 'x\n' | { IFS= read -r -t 1 _duet_sync_x; }) >/dev/null 2>&1; then
    _duet_sync_read_t=1
else
    _duet_sync_read_t=
fi
# Does `date` print nanoseconds? (busybox date prints a literal %N)
case $(date +%s%N 2>/dev/null) in
    '' | *[!0-9]*) _duet_sync_date_ns= ;;
    *) _duet_sync_date_ns=1 ;;
esac

_duet_sync_err() {
    printf 'duet_sync: %s\n' "$*" >&2
}

# Validate the environment; sets _duet_sync_timeout. 0 = ok, 2 = error.
_duet_sync_check() {
    case ${DUET_PAIR:-} in
        '' | *[!A-Za-z0-9_-]*)
            _duet_sync_err "DUET_PAIR='${DUET_PAIR:-}' must be a side name such as A or B"
            return 2
            ;;
    esac
    _duet_sync_timeout=${DUET_SYNC_TIMEOUT:-600}
    case $_duet_sync_timeout in
        '' | *[!0-9.]* | *.*.* | .)
            _duet_sync_err "DUET_SYNC_TIMEOUT='$_duet_sync_timeout' is not a number of seconds"
            return 2
            ;;
    esac
    case $_duet_sync_timeout in
        *[1-9]*) ;;
        *) _duet_sync_timeout=0 ;; # 0, 0.0, ...: wait forever
    esac
    _duet_sync_timeout_s=${_duet_sync_timeout%.*} # whole seconds: tells a timeout from a hang-up
    if [ ! -p "$DUET_SYNC_DIR/ready" ] || [ ! -p "$DUET_SYNC_DIR/go.$DUET_PAIR" ]; then
        _duet_sync_err "no sync FIFOs in DUET_SYNC_DIR='$DUET_SYNC_DIR' (is the duet still running?)"
        return 2
    fi
    return 0
}

# Write one line to the ready FIFO. `1<>` opens it read-write: never blocks,
# even when no coordinator holds it.
_duet_sync_send() {
    if ! printf '%s\n' "$1" 1<>"$DUET_SYNC_DIR/ready"; then
        _duet_sync_err "cannot write to $DUET_SYNC_DIR/ready"
        return 2
    fi
    return 0
}

# Read one line from go on fd 8 (read-only). fd 9 is our own read-write open,
# made first so that opening fd 8 cannot block; closing it leaves the
# coordinator as the only writer, so its exit reads as end-of-file at once.
_duet_sync_read_go() {
    exec 9<&-
    if [ -n "$_duet_sync_read_t" ] && [ "$_duet_sync_timeout" != 0 ]; then
        IFS= read -r -t "$_duet_sync_timeout" _duet_sync_line <&8
    else
        IFS= read -r _duet_sync_line <&8
    fi
}

duet_sync_wait() {
    [ -n "${DUET_SYNC_DIR:-}" ] || return 0
    _duet_sync_check || return 2
    _duet_sync_go=$DUET_SYNC_DIR/go.$DUET_PAIR
    _duet_sync_t0=${EPOCHREALTIME:-}
    _duet_sync_send "$DUET_PAIR" || return 2
    _duet_sync_line=
    if ! _duet_sync_read_go 9<>"$_duet_sync_go" 8<"$_duet_sync_go"; then
        if [ -n "$_duet_sync_t0" ] && [ -n "$_duet_sync_read_t" ] && [ "$_duet_sync_timeout" != 0 ] &&
            [ "$(_duet_sync_elapsed "$_duet_sync_t0")" -lt "${_duet_sync_timeout_s:-0}" ]; then
            _duet_sync_err "side $DUET_PAIR: the coordinator closed $_duet_sync_go (executor gone)"
            return 2
        elif [ -n "$_duet_sync_read_t" ] && [ "$_duet_sync_timeout" != 0 ]; then
            _duet_sync_err "side $DUET_PAIR: no go within ${_duet_sync_timeout} s (DUET_SYNC_TIMEOUT)" \
                "or the coordinator closed $_duet_sync_go"
            return 1
        fi
        _duet_sync_err "side $DUET_PAIR: the coordinator closed $_duet_sync_go (executor gone)"
        return 2
    fi
    if [ "$_duet_sync_line" != go ]; then
        _duet_sync_err "side $DUET_PAIR: unexpected message '$_duet_sync_line' on $_duet_sync_go"
        return 2
    fi
    return 0
}

# Whole seconds since an $EPOCHREALTIME value.
_duet_sync_elapsed() {
    _duet_sync_now=$EPOCHREALTIME
    echo $((${_duet_sync_now%[.,]*} - ${1%[.,]*}))
}

duet_sync_done() {
    [ -n "${DUET_SYNC_DIR:-}" ] || return 0
    _duet_sync_check || return 2
    _duet_sync_send "$DUET_PAIR done"
}

duet_sync_now_ns() {
    if [ -n "${EPOCHREALTIME:-}" ]; then
        _duet_sync_t=$EPOCHREALTIME
        eval "$1=\${_duet_sync_t%[.,]*}\${_duet_sync_t#*[.,]}000"
    elif [ -n "$_duet_sync_date_ns" ]; then
        eval "$1=\$(date +%s%N)"
    else
        eval "$1=\$(date +%s)000000000"
    fi
}
