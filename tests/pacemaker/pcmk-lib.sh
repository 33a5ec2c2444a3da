# SPDX-License-Identifier: BSD-3-Clause
# pcmk-lib.sh -- the three-node Pacemaker + Corosync rig of cluster.sh
# (sourced): the namespaces and the two networks, a node's directories,
# its boot and power-off, running a command on a node, the network cuts,
# the cluster's configuration written before the first boot, and what the
# cluster says (crm_resource / crm_mon on a node).
#
# Layout: namespaces pcN1$ID pcN2$ID pcN3$ID (the nodes n1 n2 n3) and
# pcSW$ID (a "switch": two bridges, no uplink). Each node has two veths:
# "coro" on bridge brc, 10.233.0.1N/24 (Corosync), "repl" on bridge brr,
# 10.233.1.1N/24 (replication: pmrep-target on port 7700). No default
# route: nothing leaves the namespaces the rig made.

NODES="n1 n2 n3"
declare -A NS CADDR RADDR NUM
for n in $NODES; do
	NUM[$n]=${n#n}
	NS[$n]=pcN${NUM[$n]}$ID
	CADDR[$n]=10.233.0.1${NUM[$n]}
	RADDR[$n]=10.233.1.1${NUM[$n]}
done
SW=pcSW$ID
RPORT=7700

now() { "$CLOCK"; }
say() { echo "[$(date -u +%T)] $*"; }
fail() { say "FAILED: $*"; exit 1; }
msleep() { sleep "$(printf '%d.%03d' $(( $1 / 1000 )) $(( $1 % 1000 )))"; }

# ---- networks
net_up() {
	ip netns add "$SW" || return 1
	ip -n "$SW" link set lo up
	local br n
	for br in brc brr; do
		ip -n "$SW" link add "$br" type bridge || return 1
		ip -n "$SW" link set "$br" up
	done
	for n in $NODES; do
		ip netns add "${NS[$n]}" || return 1
		ip -n "${NS[$n]}" link set lo up
		ip link add "c${NUM[$n]}" netns "$SW" type veth peer name coro netns "${NS[$n]}" || return 1
		ip link add "r${NUM[$n]}" netns "$SW" type veth peer name repl netns "${NS[$n]}" || return 1
		ip -n "$SW" link set "c${NUM[$n]}" master brc up
		ip -n "$SW" link set "r${NUM[$n]}" master brr up
		ip -n "${NS[$n]}" addr add "${CADDR[$n]}/24" dev coro
		ip -n "${NS[$n]}" addr add "${RADDR[$n]}/24" dev repl
		ip -n "${NS[$n]}" link set coro up
		ip -n "${NS[$n]}" link set repl up
	done
	local i
	for i in $(seq 50); do
		[ "$(for n in $NODES; do ip -n "${NS[$n]}" link show; done | grep -c 'state UP')" -ge 6 ] && return 0
		sleep 0.1
	done
	return 1
}

# part NODE NAME IN OUT: an nft table NAME in NODE's namespace dropping the
# input that IN matches and the output that OUT matches (nft expressions);
# unpart NODE NAME removes it. The links stay up: a partition, not a cable
# pulled.
part() {
	ip netns exec "${NS[$1]}" nft -f - <<-NFT
	table inet $2 {
		chain in { type filter hook input priority 0; $3 drop; }
		chain out { type filter hook output priority 0; $4 drop; }
	}
	NFT
}
unpart() { ip netns exec "${NS[$1]}" nft delete table inet "$2"; }

# ---- nodes
# node_dirs NODE: its persistent directories (WORK/nodes/NODE/...)
node_dirs() {
	local d=$WORK/nodes/$1 x
	for x in etc-corosync var-lib-corosync var-lib-pacemaker/cib var-lib-pacemaker/pengine \
		var-lib-pacemaker/blackbox var-lib-pacemaker/cores var-log-corosync \
		var-log-pacemaker pmrep; do
		mkdir -p "$d/$x"
	done
	chown -R hacluster:haclient "$d/var-lib-pacemaker" "$d/var-log-pacemaker"
	chmod 0750 "$d"/var-lib-pacemaker/*
}

# corosync_conf TOKEN_MS: every node's /etc/corosync/corosync.conf
corosync_conf() {
	local n
	for n in $NODES; do
		{
			cat <<-EOF
			totem {
			    version: 2
			    cluster_name: pmrep-rig
			    transport: knet
			    crypto_cipher: none
			    crypto_hash: none
			    token: $1
			}
			logging {
			    to_logfile: yes
			    logfile: /var/log/corosync/corosync.log
			    to_syslog: no
			    to_stderr: no
			    timestamp: hires
			}
			quorum {
			    provider: corosync_votequorum
			}
			nodelist {
			EOF
			local m
			for m in $NODES; do
				printf '    node {\n        name: %s\n        nodeid: %s\n        ring0_addr: %s\n    }\n' \
					"$m" "${NUM[$m]}" "${CADDR[$m]}"
			done
			echo "}"
		} >"$WORK/nodes/$n/etc-corosync/corosync.conf"
	done
}

# cib_write FILE CONFIGURATION_XML: a node's CIB before its first boot
cib_write() {
	local f=$1 cfg=$2
	cibadmin --empty | sed 's|<configuration>.*||' >"$f.tmp"
	# the empty CIB's header line, then ours
	{ head -1 "$f.tmp"; echo "$cfg"; echo "<status/>"; echo "</cib>"; } >"$f"
	rm -f "$f.tmp"
	chown hacluster:haclient "$f"
	chmod 0600 "$f"
	CIB_file=$f cibadmin --query >/dev/null || return 1
}

# boot NODE: its init (node-init.sh, PID 1 of a new PID namespace) in
# its network namespace; the init's host pid in WORK/nodes/NODE/init.pid
boot() {
	local n=$1 u i p=""
	nsenter --net="/run/netns/${NS[$n]}" unshare --mount --uts --ipc --pid --fork --mount-proc \
		--propagation private "$HERE/node-init.sh" "$n" "$WORK" </dev/null 2>>"$WORK/nodes/$n/unshare.err" &
	u=$!
	echo "$u" >"$WORK/nodes/$n/unshare.pid"
	for i in $(seq 100); do
		p=$(pgrep -P "$u") && break
		sleep 0.05
	done
	[ -n "$p" ] || fail "the init of $n did not start"
	echo "$p" >"$WORK/nodes/$n/init.pid"
}
init_pid() { cat "$WORK/nodes/$1/init.pid"; }
# power_off NODE: kill -9 of its init: the kernel ends every process of
# the node's PID namespace; bounded wait until its namespace holds none
power_off() {
	local n=$1 i
	kill -9 "$(init_pid "$n")" 2>/dev/null
	wait "$(cat "$WORK/nodes/$n/unshare.pid")" 2>/dev/null
	for i in $(seq 100); do
		[ -z "$(ip netns pids "${NS[$n]}")" ] && break
		sleep 0.05
	done
	[ -z "$(ip netns pids "${NS[$n]}")" ] || fail "processes left in $n after its power-off"
	rm -f "$WORK/nodes/$n/init.pid"
}
# on NODE CMD...: CMD in every namespace of the node
on() {
	local n=$1; shift
	nsenter -t "$(init_pid "$n")" -n -m -u -i -p -- "$@"
}
is_up() { [ -f "$WORK/nodes/$1/init.pid" ] && kill -0 "$(init_pid "$1")" 2>/dev/null; }

# ---- what the cluster says (asked on NODE)
# promoted_on NODE: the node where the clone is promoted ("" if none)
promoted_on() {
	on "$1" crm_resource --locate --resource "$CLONE" 2>/dev/null |
		sed -n 's/.*is running on: \([a-z0-9]*\) \(Promoted\|Master\).*/\1/p' | head -1
}
# running_on NODE RSC: the nodes where RSC runs (any role), sorted
running_on() {
	on "$1" crm_resource --locate --resource "$2" 2>/dev/null |
		sed -n 's/.*is running on: \([a-z0-9]*\).*/\1/p' | sort | tr '\n' ' '
}
