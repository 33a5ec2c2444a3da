#!/bin/bash
# tests/vm/run-in-vm.sh -- run one command inside a throw-away QEMU guest (TCG, no KVM needed)
# that has soft-RoCE and emulated persistent memory, with the host's build tree visible.
#
# Usage:  tests/vm/run-in-vm.sh [--] COMMAND [ARGS...]
#         tests/vm/run-in-vm.sh --prepare      fetch + unpack the kernel, build the initramfs, exit
#         tests/vm/run-in-vm.sh --help
#
# The guest
#   * runs a Debian 12 kernel (VM_KERNEL=stock: what linux-image-amd64 depends on, 6.1;
#     VM_KERNEL=backports: the bookworm-backports 6.12 kernel). The .deb is fetched with a
#     private apt configuration (mirror taken from the host's /etc/apt sources; /etc/apt and the
#     host's apt state are never touched), unpacked under the cache, never installed;
#   * sees the host root (or VM_ROOT) read-only over virtio-9p and runs COMMAND in `chroot` of
#     it, as root, in the caller's working directory, with the caller's exported environment;
#     host binaries run unchanged. Writable: tmpfs /tmp /run /var/tmp /mnt /dev/shm, plus VM_RW_DIRS
#     (host directories shared read-write at the same path; default: the current directory);
#   * has rdma_rxe device rxe0 on netdev dummy0 (10.11.12.1/24); no NIC (-nic none), so client
#     and server both run in the guest, over rxe loopback;
#   * has two emulated NVDIMMs (VM_PMEM_MODE=fsdax+devdax, the default): one as fsdax, ext4
#     mounted with -o dax on /mnt/pmem (PMEM_DEV=/dev/pmem0; VM_PMEM_SIZE), one as devdax
#     /dev/dax1.0 (PMEM_DEVDAX; VM_DEVDAX_SIZE, 32 MiB by default). NB: ibv_reg_mr() on an
#     fsdax file mapping fails (EOPNOTSUPP): RDMA straight into pmem needs the devdax device.
#   COMMAND additionally gets IN_VM=1 VM_KERNEL RXE_DEV RXE_NETDEV RXE_IP PMEM_MODE PMEM_DEV
#   PMEM_MOUNT PMEM_DEVDAX in its environment.
#
# Output: COMMAND's stdout/stderr stream to ours (virtio-serial ports: not ttys, no CR).
# Exit status:
#   COMMAND's own status, or
#   124  the hard wall-clock limit VM_TIMEOUT was hit (guest killed)
#   125  rig failure: kernel fetch/unpack, QEMU, or the guest's RDMA/PMEM setup failed
#   2    usage error
#   (a COMMAND that itself exits 124/125 is indistinguishable, except for our stderr message)
#
# Knobs (environment, all optional):
#   VM_KERNEL=stock       stock | backports
#   VM_TIMEOUT=900        hard wall-clock limit of the guest run, seconds (timeout -k 10)
#   VM_BOOT_TIMEOUT=120   the guest must be set up (rxe0, pmem) within this, else exit 125
#   VM_FETCH_TIMEOUT=600  limit for each apt step of a kernel fetch, seconds
#   VM_MEM=2048 VM_SMP=2  guest RAM (MiB) and CPUs
#   VM_PMEM_SIZE=512      size of the fsdax (or raw) NVDIMM, MiB (0: no NVDIMM at all)
#   VM_DEVDAX_SIZE=32     size of the devdax NVDIMM, MiB: a multiple of 2 (the namespace's 2 MiB
#                         alignment), at least 16 (ndctl's info block and struct page array,
#                         ~1/64 of it, come off the front). Small on purpose: a device DAX
#                         replica is the whole device, and a full resync of it over rxe under
#                         TCG crawls (512 MiB: ~2 min; 62 MiB: 19 s; ~0.24 s a MiB)
#   VM_PMEM_MODE          fsdax+devdax (default) | fsdax | devdax (/dev/dax0.0) | raw (/dev/pmem0)
#   VM_CXL=0              1: the persistent memory is one emulated CXL type-3 device instead of
#                         NVDIMMs (-machine q35,cxl=on; pxb-cxl host bridge, cxl-rp root port,
#                         cxl-type3 with memdev= (persistent in QEMU 7.2) and a label storage
#                         area lsa=, one fixed memory window). The guest assembles a pmem region
#                         (cxl create-region -t pmem) and makes the namespaces of VM_PMEM_MODE in
#                         it (fsdax+devdax, fsdax or devdax; not raw): devdax VM_DEVDAX_SIZE, fsdax
#                         the rest. The command also gets PMEM_CXL_REGION (cxl's name of the
#                         region) and PMEM_ND_REGION (libnvdimm's). tests/vm/cxl.sh drives it.
#                         With it the guest boots with pcie_ports=compat and VM_CPU defaults to
#                         max,hypervisor=off: what 6.12 needs of QEMU 7.2's device (see below).
#   VM_CXL_SIZE=256       size of the CXL device, MiB (a multiple of 256: the CXL capacity unit)
#   VM_RW_DIRS=$PWD       colon-separated host directories shared read-write
#   VM_RO_DIRS            colon-separated host directories shared read-only at the same path
#                         (mounted before VM_RW_DIRS: an RW dir may lie inside an RO one)
#   VM_ROOT               a directory holding another Debian userspace (e.g. a debootstrap of
#                         a newer release): the guest shares it instead of the host root and
#                         runs COMMAND (and its own rdma/ndctl/mkfs.ext4) in a chroot of it.
#                         It needs bash, env, rdma (iproute2), ndctl, mkfs.ext4; host
#                         binaries must have been built against it. Mount points of the
#                         shared directories are created in it (except under tmpfs dirs).
#   VM_CACHE              cache dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/pmrep-vm)
#   VM_KERNEL_MAX_AGE=7   days before the kernel package name is looked up again (a new ABI
#                         means a new download; if the look-up fails the cached kernel is used)
#   VM_KERNEL_PKG         exact kernel package to fetch (from VM_KERNEL's suites)
#   VM_KERNEL_DEB         a linux-image .deb to use instead of fetching one
#   VM_KERNEL_DIR         an unpacked kernel: boot/vmlinuz-KV + lib/modules/KV (plain .ko,
#                         modules.dep as made by `busybox depmod -b DIR KV`)
#   VM_APT_MIRROR         Debian mirror URL (default: the host's source for bookworm)
#   VM_APT_SECURITY_MIRROR  security mirror URL (default: the host's source for bookworm-security)
#   VM_CPU=max            QEMU -cpu (max exposes clflushopt/clwb)
#   VM_APPEND             extra kernel command line
#   VM_MODPROBE           more kernel modules for the command, loaded by the guest's init
#                         (busybox modprobe, the guest kernel's modules.dep) before it runs:
#                         modprobe argument lists separated by ';', e.g.
#                         "drbd; brd rd_nr=2 rd_size=65536". Best effort: what failed is
#                         written to /run/vmjob/modprobe.log; the command checks
#                         /sys/module for what it needs (tests/vm/drbd.sh does)
#   VM_PVH=1              boot the unpacked vmlinux through PVH (saves ~3 s/boot); 0: bzImage
#   VM_VERBOSE=0          1: stream the guest kernel console to stderr
#   VM_KEEP=0             1: keep the per-run directory (console log, NVDIMM images)
#
# Host packages (Debian 12): qemu-system-x86 busybox-static ndctl iproute2 e2fsprogs xz-utils
#   (and for the tests run inside: rdma-core ibverbs-utils ibverbs-providers rdmacm-utils
#   perftest ...) -- see scripts/install-deps.sh --vm.
set -uo pipefail
trap '' PIPE          # a vanished reader must give EPIPE errors, not kill us (and orphan QEMU)

prog=run-in-vm
say() { echo "$prog: $*" >&2; }
die() { say "error: $*"; exit 125; }
usage() { sed -n '2,/^set -uo/{/^set -uo/!s/^# \{0,1\}//p}' "$0" >&2; exit 2; }

PREPARE_ONLY=0
case ${1:-} in
  --) shift ;;
  --prepare) PREPARE_ONLY=1; shift ;;
  -h|--help) usage ;;
  -*) say "unknown option $1"; usage ;;
esac
[ $PREPARE_ONLY = 1 ] || [ $# -ge 1 ] || usage

VM_KERNEL=${VM_KERNEL:-stock}
VM_TIMEOUT=${VM_TIMEOUT:-900}
VM_BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-120}
VM_FETCH_TIMEOUT=${VM_FETCH_TIMEOUT:-600}
VM_MEM=${VM_MEM:-2048}
VM_SMP=${VM_SMP:-2}
VM_PMEM_SIZE=${VM_PMEM_SIZE:-512}
VM_DEVDAX_SIZE=${VM_DEVDAX_SIZE:-32}
VM_PMEM_MODE=${VM_PMEM_MODE:-fsdax+devdax}
VM_CXL=${VM_CXL:-0}
VM_CXL_SIZE=${VM_CXL_SIZE:-256}
VM_CPU_SET=${VM_CPU:+1}
VM_CPU=${VM_CPU:-max}
VM_KERNEL_MAX_AGE=${VM_KERNEL_MAX_AGE:-7}
VM_CACHE=${VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/pmrep-vm}
SUITE=bookworm        # kernel package names below are Debian 12 ones (6.1.0-N, 6.12.N+deb12)
if [ -z "${VM_RW_DIRS+x}" ]; then
  if [ "$PWD" != / ]; then VM_RW_DIRS=$PWD; else VM_RW_DIRS=; fi
fi
VM_RO_DIRS=${VM_RO_DIRS:-}
VM_ROOT=${VM_ROOT:-}
if [ -n "$VM_ROOT" ]; then
  VM_ROOT=$(cd "$VM_ROOT" 2>/dev/null && pwd -P) || { say "VM_ROOT: no such directory: ${VM_ROOT}"; exit 2; }
  [ "$VM_ROOT" = / ] && VM_ROOT=
fi
case $VM_KERNEL in stock|backports) ;; *) say "VM_KERNEL must be stock or backports"; exit 2 ;; esac
case $VM_PMEM_MODE in
  fsdax|devdax|raw) NVDIMMS=1 ;;
  fsdax+devdax) NVDIMMS=2 ;;
  *) say "VM_PMEM_MODE must be fsdax+devdax, fsdax, devdax or raw"; exit 2 ;;
esac
[ "$VM_PMEM_SIZE" = 0 ] && NVDIMMS=0
case $VM_CXL in
  0) ;;
  1) [ "$VM_PMEM_MODE" = raw ] && { say "VM_CXL=1 makes fsdax and/or devdax namespaces, not raw"; exit 2; }
     case $VM_CXL_SIZE in ''|*[!0-9]*) say "VM_CXL_SIZE must be a number"; exit 2 ;; esac
     if [ "$VM_CXL_SIZE" -lt 256 ] || [ $((VM_CXL_SIZE % 256)) != 0 ]; then
       say "VM_CXL_SIZE must be a multiple of 256 (MiB)"; exit 2
     fi
     # the fsdax namespace gets what the devdax one leaves (and must hold ext4)
     if [ "$VM_PMEM_MODE" = fsdax+devdax ] && [ $((VM_CXL_SIZE - VM_DEVDAX_SIZE)) -lt 64 ]; then
       say "VM_CXL_SIZE leaves less than 64 MiB for fsdax beside VM_DEVDAX_SIZE"; exit 2
     fi
     NVDIMMS=0
     # 6.12 with QEMU 7.2's device, two things 6.1 does not do:
     # - with native CXL error handling granted by _OSC, cxl_pci sets up the event log
     #   interrupts, which this device does not offer ("Failed to get interrupt for event Info
     #   log"): no memdev. pcie_ports=compat makes Linux ask _OSC for no control at all;
     # - committing a region first invalidates the CPU caches, which Linux refuses to attempt
     #   under a hypervisor ("Failed to synchronize CPU cache state", ENXIO): no region. TCG
     #   emulates no caches to invalidate; hypervisor=off clears the CPUID bit it looks at.
     VM_APPEND="pcie_ports=compat${VM_APPEND:+ $VM_APPEND}"
     [ -n "$VM_CPU_SET" ] || VM_CPU=max,hypervisor=off ;;
  *) say "VM_CXL must be 0 or 1"; exit 2 ;;
esac
for v in VM_TIMEOUT VM_BOOT_TIMEOUT VM_FETCH_TIMEOUT VM_MEM VM_SMP VM_PMEM_SIZE VM_DEVDAX_SIZE VM_KERNEL_MAX_AGE; do
  case ${!v} in ''|*[!0-9]*) say "$v must be a number"; exit 2 ;; esac
done
if [ "$VM_DEVDAX_SIZE" -lt 16 ] || [ $((VM_DEVDAX_SIZE % 2)) != 0 ]; then
  say "VM_DEVDAX_SIZE must be a multiple of 2 (MiB), at least 16"; exit 2
fi
# NVDIMM_MB[n]: the size of NVDIMM n (the devdax one is number 1 in fsdax+devdax, 0 in devdax)
NVDIMM_MB=()
case $VM_PMEM_MODE in
  devdax) NVDIMM_MB=("$VM_DEVDAX_SIZE") ;;
  fsdax+devdax) NVDIMM_MB=("$VM_PMEM_SIZE" "$VM_DEVDAX_SIZE") ;;
  *) NVDIMM_MB=("$VM_PMEM_SIZE") ;;
esac

export PATH=$PATH:/usr/sbin:/sbin
for t in qemu-system-x86_64 busybox dpkg-deb tar timeout flock gzip xz apt-get apt-cache; do
  command -v "$t" >/dev/null || die "missing host tool: $t (see scripts/install-deps.sh --vm)"
done
# in_root TOOL: TOOL is in the guest's root (the host's, or VM_ROOT)
in_root() {
  local d
  [ -n "$VM_ROOT" ] || { command -v "$1" >/dev/null; return; }
  for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
    [ -x "$VM_ROOT$d/$1" ] && return 0
  done
  return 1
}
if [ $PREPARE_ONLY = 0 ]; then   # run by the guest from the host root (or VM_ROOT)
  for t in rdma bash env $( [ $NVDIMMS != 0 ] && [ "$VM_PMEM_MODE" != raw ] && echo ndctl mkfs.ext4 ) \
           $( [ "$VM_CXL" = 1 ] && echo cxl ndctl mkfs.ext4 ); do
    in_root "$t" ||
      die "missing tool in ${VM_ROOT:-the host root}: $t (see scripts/install-deps.sh --vm)"
  done
fi
BUSYBOX=$(command -v busybox)
# ldd fails on a static binary; the guest's PID 1 needs a static one
ldd "$BUSYBOX" >/dev/null 2>&1 && die "$BUSYBOX is dynamically linked: install busybox-static"

mkdir -p "$VM_CACHE/kernels" || die "cannot create $VM_CACHE"

# ================================================================ kernel
# A private apt "view" per flavour: its own sources.list, lists, cache and state under the
# cache dir, no host apt.conf.d hooks, no host preferences. Only proxy settings are inherited.

# host_uri SUITE -> the URI of an enabled `deb` source for SUITE in the host's apt sources
host_uri() {
  local suite=$1 f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    # deb [opts] URI SUITE COMPONENTS...
    awk -v s="$suite" '
      /^[ \t]*deb[ \t]/ { sub(/^[ \t]*deb[ \t]+/, ""); if ($0 ~ /^\[/) sub(/^\[[^]]*\][ \t]*/, "")
                          if ($2 == s) { print $1; exit } }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    # deb822 paragraphs: Types/URIs/Suites/Enabled fields; "#" lines are comments
    awk -v s="$suite" '
      function flush() { if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no" && (" " suites " ") ~ (" " s " "))
                           { split(uris, u, " "); if (u[1] != "") { print u[1]; found = 1 } }
                         types = uris = suites = ""; enabled = "yes" }
      BEGIN { enabled = "yes" }
      /^#/ { next }
      /^[ \t]*$/ { flush(); if (found) exit; next }
      /^[A-Za-z-]+:/ { key = tolower($1); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
                       if (key == "types:") types = val; else if (key == "uris:") uris = val
                       else if (key == "suites:") suites = val; else if (key == "enabled:") enabled = val }
      END { if (!found) flush() }' "$f"
  done
}

apt_view_setup() {   # $1 = flavour; sets AV (the view dir) and writes its config
  local fl=$1 mirror sec key opts
  AV=$VM_CACHE/apt-$fl
  mkdir -p "$AV"/{lists/partial,cache/archives/partial,state,empty,dl} || die "cannot create $AV"
  mirror=${VM_APT_MIRROR:-$(host_uri "$SUITE" | head -n1)}
  [ -n "$mirror" ] || die "no Debian mirror for '$SUITE' in /etc/apt sources: set VM_APT_MIRROR"
  key=/usr/share/keyrings/debian-archive-keyring.gpg
  opts=; [ -r "$key" ] && opts="[signed-by=$key] "
  {
    if [ "$fl" = stock ]; then
      echo "deb ${opts}$mirror $SUITE main"
      sec=${VM_APT_SECURITY_MIRROR:-$(host_uri "$SUITE-security" | head -n1)}
      [ -n "$sec" ] && echo "deb ${opts}$sec $SUITE-security main"
    else
      echo "deb ${opts}$mirror $SUITE-backports main"
    fi
  } > "$AV/sources.list"
  {
    cat <<EOF
Dir::Etc::main "/dev/null";
Dir::Etc::parts "$AV/empty";
Dir::Etc::sourcelist "$AV/sources.list";
Dir::Etc::sourceparts "$AV/empty";
Dir::Etc::preferences "/dev/null";
Dir::Etc::preferencesparts "$AV/empty";
Dir::State "$AV/state";
Dir::State::Lists "$AV/lists";
Dir::Cache "$AV/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT::Sandbox::User "root";
Acquire::Languages "none";
Acquire::GzipIndexes "true";
Acquire::Retries "3";
Acquire::http::Timeout "30";
EOF
    # keep the host's proxy settings (and nothing else of its configuration)
    apt-config dump 2>/dev/null | grep -E '^Acquire::(http|https|ftp)::Proxy(::[^ ]+)? ' | sed 's/$/;/' || true
  } > "$AV/apt.conf"
}
av() { APT_CONFIG=$AV/apt.conf timeout -k 10 "$VM_FETCH_TIMEOUT" "$@"; }

# Sets PKG: the kernel package of flavour VM_KERNEL (looked up at most every VM_KERNEL_MAX_AGE days)
resolve_pkg() {
  local pf=$VM_CACHE/$VM_KERNEL.pkg old='' new=''
  if [ -n "${VM_KERNEL_PKG:-}" ]; then PKG=$VM_KERNEL_PKG; return; fi
  [ -s "$pf" ] && old=$(cat "$pf")
  if [ -n "$old" ] && [ -f "$VM_CACHE/kernels/$old/.ready" ] &&
     [ -z "$(find "$pf" -mmin "+$((VM_KERNEL_MAX_AGE * 1440))" 2>/dev/null)" ]; then
    PKG=$old; return
  fi
  say "looking up the $VM_KERNEL kernel package ($(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}//p' "$AV/sources.list" | tr '\n' ';'))"
  if av apt-get -q update >"$AV/update.log" 2>&1; then
    grep -E '^(W|E):' "$AV/update.log" | sed 's/^/  apt: /' >&2
    # the flavour's linux-image-amd64 metapackage names the kernel (stock: 6.1.0-N-amd64,
    # backports: 6.12.N+deb12-amd64); never a wildcard: that would fetch every ABI version
    new=$(av apt-cache depends linux-image-amd64 2>/dev/null |
          awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
    if [ "$VM_KERNEL" = backports ] && ! [[ $new =~ ^linux-image-6\.12\.[0-9]+\+deb12-amd64$ ]]; then
      # the metapackage moved past 6.12: take the newest 6.12 build still in the suite
      new=$(av apt-cache pkgnames linux-image-6.12. 2>/dev/null |
            grep -E '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' | sort -V | tail -n1)
    fi
  else
    sed 's/^/  apt: /' "$AV/update.log" >&2
  fi
  if [ -n "$new" ]; then
    echo "$new" > "$pf"; PKG=$new
  elif [ -n "$old" ] && [ -f "$VM_CACHE/kernels/$old/.ready" ]; then
    say "warning: kernel look-up failed; using the cached $old"; touch "$pf"; PKG=$old
  else
    die "cannot find the $VM_KERNEL kernel package (see $AV/update.log; or set VM_KERNEL_PKG/VM_KERNEL_DEB)"
  fi
}

# Unpack a kernel .deb into KDIR: boot/vmlinuz, plain .ko modules (minus hardware drivers a
# guest cannot have), busybox-made modules.dep.
unpack_kernel() {
  local deb=$1 tmp=$KDIR.tmp.$$ kv
  say "unpacking $(basename "$deb")"
  rm -rf "$tmp"; mkdir -p "$tmp"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards --no-wildcards-match-slash \
      --exclude='boot/System.map-*' --exclude='usr/share/*' \
      --exclude='lib/modules/*/kernel/drivers/gpu' --exclude='lib/modules/*/kernel/drivers/media' \
      --exclude='lib/modules/*/kernel/drivers/net/wireless' --exclude='lib/modules/*/kernel/drivers/net/ethernet' \
      --exclude='lib/modules/*/kernel/drivers/staging' --exclude='lib/modules/*/kernel/drivers/bluetooth' \
      --exclude='lib/modules/*/kernel/drivers/iio' --exclude='lib/modules/*/kernel/drivers/usb' \
      --exclude='lib/modules/*/kernel/drivers/hid' --exclude='lib/modules/*/kernel/drivers/input' \
      --exclude='lib/modules/*/kernel/drivers/isdn' --exclude='lib/modules/*/kernel/drivers/mtd' \
      --exclude='lib/modules/*/kernel/drivers/video' --exclude='lib/modules/*/kernel/drivers/infiniband/hw' \
      --exclude='lib/modules/*/kernel/sound' --exclude='lib/modules/*/kernel/net/wireless' \
      --exclude='lib/modules/*/kernel/net/mac80211' --exclude='lib/modules/*/kernel/net/bluetooth' ||
    { rm -rf "$tmp"; die "cannot unpack $deb"; }
  # newer Debian kernels ship .ko.xz (or .ko.zst); busybox modprobe wants plain .ko
  find "$tmp/lib/modules" -name '*.ko.xz' -print0 | xargs -0 -r -n 64 -P "$(nproc)" xz -d ||
    { rm -rf "$tmp"; die "xz -d of the modules failed"; }
  if find "$tmp/lib/modules" -name '*.ko.zst' | grep -q .; then
    command -v zstd >/dev/null || { rm -rf "$tmp"; die "modules are .ko.zst: install zstd"; }
    find "$tmp/lib/modules" -name '*.ko.zst' -print0 | xargs -0 -r -n 64 -P "$(nproc)" zstd -q -d --rm
  fi
  kv=$(ls "$tmp/lib/modules" | head -n1)
  [ -n "$kv" ] && [ -f "$tmp/boot/vmlinuz-$kv" ] || { rm -rf "$tmp"; die "$deb holds no kernel"; }
  "$BUSYBOX" depmod -b "$tmp" "$kv" || { rm -rf "$tmp"; die "depmod failed"; }
  rm -rf "$KDIR"; mv "$tmp" "$KDIR" && touch "$KDIR/.ready" || die "cannot create $KDIR"
}

# Sets KDIR KV KERNEL (what QEMU boots)
prepare_kernel() {
  local deb n
  if [ -n "${VM_KERNEL_DIR:-}" ]; then
    KDIR=$VM_KERNEL_DIR
  elif [ -n "${VM_KERNEL_DEB:-}" ]; then
    KDIR=$VM_CACHE/kernels/$(basename "$VM_KERNEL_DEB" .deb)
    [ -f "$KDIR/.ready" ] || unpack_kernel "$VM_KERNEL_DEB"
  else
    apt_view_setup "$VM_KERNEL"
    resolve_pkg
    KDIR=$VM_CACHE/kernels/$PKG
    if [ ! -f "$KDIR/.ready" ]; then
      say "fetching $PKG"
      rm -f "$AV/dl/"*.deb
      if ! ls "$AV/lists/"*Packages* >/dev/null 2>&1; then
        av apt-get -q update >"$AV/update.log" 2>&1 || { cat "$AV/update.log" >&2; die "apt-get update failed"; }
      fi
      (cd "$AV/dl" && av apt-get -q download "$PKG" >&2) || die "apt-get download $PKG failed"
      n=$(ls "$AV/dl/"*.deb 2>/dev/null | wc -l)
      [ "$n" = 1 ] || die "expected one .deb for $PKG, got $n"
      deb=$(ls "$AV/dl/"*.deb)
      unpack_kernel "$deb"
      rm -f "$deb"                 # ~100 MB we no longer need
    fi
  fi
  KV=$(ls "$KDIR/lib/modules" 2>/dev/null | head -n1)
  [ -n "$KV" ] && [ -f "$KDIR/boot/vmlinuz-$KV" ] && [ -f "$KDIR/lib/modules/$KV/modules.dep" ] ||
    die "bad kernel dir $KDIR"
  touch "$KDIR/.used" 2>/dev/null
  KERNEL=$KDIR/boot/vmlinuz-$KV
  # Decompressing a bzImage takes ~3 s per boot under TCG. QEMU boots an uncompressed ELF
  # vmlinux directly through its PVH entry (Debian kernels have CONFIG_PVH=y): unpack it once.
  if [ "${VM_PVH:-1}" = 1 ]; then
    local vml=$KDIR/vmlinux magic tool off
    if [ ! -s "$vml" ]; then
      for magic in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
        tool=${magic%%:*}
        command -v "$tool" >/dev/null || continue
        off=$(LC_ALL=C grep -obUaP "${magic#*:}" "$KERNEL" | head -n1 | cut -d: -f1)
        [ -n "$off" ] || continue
        # the decompressor complains about the bytes after the stream: ignore its status
        tail -c +$((off + 1)) "$KERNEL" 2>/dev/null | "$tool" -dc > "$vml.tmp.$$" 2>/dev/null
        if [ "$(head -c 4 "$vml.tmp.$$" | od -An -c | tr -d ' ')" = '177ELF' ]; then
          mv "$vml.tmp.$$" "$vml"; break
        fi
        rm -f "$vml.tmp.$$"
      done
    fi
    [ -s "$vml" ] && KERNEL=$vml
  fi
}

# Drop unpacked kernels no flavour points at any more and unused for a day.
prune_kernels() {
  local d keep=" "
  for d in "$VM_CACHE"/*.pkg; do [ -s "$d" ] && keep="$keep$(cat "$d") "; done
  for d in "$VM_CACHE"/kernels/*/; do
    d=${d%/}
    case $keep in *" ${d##*/} "*) continue ;; esac
    [ -n "$(find "$d/.used" -mmin -1440 2>/dev/null)" ] && continue
    case $d in *.tmp.*) [ -n "$(find "$d" -maxdepth 0 -mmin -60)" ] && continue ;; esac
    say "removing unused kernel ${d##*/}"; rm -rf "$d"
  done
}

# ================================================================ guest PID 1
read -r -d '' GUEST_INIT <<'INIT_EOF'
#!/bin/busybox sh
# PID 1 of the pmrep test guest. Per-run settings come from /run/vmjob/config (9p, the host's
# per-run directory). Any setup failure ends in `fatal`: the host then exits 125.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
log() { echo "vm-init: $*" >/dev/console; }
fatal() {
  log "FATAL: $*"
  [ -d /host/run/vmjob ] && echo "$*" > /host/run/vmjob/fatal
  sync; poweroff -f; sleep 10
}
for m in $(cat /bootmods/order); do insmod "/bootmods/$m.ko" || log "insmod $m failed"; done
O=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o $O,ro,cache=loose hostroot /host || fatal "cannot mount the host root over 9p"
mount -t 9p -o $O,ro,cache=loose mods /lib/modules || fatal "cannot mount the kernel modules over 9p"
for d in tmp run var/tmp mnt; do mount -t tmpfs -o mode=1777 tmpfs /host/$d || fatal "tmpfs /$d"; done
mkdir -p /host/run/vmjob
mount -t 9p -o $O,cache=none job /host/run/vmjob || fatal "cannot mount the job dir"
. /host/run/vmjob/config
log "boot done at $(cut -d' ' -f1 /proc/uptime)s"

mkdir -p /dev/shm /dev/pts
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
ln -sf /proc/self/fd /dev/fd; ln -sf fd/0 /dev/stdin; ln -sf fd/1 /dev/stdout; ln -sf fd/2 /dev/stderr
mount --rbind /dev /host/dev
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
i=0
while [ $i -lt "$NRO" ]; do
  eval d=\$RO_$i
  mkdir -p "/host$d" 2>/dev/null
  mount -t 9p -o $O,ro,cache=loose "ro$i" "/host$d" || fatal "cannot mount the ro share $d"
  i=$((i+1))
done
i=0
while [ $i -lt "$NRW" ]; do
  eval d=\$RW_$i
  mkdir -p "/host$d" 2>/dev/null
  mount -t 9p -o $O,cache=mmap "rw$i" "/host$d" || fatal "cannot mount the rw share $d"
  i=$((i+1))
done
hostname pmrep-vm

C="chroot /host /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root"
# -------- modules (busybox modprobe, modules.dep from the 9p share)
MODS="rdma_rxe ib_uverbs rdma_ucm dummy"
[ "$NVDIMMS" != 0 ] && MODS="$MODS nfit nd_pmem dax_pmem device_dax"
[ "$CXL" = 1 ] && MODS="$MODS cxl_acpi cxl_pci cxl_mem cxl_pmem nd_pmem dax_pmem device_dax"
modprobe -a $MODS ext4 crc32c_generic crc32c-intel 2>/dev/null   # the last three may be built in
for m in $MODS; do [ -d /sys/module/$m ] || fatal "kernel module $m did not load"; done
# more modules for the command (VM_MODPROBE): best effort, failures logged for the command
if [ -n "$MODPROBE" ]; then
  : > /host/run/vmjob/modprobe.log
  echo "$MODPROBE" | tr ';' '\n' | while read -r args; do
    [ -n "$args" ] || continue
    # shellcheck disable=SC2086  # (the words are modprobe's arguments)
    modprobe $args >>/host/run/vmjob/modprobe.log 2>&1 ||
      { echo "modprobe $args: failed" >>/host/run/vmjob/modprobe.log; log "modprobe $args failed"; }
  done
fi
# -------- soft-RoCE on a dummy netdev (no NIC: nothing can leave the guest)
ip link set lo up
ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy || fatal "dummy0"  # loading dummy may create it
ip link set dummy0 up || fatal "dummy0 up"
ip addr add "$RXE_IP/24" dev dummy0 || fatal "ip addr"
$C rdma link add rxe0 type rxe netdev dummy0 || fatal "rdma link add rxe0"
n=0
until grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null &&
      cat /sys/class/infiniband/rxe0/ports/1/gids/[0-3] 2>/dev/null | grep -q ':ffff:'; do
  n=$((n+1)); [ $n -gt 100 ] && fatal "rxe0 port/GID not ready"; sleep 0.1
done
# -------- persistent memory. Label-less NVDIMMs show up as raw namespaces (no DAX) until
#          ndctl rewrites them as fsdax or devdax.
waitdev() { n=0; until [ $1 "$2" ]; do n=$((n+1)); [ $n -gt 100 ] && fatal "no $2"; sleep 0.1; done; }
ndmode() {
  $C ndctl create-namespace -f -e "$1" -m "$2" >/tmp/ndctl.log 2>&1 ||
    { cat /tmp/ndctl.log >/dev/console; fatal "ndctl create-namespace -m $2 $1"; }
}
fsdax_mount() {   # $1 = the fsdax block device
  waitdev -b $1
  # -b 4096: mkfs picks 1 KiB blocks on small devices, and ext4 DAX needs block size == page size
  $C mkfs.ext4 -q -F -b 4096 $1 >/tmp/mkfs.log 2>&1 ||
    { cat /tmp/mkfs.log >/dev/console; fatal "mkfs.ext4 $1"; }
  mkdir -p /host/mnt/pmem
  mount -t ext4 -o dax $1 /host/mnt/pmem || { dmesg | tail -n 5 >/dev/console; fatal "mount -o dax $1"; }
  grep -q ' /host/mnt/pmem .*dax' /proc/mounts || fatal "/mnt/pmem is not DAX"
  chmod 1777 /host/mnt/pmem
  PMEM_DEV=$1; PMEM_MOUNT=/mnt/pmem
}
fsdax() {   # $1 = region number
  ndmode namespace$1.0 fsdax
  fsdax_mount /dev/pmem$1
}
devdax() {
  ndmode namespace$1.0 devdax
  waitdev -c /dev/dax$1.0
  chmod 666 /dev/dax$1.0
  PMEM_DEVDAX=/dev/dax$1.0
}
# CXL: the memdev, its endpoint port and its nvdimm (cxl_pmem) show up asynchronously; then a
# pmem region over the one memdev (the root decoder is the fixed memory window), whose
# libnvdimm region is label-backed (the LSA): namespaces are carved by size
cxl_ns() {   # $1 = mode, $2 = size in MiB or empty (the rest); prints the new namespace's JSON
  $C ndctl create-namespace -r "$PMEM_ND_REGION" -m "$1" ${2:+-s ${2}M} >/tmp/ns.json 2>/tmp/ndctl.log ||
    { cat /tmp/ndctl.log /tmp/ns.json >/dev/console; fatal "ndctl create-namespace -r $PMEM_ND_REGION -m $1${2:+ -s ${2}M}"; }
  cat /tmp/ns.json >/dev/console
}
json_str() { grep -o "\"$1\":\"[^\"]*\"" "$2" | head -n1 | cut -d'"' -f4; }
cxl_setup() {
  n=0
  until [ -e /sys/bus/cxl/devices/mem0 ] && [ -e /sys/bus/cxl/devices/decoder0.0 ] &&
        ls /sys/bus/cxl/devices | grep -q '^endpoint' && ls /sys/bus/cxl/devices | grep -q '^pmem'; do
    n=$((n+1))
    [ $n -gt 300 ] && { ls /sys/bus/cxl/devices >/dev/console; fatal "CXL memdev / endpoint / nvdimm not ready"; }
    sleep 0.1
  done
  $C cxl create-region -t pmem -d decoder0.0 -w 1 -m mem0 >/tmp/region.json 2>/tmp/cxl.log ||
    { cat /tmp/cxl.log /tmp/region.json >/dev/console; dmesg | grep -i cxl | tail -n 8 >/dev/console; fatal "cxl create-region -t pmem -d decoder0.0 -m mem0"; }
  cat /tmp/region.json >/dev/console
  PMEM_CXL_REGION=$(json_str region /tmp/region.json)
  [ -n "$PMEM_CXL_REGION" ] || { cat /tmp/cxl.log >/dev/console; dmesg | grep -i cxl | tail -n 8 >/dev/console; fatal "cxl create-region printed no region"; }
  n=0
  # its libnvdimm region sits on the nvdimm bridge's bus (no NFIT here: the only nd region)
  until PMEM_ND_REGION=$(ls /sys/bus/nd/devices 2>/dev/null | grep '^region' | head -n1) &&
        [ -n "$PMEM_ND_REGION" ]; do
    n=$((n+1)); [ $n -gt 100 ] && fatal "no libnvdimm region for $PMEM_CXL_REGION"; sleep 0.1
  done
  case $PMEM_MODE in devdax|fsdax+devdax)
    cxl_ns devdax "$([ "$PMEM_MODE" = devdax ] || echo "$DEVDAX_MB")"
    PMEM_DEVDAX=/dev/$(json_str chardev /tmp/ns.json)
    waitdev -c "$PMEM_DEVDAX"
    chmod 666 "$PMEM_DEVDAX" ;;
  esac
  case $PMEM_MODE in fsdax|fsdax+devdax)
    cxl_ns fsdax ""
    fsdax_mount /dev/$(json_str blockdev /tmp/ns.json) ;;
  esac
  [ "$PMEM_MODE" = devdax ] && PMEM_DEV=$PMEM_DEVDAX
}
PMEM_DEV=; PMEM_MOUNT=; PMEM_DEVDAX=; PMEM_CXL_REGION=; PMEM_ND_REGION=
[ "$CXL" = 1 ] && cxl_setup
if [ "$NVDIMMS" != 0 ]; then
  i=0; while [ $i -lt "$NVDIMMS" ]; do waitdev -e /dev/pmem$i; i=$((i+1)); done
  case $PMEM_MODE in
  fsdax) fsdax 0 ;;
  devdax) devdax 0; PMEM_DEV=$PMEM_DEVDAX ;;
  fsdax+devdax) fsdax 0; devdax 1 ;;
  raw) PMEM_DEV=/dev/pmem0 ;;
  esac
fi
cat > /host/run/vmjob/vmenv <<EOF
export IN_VM=1 RXE_DEV=rxe0 RXE_NETDEV=dummy0 RXE_IP=$RXE_IP PMEM_MODE=$PMEM_MODE PMEM_DEV=$PMEM_DEV PMEM_MOUNT=$PMEM_MOUNT PMEM_DEVDAX=$PMEM_DEVDAX
export PMEM_CXL=$CXL PMEM_CXL_REGION=$PMEM_CXL_REGION PMEM_ND_REGION=$PMEM_ND_REGION
EOF
log "setup done at $(cut -d' ' -f1 /proc/uptime)s"
: > /host/run/vmjob/ready
# -------- the job: stdout/stderr -> two virtio-serial ports (not ttys: no CRLF, isatty() false)
OUT=; ERR=
for p in /sys/class/virtio-ports/*; do
  case $(cat $p/name 2>/dev/null) in vm.stdout) OUT=/dev/${p##*/};; vm.stderr) ERR=/dev/${p##*/};; esac
done
[ -c "$OUT" ] && [ -c "$ERR" ] || fatal "virtio-serial output ports missing"
chroot /host /bin/bash /run/vmjob/job.sh </dev/null >"$OUT" 2>"$ERR"
rc=$?
log "job exited with $rc at $(cut -d' ' -f1 /proc/uptime)s"
sync
i=0; while [ $i -lt "$NRW" ]; do eval d=\$RW_$i; umount "/host$d" 2>/dev/null; i=$((i+1)); done
i=0; while [ $i -lt "$NRO" ]; do eval d=\$RO_$i; umount "/host$d" 2>/dev/null; i=$((i+1)); done
echo $rc > /host/run/vmjob/rc
sync
poweroff -f
sleep 10
INIT_EOF

# Build (or reuse) the initramfs: static busybox + the few modules needed to reach the 9p shares.
build_initrd() {
  local sum root mods="virtio_pci virtio_console 9pnet_virtio 9p" order=() seen=" "
  local dep="$KDIR/lib/modules/$KV/modules.dep" builtin="$KDIR/lib/modules/$KV/modules.builtin"
  sum=$( { echo "$GUEST_INIT"; echo "$KDIR $KV"; cat "$BUSYBOX"; } | md5sum | cut -c1-12)
  INITRD=$KDIR/initrd-$sum.gz
  [ -f "$INITRD" ] && { touch "$INITRD"; return 0; }
  addmod() {   # dependency order (deps first), skipping built-ins
    local name=$1 path d
    case "$seen" in *" $name "*) return;; esac
    seen="$seen$name "
    path=$(grep -E "(^|/)${name}\.ko:" "$dep" | head -n1 | cut -d: -f1)
    if [ -z "$path" ]; then
      grep -qE "(^|/)${name}\.ko$" "$builtin" && return
      die "module $name not found in $KV"
    fi
    for d in $(grep -E "^${path}:" "$dep" | cut -d: -f2-); do addmod "$(basename "$d" .ko)"; done
    order+=("$name")
  }
  for m in $mods; do addmod "$m"; done
  # initramfs of other versions of this script: drop them once unused for a day
  find "$KDIR" -maxdepth 1 -name 'initrd-*.gz' -mmin +1440 -delete 2>/dev/null
  root=$(mktemp -d) || die "mktemp failed"
  mkdir -p "$root"/{bin,sbin,proc,sys,dev,host,lib/modules,bootmods,tmp}
  cp "$BUSYBOX" "$root/bin/busybox"
  ln -s ../bin/busybox "$root/sbin/modprobe"   # the kernel's request_module() calls it
  printf '%s\n' "$GUEST_INIT" > "$root/init"; chmod 755 "$root/init"
  for m in "${order[@]}"; do
    cp "$KDIR/lib/modules/$KV/$(grep -E "(^|/)${m}\.ko:" "$dep" | head -n1 | cut -d: -f1)" "$root/bootmods/$m.ko"
  done
  printf '%s\n' "${order[@]}" > "$root/bootmods/order"
  (cd "$root" && find . | "$BUSYBOX" cpio -o -H newc 2>/dev/null | gzip -1 > "$INITRD.tmp.$$") &&
    mv "$INITRD.tmp.$$" "$INITRD" || { rm -rf "$root"; die "initramfs build failed"; }
  rm -rf "$root"
}

# Cache preparation is serialised between concurrent runs (bounded wait).
exec 9>"$VM_CACHE/.lock"
flock -w "$((VM_FETCH_TIMEOUT * 3))" 9 || die "cache $VM_CACHE stays locked by another run"
prepare_kernel
build_initrd
prune_kernels
flock -u 9; exec 9>&-
if [ $PREPARE_ONLY = 1 ]; then say "ready: $KV ($KDIR)"; exit 0; fi

# ================================================================ per-run dir
JOB=$(mktemp -d "${TMPDIR:-/tmp}/pmrep-vm.XXXXXX") || die "mktemp failed"
QPID=; CATS=(); WATCH=
cleanup() {
  [ -n "$WATCH" ] && kill "$WATCH" 2>/dev/null
  if [ -n "$QPID" ]; then kill "$QPID" 2>/dev/null; wait "$QPID" 2>/dev/null; fi
  for p in "${CATS[@]}"; do kill "$p" 2>/dev/null; done
  if [ "${VM_KEEP:-0}" = 1 ]; then say "kept $JOB"; else rm -rf "$JOB"; fi
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM HUP

shq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# mount_point DIR: with VM_ROOT, create DIR's mount point in it (the guest's root is read-only;
# the guest's tmpfs dirs are writable there)
mount_point() {
  [ -n "$VM_ROOT" ] || return 0
  case $1 in /tmp|/tmp/*|/run|/run/*|/var/tmp|/var/tmp/*|/mnt|/mnt/*) return 0 ;; esac
  mkdir -p "$VM_ROOT$1" || die "cannot create the mount point $1 in $VM_ROOT"
}
RXE_IP=10.11.12.1
RW=(); RO=()
{
  echo "PMEM_MODE=$VM_PMEM_MODE NVDIMMS=$NVDIMMS RXE_IP=$RXE_IP CXL=$VM_CXL DEVDAX_MB=$VM_DEVDAX_SIZE"
  echo "MODPROBE=$(shq "${VM_MODPROBE:-}")"
  for kind in RO RW; do
    i=0
    list=VM_${kind}_DIRS
    IFS=: read -r -a dirs <<< "${!list}"
    for d in "${dirs[@]}"; do
      [ -n "$d" ] || continue
      d=$(cd "$d" 2>/dev/null && pwd -P) || die "$list: no such directory: $d"
      case $d in *,*) die "$list: commas are not supported in paths: $d";; esac
      mount_point "$d"
      echo "${kind}_$i=$(shq "$d")"
      if [ $kind = RW ]; then RW[$i]=$d; else RO[$i]=$d; fi
      i=$((i+1))
    done
    echo "N$kind=$i"
  done
} > "$JOB/config" || die "cannot write $JOB/config"

# job.sh: the caller's exported environment, the guest's variables, the cwd, the command.
{
  echo "#!/bin/bash"   # run by the host's /bin/bash inside the guest
  for v in $(compgen -e); do
    case $v in PWD|OLDPWD|SHLVL|_|TERM|BASHOPTS|SHELLOPTS|UID|EUID|PPID|BASH_*) continue ;; esac
    declare -p "$v" 2>/dev/null
  done
  echo "export VM_KERNEL=$VM_KERNEL"
  echo ". /run/vmjob/vmenv"
  echo 'if [ -n "${TMPDIR:-}" ] && [ ! -d "$TMPDIR" ]; then mkdir -p "$TMPDIR" 2>/dev/null || export TMPDIR=/tmp; fi'
  echo "cd $(shq "$PWD") || { echo '$prog: the working directory is missing in the guest: tmpfs /tmp /run /var/tmp /mnt hide host paths not shared by VM_RW_DIRS${VM_ROOT:+ (VM_ROOT: only VM_RW_DIRS and VM_RO_DIRS are host paths)}' >&2; exit 125; }"
  printf 'exec'; for a in "$@"; do printf ' %s' "$(shq "$a")"; done; echo
} > "$JOB/job.sh"

# Guest output arrives through fifos. If our stdout goes away (e.g. `| head`), keep draining
# into /dev/null: a fifo without a reader makes QEMU spin on EPIPE and the guest stall.
drain() { cat 2>/dev/null || cat >/dev/null; }
mkfifo "$JOB/out" "$JOB/err" || die "mkfifo failed"
drain < "$JOB/out" & CATS+=($!)
drain < "$JOB/err" >&2 & CATS+=($!)
if [ "${VM_VERBOSE:-0}" = 1 ]; then
  mkfifo "$JOB/console"; drain < "$JOB/console" >&2 & CATS+=($!)
  SERIAL="file:$JOB/console"
else
  SERIAL="file:$JOB/console.log"
fi

MEMOPT=$VM_MEM
PMEMOPTS=()
if [ "$NVDIMMS" -gt 0 ]; then
  PMEM_MB=0
  for ((n = 0; n < NVDIMMS; n++)); do PMEM_MB=$((PMEM_MB + NVDIMM_MB[n])); done
  MEMOPT="$VM_MEM,slots=$NVDIMMS,maxmem=$((VM_MEM + PMEM_MB))M"
  for ((n = 0; n < NVDIMMS; n++)); do
    truncate -s "${NVDIMM_MB[n]}M" "$JOB/nvdimm$n.img"   # sparse; share=on: guest stores reach the file
    PMEMOPTS+=(-object "memory-backend-file,id=pmem$n,share=on,mem-path=$JOB/nvdimm$n.img,size=${NVDIMM_MB[n]}M"
               -device "nvdimm,id=nvdimm$n,memdev=pmem$n")
  done
fi
MACHINE=pc,nvdimm=on
if [ "$VM_CXL" = 1 ]; then
  # QEMU 7.2's cxl-type3 has memdev= (persistent capacity; later releases call it
  # persistent-memdev=) and an LSA for the namespace labels. QEMU decodes the device's memory
  # in software: every guest access to it goes through its I/O (MMIO) path, whatever the
  # accelerator. Functional testing only.
  # Two root ports, one of them empty: below a host bridge with a single root port Linux (6.1,
  # 6.12) sets up a pass-through decoder and never programs the bridge's HDM decoder, which
  # QEMU 7.2 needs to route an access: with one root port the region and its namespaces are
  # made, but the memory reads zeros and drops every write, silently (seen: mkfs.ext4 "worked",
  # and mount found no file system).
  MACHINE=q35,cxl=on
  truncate -s "${VM_CXL_SIZE}M" "$JOB/cxl0.img"
  truncate -s 1M "$JOB/cxl0-lsa.img"
  # shellcheck disable=SC2054  # (commas are QEMU option syntax)
  PMEMOPTS+=(-object "memory-backend-file,id=cxlmem0,share=on,mem-path=$JOB/cxl0.img,size=${VM_CXL_SIZE}M"
             -object "memory-backend-file,id=cxllsa0,share=on,mem-path=$JOB/cxl0-lsa.img,size=1M"
             -device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1
             -device cxl-rp,port=0,bus=cxl.1,id=cxlrp0,chassis=0,slot=2
             -device cxl-rp,port=1,bus=cxl.1,id=cxlrp1,chassis=0,slot=3
             -device cxl-type3,bus=cxlrp0,memdev=cxlmem0,lsa=cxllsa0,id=cxlpmem0
             -M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G)
fi
RWOPTS=()
for ((n = 0; n < ${#RO[@]}; n++)); do
  RWOPTS+=(-virtfs "local,path=${RO[$n]},mount_tag=ro$n,security_model=none,readonly=on,multidevs=remap")
done
for ((n = 0; n < ${#RW[@]}; n++)); do
  RWOPTS+=(-virtfs "local,path=${RW[$n]},mount_tag=rw$n,security_model=none,multidevs=remap")
done

# shellcheck disable=SC2054  # (commas are QEMU option syntax)
QEMU=(qemu-system-x86_64
  -machine "$MACHINE" -accel tcg -cpu "$VM_CPU" -smp "$VM_SMP" -m "$MEMOPT"
  -nodefaults -no-user-config -display none -no-reboot -nic none
  -kernel "$KERNEL" -initrd "$INITRD"
  -append "console=ttyS0 panic=-1 quiet ${VM_APPEND:-}"
  -serial "$SERIAL"
  -device virtio-serial-pci,max_ports=4
  -chardev "file,id=out,path=$JOB/out" -device virtserialport,chardev=out,name=vm.stdout,nr=1
  -chardev "file,id=err,path=$JOB/err" -device virtserialport,chardev=err,name=vm.stderr,nr=2
  -virtfs "local,path=${VM_ROOT:-/},mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
  -virtfs "local,path=$KDIR/lib/modules,mount_tag=mods,security_model=none,readonly=on"
  -virtfs "local,path=$JOB,mount_tag=job,security_model=none"
  "${RWOPTS[@]}" "${PMEMOPTS[@]}")

timeout -k 10 "$VM_TIMEOUT" "${QEMU[@]}" </dev/null >"$JOB/qemu.log" 2>&1 &
QPID=$!
# boot watchdog: a guest that is not set up in time is a rig failure, not a test timeout
if [ "$VM_BOOT_TIMEOUT" -lt "$VM_TIMEOUT" ]; then
  # (short sleeps, no stdio: nothing of it may outlive us holding our caller's pipes open)
  ( n=$((VM_BOOT_TIMEOUT * 4))
    while [ $n -gt 0 ]; do
      [ -e "$JOB/ready" ] || [ -e "$JOB/rc" ] && exit 0
      kill -0 "$QPID" 2>/dev/null || exit 0
      sleep 0.25; n=$((n - 1))
    done
    : > "$JOB/boot-timeout"; kill "$QPID" 2>/dev/null ) </dev/null >/dev/null 2>&1 &
  WATCH=$!
fi
wait "$QPID"; qrc=$?
QPID=
[ -n "$WATCH" ] && { kill "$WATCH" 2>/dev/null; wait "$WATCH" 2>/dev/null; WATCH=; }
# unblock any reader still waiting for a writer (QEMU died before opening the fifo)
for f in "$JOB/out" "$JOB/err" "$JOB/console"; do
  [ -p "$f" ] && { exec 8<>"$f"; exec 8>&-; }
done
for p in "${CATS[@]}"; do wait "$p" 2>/dev/null; done
CATS=()

if [ -e "$JOB/boot-timeout" ]; then
  say "the guest was not set up within ${VM_BOOT_TIMEOUT}s (VM_BOOT_TIMEOUT)"
elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
  say "timed out after ${VM_TIMEOUT}s (VM_TIMEOUT); guest console tail:"
  [ "${VM_VERBOSE:-0}" = 1 ] || tail -n 30 "$JOB/console.log" >&2 2>/dev/null
  exit 124
fi
rc=$(cat "$JOB/rc" 2>/dev/null)
case $rc in ''|*[!0-9]*) ;; *) exit "$rc" ;; esac
if [ ! -e "$JOB/ready" ] && [ ! -e "$JOB/boot-timeout" ]; then
  # the guest died before it was set up (seen: an int3 Oops in the 6.12
  # kernel's early boot under TCG): nothing of the command ran, and a
  # caller may start the VM again (exit 123, never a test's result)
  say "the guest did not boot (qemu exit $qrc): nothing of the command ran; console tail:"
  [ "${VM_VERBOSE:-0}" = 1 ] || tail -n 15 "$JOB/console.log" >&2 2>/dev/null
  exit 123
fi
say "VM failed (qemu exit $qrc) before the command finished"
[ -s "$JOB/fatal" ] && say "guest: $(cat "$JOB/fatal")"
cat "$JOB/qemu.log" >&2
[ "${VM_VERBOSE:-0}" = 1 ] || tail -n 40 "$JOB/console.log" >&2 2>/dev/null
exit 125
