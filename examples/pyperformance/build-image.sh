#!/bin/sh
# Build localhost/duetbench-pyperf-minimal (Containerfile) for duet.podman.yml -- no
# registry needed. Run by duet.podman.yml's experiment setup, or by hand:
#   sh build-image.sh [ENGINE]        (ENGINE: podman (default) or docker)
#
# What goes into the image, besides a static busybox (BUSYBOX=/path/to/busybox picks it;
# Debian: apt-get install busybox-static):
#   - the two interpreters of duet.yml, copied from this host at their own paths with
#     their standard libraries (no site-packages) and the C libraries they load (ldd), so
#     the containers run the very same binaries as the local example; inside the image
#     they are /usr/local/bin/python-A and /usr/local/bin/python-B.
#     PYTHON_A (default /usr/bin/python3) and PYTHON_B (default: the python3 first on
#     PATH) pick them, as for duet.yml's setup.sh.
#   - pyperf, installed with pip into /opt/pyperf (pip install --target), the way any
#     Python package gets into an image (docs/containers.md, "Python packages in the
#     container"). PIP (default: python3 -m pip) is the pip that installs it.
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
image=localhost/duetbench-pyperf-minimal

# the real executable behind a command name (pyenv shims and venvs lead to it)
resolve() {
    "$1" -c 'import os, sys; print(os.path.realpath(sys.executable))'
}

# the image is built again only when what goes into it changed: the interpreters (path,
# size, time), the Containerfile and this script
python_a=$(resolve "${PYTHON_A:-/usr/bin/python3}")
python_b=$(resolve "${PYTHON_B:-$(command -v python3)}")
inputs=$(
    {
        ls -lL --time-style=+%s "$python_a" "$python_b" "$busybox"
        cat "$here/Containerfile" "$0"
    } | cksum | cut -d' ' -f1
)
if [ "$("$engine" image inspect --format '{{index .Labels "duetbench.inputs"}}' "$image" 2>/dev/null)" = "$inputs" ]; then
    echo "build-image.sh: $image is up to date"
    exit 0
fi

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
root=$context/root
mkdir -p "$root/usr/local/bin" "$root/opt/pyperf"

# a host path into the image at the same path (/lib and /lib64 are usr/lib, usr/lib64
# there, as on merged-/usr systems), symbolic links followed
put() {
    case $1 in
        /lib/* | /lib64/*) dest=$root/usr$1 ;;
        *) dest=$root$1 ;;
    esac
    mkdir -p "$(dirname "$dest")"
    cp -L "$1" "$dest"
}

# the shared libraries an executable or extension module loads, one path a line
libraries() {
    ldd "$1" 2>/dev/null | sed -n -e 's/.*=> \(\/[^ ]*\) .*/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) (0x.*/\1/p'
}

add_python() {  # SIDE EXECUTABLE
    python=$2
    stdlib=$("$python" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
    put "$python"
    # the standard library, compiled files included, without installed packages and tests
    tar -C / -chf - --exclude=site-packages --exclude=dist-packages --exclude=test \
        --exclude=idlelib --exclude=tkinter --exclude=turtledemo --exclude=ensurepip \
        "${stdlib#/}" | tar -C "$root" -xf -
    for lib in $(
        {
            libraries "$python"
            find "$stdlib" -name '*.so' -not -path '*-packages/*' | while read -r so; do
                libraries "$so"
            done
        } | sort -u
    ); do
        put "$lib"
    done
    ln -sf "$python" "$root/usr/local/bin/python-$1"
    echo "build-image.sh: python-$1 is $python ($("$python" -c 'import platform; print(platform.python_version())'))"
}

add_python A "$python_a"
add_python B "$python_b"
${PIP:-python3 -m pip} install --quiet --disable-pip-version-check --no-deps \
    --target "$root/opt/pyperf" pyperf
cp "$busybox" "$context/busybox"
cp "$here/Containerfile" "$context/Containerfile"
"$engine" build -q -t "$image" --label "duetbench.inputs=$inputs" \
    -f "$context/Containerfile" "$context"
