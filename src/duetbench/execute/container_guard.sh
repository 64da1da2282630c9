# container_guard.sh -- removes one duetbench session's containers once the executor is gone.
#
#   sh container_guard.sh SESSION KIND -- ENGINE [GLOBAL_OPTIONS...]
#
# Started by the container executor (duet run) in its own session, with a pipe
# on stdin. It reads lines until end-of-file, which comes when duet run closes
# the pipe at the end of an experiment *or dies in any way* (SIGKILL included:
# the kernel closes the pipe). A line `wait PID` names an engine command in
# flight (`<engine> run -d`) that may still create a container after duet run
# died; the guard waits for it to end first (up to 60 s). Then it removes every
# container labelled duetbench.session=SESSION and duetbench.remove=1, and
# stops those labelled duetbench.remove=0 (remove_containers: false), sweeping
# again while it still finds some. KIND is podman or docker (flags differ).
# Ctrl-C and hang-ups do not reach it (own session; INT and HUP ignored).

trap '' INT HUP
session=$1
kind=$2
shift 2
[ "${1:-}" = -- ] && shift
engine_cmd=$1
shift
engine_opts="$*" # global options: plain words (e.g. --runtime runc)
set -- "$engine_cmd" "$@"

pids=
while IFS= read -r line; do
    case $line in
        wait\ *) pids="$pids ${line#wait }" ;;
    esac
done

for pid in $pids; do
    n=0
    while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 1200 ]; do
        sleep 0.05
        n=$((n + 1))
    done
done

# Ids listed by `ps ARGS...` whose duetbench.session label is ours (engines AND label
# filters, but a container of another session must never be touched).
ours() {
    _ids=$("$@" 2>/dev/null)
    [ -n "$_ids" ] || return 0
    # shellcheck disable=SC2086
    "$engine_cmd" $engine_opts inspect --format '{{.Id}} {{index .Config.Labels "duetbench.session"}}' \
        $_ids 2>/dev/null | while read -r _id _s; do
        [ "$_s" = "$session" ] && printf '%s\n' "$_id"
    done
}

sweep() {
    found=
    ids=$(ours "$@" ps -a -q --filter "label=duetbench.session=$session" --filter "label=duetbench.remove=1")
    if [ -n "$ids" ]; then
        found=1
        if [ "$kind" = podman ]; then
            # shellcheck disable=SC2086
            "$@" rm -f -t 0 $ids >/dev/null 2>&1
        else
            # shellcheck disable=SC2086
            "$@" rm -f $ids >/dev/null 2>&1
        fi
    fi
    ids=$(ours "$@" ps -q --filter "label=duetbench.session=$session" --filter "label=duetbench.remove=0")
    if [ -n "$ids" ]; then
        found=1
        # shellcheck disable=SC2086
        "$@" stop -t 1 $ids >/dev/null 2>&1
    fi
    [ -n "$found" ]
}

tries=0
while sweep "$@" && [ "$tries" -lt 5 ]; do
    tries=$((tries + 1))
    sleep 0.5
done
exit 0
