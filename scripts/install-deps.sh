#!/bin/sh
# Installs, from Debian's packages, everything pmrep needs to build and test.
# Usage (as root on Debian 12):  scripts/install-deps.sh [--vm | --packages | --drbd]
#   --vm        also the packages of the soft-RoCE guest rig (qemu, busybox, ndctl, perftest ...)
#               and of the benchmarks (perftest floors, librpma for comparison, gnuplot),
#               and debootstrap (a Debian 13 userspace for the native RDMA FLUSH stage),
#               and Pacemaker + Corosync (the three-node cluster of the pacemaker stage:
#               tests/pacemaker);
#               and those of --packages: everything CI (scripts/test.sh) needs
#   --packages  also what building and checking the Debian packages needs (debhelper,
#               lintian; debootstrap for the clean chroot: scripts/packages.sh)
#   --drbd      the guest rig's packages (as --vm's, without the cluster and the Debian
#               packaging tools) and what tests/vm/drbd.sh runs in the guest, which
#               shares the host's root: drbd-utils (drbdadm, drbdsetup, drbdmeta; its 8.4
#               compatibility drives the guest kernel's DRBD 8.4 module) and fio. Not CI's.
set -eu
BUILD_PKGS="build-essential cmake pkg-config libibverbs-dev librdmacm-dev libpmem2-dev \
libcmocka-dev libssl-dev valgrind clang libclang-rt-14-dev iproute2 nftables \
python3 groff-base man-db libsystemd-dev resource-agents abigail-tools \
libsqlite3-dev sqlite3"
VM_PKGS="qemu-system-x86 busybox-static ndctl iproute2 e2fsprogs xz-utils zstd rdma-core \
ibverbs-utils ibverbs-providers rdmacm-utils perftest librpma-dev gnuplot-nox debootstrap"
PKG_PKGS="debhelper dpkg-dev fakeroot lintian debootstrap"
# the cluster runs in namespaces (tests/pacemaker): not as the host's services
PCMK_PKGS="pacemaker corosync crmsh"
# tests/vm/drbd.sh (DRBD beside pmrep in the guest): never the host's DRBD service
DRBD_PKGS="drbd-utils fio"
pkgs=$BUILD_PKGS
case ${1:-} in
--vm) pkgs="$pkgs $VM_PKGS $PKG_PKGS $PCMK_PKGS" ;;
--packages) pkgs="$pkgs $PKG_PKGS" ;;
--drbd) pkgs="$pkgs $VM_PKGS $DRBD_PKGS" ;;
'') ;;
*) echo "install-deps.sh: unknown option '$1' (--vm, --packages, --drbd)" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
# where PID 1 is systemd, apt starts corosync and pacemaker on the host: the
# test's nodes run their own in namespaces, the host's stay off
# (and drbd-utils' unit: the DRBD resources live in the guest, not on the host)
host_cluster_off() {
    [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] || return 0
    case " $pkgs " in *" pacemaker "*)
        $SUDO systemctl disable --now pacemaker corosync >/dev/null 2>&1 || true ;;
    esac
    case " $pkgs " in *" drbd-utils "*)
        $SUDO systemctl disable --now drbd >/dev/null 2>&1 || true ;;
    esac
}
if [ -z "$missing" ]; then
    host_cluster_off
    echo "install-deps: all packages present"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
host_cluster_off
