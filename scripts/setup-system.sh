#!/usr/bin/env bash
# System packages the tests use (Debian/Ubuntu; run as root or via sudo):
# podman + runc (container executor tests), busybox-static (test image rootfs, the
# busybox-sh sync tests), stress-ng (noisy neighbour), hyperfine (peer tool in the study),
# chromium (HTML report tests), gcc + libc6-dev (C sync harness, static builds, the
# known-answer workloads), make (examples/workloads/Makefile), default-jdk-headless (javac
# and java: the DaCapo callback example), python3 (Debian's /usr/bin/python3: side A of
# the pyperformance example), postgresql (the results repository's server tests start their
# own throw-away server). bash, sh, tar and coreutils are part of every Debian system.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
pkgs="podman runc busybox-static stress-ng hyperfine chromium gcc libc6-dev make python3 postgresql"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
# any JDK with javac will do (e.g. openjdk-17-jdk-headless); else Debian's default one
command -v javac >/dev/null 2>&1 || missing="$missing default-jdk-headless"
if [ -n "$missing" ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# Podman on sandboxed hosts (no systemd, no network namespace, tight ulimits): see docs/containers.md
if [ ! -f /etc/containers/containers.conf ] || ! grep -q 'runtime = "runc"' /etc/containers/containers.conf; then
  $SUDO mkdir -p /etc/containers
  $SUDO tee /etc/containers/containers.conf >/dev/null <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
netns = "none"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
fi
echo "system packages ready"
