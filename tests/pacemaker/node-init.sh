#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# node-init.sh -- PID 1 of one cluster node (cluster.sh starts it as
#   nsenter --net=/run/netns/NS unshare --mount --uts --ipc --pid --fork
#       --mount-proc --propagation private node-init.sh NODE WORK
# at each boot). It gives the node its own /run, /dev/shm and state
# directories (WORK/nodes/NODE/...), the resource agents (WORK/ocf over
# /usr/lib/ocf/resource.d, the system's heartbeat and pacemaker agents bound
# into it) and the rig's shared directory (WORK/shared at /run/rig: the
# writers' histories outlive the node), then starts corosync and pacemakerd
# and reaps. Killing this process (from the host) is the node's power-off:
# the kernel ends every process of its PID namespace.
set -u
NODE=$1 WORK=$2
D=$WORK/nodes/$NODE
log() { echo "[$(date -u +%T.%N | cut -c1-12)] $NODE init: $*" >>/run/node/init.log; }

hostname "$NODE"
# the shared directory first: /dev/shm (where WORK usually is) is covered below
mount -t tmpfs -o mode=0755 tmpfs /run || exit 1
mkdir -p /run/rig /run/node /run/crm /run/pmrep /run/resource-agents /run/lock
mount --bind "$WORK/shared" /run/rig || exit 1
mount --bind "$D" /run/node || exit 1
mount --bind "$D/etc-corosync" /etc/corosync || exit 1
mount --bind "$D/var-lib-corosync" /var/lib/corosync || exit 1
mount --bind "$D/var-lib-pacemaker" /var/lib/pacemaker || exit 1
mount --bind "$D/var-log-corosync" /var/log/corosync || exit 1
mount --bind "$D/var-log-pacemaker" /var/log/pacemaker || exit 1
mount --bind "$D/pmrep" /var/lib/pmrep || exit 1
# the agents: the system's own, and the rig's providers (pmrep, pmreprig)
for p in heartbeat pacemaker; do
	mount --bind "/usr/lib/ocf/resource.d/$p" "$WORK/ocf/$p" || exit 1
done
mount --rbind "$WORK/ocf" /usr/lib/ocf/resource.d || exit 1
mount -t tmpfs -o mode=1777 tmpfs /dev/shm || exit 1
chown hacluster:haclient /run/crm

log "booting (host pid $(cut -d' ' -f4 /proc/self/stat 2>/dev/null))"
export PCMK_logfile=/var/log/pacemaker/pacemaker.log PCMK_logfacility=none
corosync -f >>/var/log/corosync/stdout.log 2>&1 &
cpid=$!
for _ in $(seq 100); do
	corosync-cfgtool -s >/dev/null 2>&1 && break
	kill -0 $cpid 2>/dev/null || { log "corosync exited"; exit 1; }
	sleep 0.1
done
corosync-cfgtool -s >/dev/null 2>&1 || { log "corosync not up in 10 s"; exit 1; }
log "corosync up"
pacemakerd >>/var/log/pacemaker/stdout.log 2>&1 &
log "pacemakerd started"
# reap everything (orphans are reparented here); bash's wait returns when
# no child is left, which does not happen while corosync runs
while :; do
	wait
	kill -0 $cpid 2>/dev/null || { log "corosync gone"; }
	sleep 1
done
