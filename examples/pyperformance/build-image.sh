#!/bin/sh
# Build localhost/duetbench-pyperf-minimal (Containerfile) from a static busybox on this
# host -- no registry needed. Run by duet.podman.yml's experiment setup, or by hand:
#   sh build-image.sh [ENGINE]        (ENGINE: podman (default) or docker)
# BUSYBOX=/path/to/busybox picks the binary; it must be statically linked
# (Debian: apt-get install busybox-static).
set -eu
engine=${1:-podman}
here=$(cd "$(dirname "$0")" && pwd)
busybox=${BUSYBOX:-$(command -v busybox || true)}
if [ -z "$busybox" ]; then
    echo "build-image.sh: no busybox; install a static one (apt-get install busybox-static)" >&2
    exit 1
fi
if ! ldd "$busybox" 2>&1 | grep -q 'not a dynamic executable'; then
    echo "build-image.sh: $busybox is dynamically linked; set BUSYBOX to a static busybox" >&2
    exit 1
fi
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$busybox" "$context/busybox"
cp "$here/Containerfile" "$context/Containerfile"
"$engine" build -q -t localhost/duetbench-pyperf-minimal -f "$context/Containerfile" "$context"
