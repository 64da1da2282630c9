#!/bin/sh
# Build a minimal container image without a registry or network: a busybox-static
# rootfs imported with `podman import` (or `docker import`).
#
#   sh examples/containers/build-image.sh [IMAGE] [ENGINE]
#
# IMAGE defaults to localhost/duetbench-busybox:latest, ENGINE to podman. The image
# holds /bin/busybox with its applet links (sh, sleep, date, cat, ...), /tmp, and the
# sduet example harness with duet_sync.sh in /opt/duet/ (examples/sync/harness.sh).
# Needs a *static* busybox (Debian/Ubuntu: apt-get install busybox-static).
set -eu

image=${1:-localhost/duetbench-busybox:latest}
engine=${2:-podman}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

busybox=/bin/busybox
[ -x "$busybox" ] || busybox=$(command -v busybox)
if ldd "$busybox" >/dev/null 2>&1; then
    echo "build-image.sh: $busybox is dynamically linked; install busybox-static" >&2
    exit 2
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/etc" "$root/opt/duet" "$root/proc" "$root/sys" "$root/dev" \
    "$root/root" "$root/tmp"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
cp "$repo/examples/sync/harness.sh" "$root/opt/duet/harness.sh"
cp "$repo/src/duetbench/sync/duet_sync.sh" "$root/opt/duet/duet_sync.sh"
chmod 755 "$root/opt/duet/harness.sh"

tar -C "$root" -cf - . | "$engine" import - "$image" >/dev/null
echo "$image"
