/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * query.c -- read-only sessions with a replica target: the initiator's
 * connect + QUERY handshake that pmrep_mirror_recover (recover.c) and
 * pmrep_replica_query share, and pmrep_replica_query itself: HELLO, AUTH
 * with intent QUERY for "any set" (nil set UUID, generation 0, data size
 * 0), the target's ACCEPT (MAC verified), the header it reports, and a
 * disconnect. The target answers a QUERY without writing anything and
 * without touching any other session (docs/PROTOCOL.md "Wire").
 */
#include <stdio.h>
#include <string.h>

#include <pmrep/transport.h>

#include "common/log.h"
#include "repl/media/position.h"
#include "query.h"
#include "repl/media/replica_hdr.h"

int
repl_query_open(struct repl_chan *ch, struct pmrep_peer *peer,
		const char *addr, const char *port, const char *selector,
		const uint8_t *key,
		size_t key_len, const uint8_t uuid[PMREP_UUID_SIZE],
		uint64_t generation, uint64_t data_size, long long deadline,
		int conn_timeout_ms, const char *who, struct pmrep_conn **conn,
		struct repl_accept *acc)
{
	return repl_session_open(ch, peer, addr, port, selector, key, key_len,
			uuid, generation, data_size, REPL_INTENT_QUERY, 0,
			deadline, conn_timeout_ms, who, conn, acc);
}

int
repl_session_open(struct repl_chan *ch, struct pmrep_peer *peer,
		const char *addr, const char *port, const char *selector,
		const uint8_t *key,
		size_t key_len, const uint8_t uuid[PMREP_UUID_SIZE],
		uint64_t generation, uint64_t data_size,
		enum repl_intent intent, uint64_t primary_id, long long deadline,
		int conn_timeout_ms, const char *who, struct pmrep_conn **conn,
		struct repl_accept *acc)
{
	uint8_t nonce_i[REPL_NONCE_SIZE], nonce_t[REPL_NONCE_SIZE];
	char what[64];
	snprintf(what, sizeof(what), "%s: replica", who);
	struct repl_tls tls = { repl_tls_default(), key, key_len, 0, selector };
	int ret = repl_chan_dial(ch, peer, addr, port, deadline,
			conn_timeout_ms, 16, 32, what, &tls,
			conn, nonce_i, nonce_t);
	if (ret)
		return ret;

	/* a query: no primary id (nothing will be claimed) */
	struct repl_msg msg = { .type = REPL_MSG_AUTH, .seq = 1 };
	memcpy(msg.u.auth.uuid, uuid, PMREP_UUID_SIZE);
	msg.u.auth.data_size = data_size;
	msg.u.auth.generation = generation;
	msg.u.auth.primary_id = primary_id;
	msg.u.auth.intent = intent;
	ret = repl_auth_mac(key, key_len, nonce_i, nonce_t, &msg.u.auth,
			msg.u.auth.mac);
	if (ret)
		return ret;
	ret = repl_chan_send(ch, &msg);
	if (ret)
		return ret;
	struct repl_msg reply;
	ret = repl_chan_wait_msg(ch, deadline, &reply);
	if (ret) {
		PMREP_LOG_ERR("%s: replica %s:%s: no answer to our AUTH: %s",
				who, addr, port, pmrep_err_to_str(ret));
		return ret;
	}
	if (reply.type == REPL_MSG_REFUSE) {
		PMREP_LOG_ERR("%s: replica %s:%s refused us: %s%s", who, addr,
				port, repl_status_str(reply.status),
				reply.status == REPL_ST_GENERATION ?
				" (it holds a newer generation than the one asked for)" : "");
		return repl_status_to_err(reply.status);
	}
	if (reply.type != REPL_MSG_ACCEPT) {
		PMREP_LOG_ERR("%s: replica %s:%s: expected ACCEPT, got message type %d",
				who, addr, port, (int)reply.type);
		return PMREP_E_MALFORMED;
	}
	uint8_t mac[REPL_MAC_SIZE];
	ret = repl_accept_mac(key, key_len, nonce_i, nonce_t, &reply.u.accept,
			mac);
	if (ret)
		return ret;
	if (!repl_mac_equal(mac, reply.u.accept.mac)) {
		PMREP_LOG_ERR("%s: replica %s:%s failed to prove it holds the key",
				who, addr, port);
		return PMREP_E_AUTH;
	}
	*acc = reply.u.accept;
	return 0;
}

void
repl_query_info(struct pmrep_replica_info *info, uint64_t data_size,
		const struct repl_accept *acc)
{
	if (info == NULL)
		return;
	memset(info, 0, sizeof(*info));
	memcpy(info->uuid, acc->uuid, PMREP_UUID_SIZE);
	info->data_offset = PMREP_REPLICA_DATA_OFFSET;
	info->data_size = data_size;
	info->generation = acc->generation;
	info->flags = acc->hdr_flags;
	memcpy(info->replica_id, acc->replica_id, PMREP_UUID_SIZE);
	info->owner = acc->owner;
	info->seq = acc->hdr_seq;
	info->last_persist_seq = acc->last_persist_seq;
}

int
pmrep_replica_query(const char *addr, const char *port, const uint8_t *key,
		size_t key_len, int timeout_ms, struct pmrep_replica_info *info)
{
	return pmrep_replica_query_named(addr, port, NULL, key, key_len,
			timeout_ms, info);
}

int
pmrep_replica_query_named(const char *addr, const char *port,
		const char *name, const uint8_t *key, size_t key_len,
		int timeout_ms, struct pmrep_replica_info *info)
{
	return repl_query_named(addr, port, name, key, key_len, timeout_ms,
			info, NULL, NULL);
}

int
pmrep_replica_query_membership(const char *addr, const char *port,
		const char *name, const uint8_t *key, size_t key_len,
		int timeout_ms, struct pmrep_replica_info *info,
		struct pmrep_replica_membership *mb)
{
	if (mb == NULL) {
		PMREP_LOG_ERR("invalid argument: mb is NULL");
		return PMREP_E_INVAL;
	}
	struct pmrep_replica_info tmp;
	return repl_query_named(addr, port, name, key, key_len, timeout_ms,
			info != NULL ? info : &tmp, mb, NULL);
}

int
pmrep_replica_query_position(const char *addr, const char *port,
		const char *name, const uint8_t *key, size_t key_len,
		int timeout_ms, struct pmrep_replica_position *pos,
		struct pmrep_replica_info *info,
		struct pmrep_replica_membership *mb)
{
	if (pos == NULL) {
		PMREP_LOG_ERR("invalid argument: pos is NULL");
		return PMREP_E_INVAL;
	}
	struct pmrep_replica_info tmp;
	return repl_query_named(addr, port, name, key, key_len, timeout_ms,
			info != NULL ? info : &tmp, mb, pos);
}

int
repl_query_named(const char *addr, const char *port, const char *name,
		const uint8_t *key, size_t key_len, int timeout_ms,
		struct pmrep_replica_info *info,
		struct pmrep_replica_membership *mb,
		struct pmrep_replica_position *pos)
{
	if (addr == NULL || port == NULL || key == NULL || info == NULL) {
		PMREP_LOG_ERR("invalid argument: addr, port, key or info is NULL");
		return PMREP_E_INVAL;
	}
	if (name != NULL && name[0] != '\0' &&
			repl_selector_check(name, "replica name") != 0)
		return PMREP_E_INVAL;
	if (addr[0] == '\0') {
		PMREP_LOG_ERR("invalid argument: empty address");
		return PMREP_E_INVAL;
	}
	int ret = repl_key_check(key, key_len);
	if (ret)
		return ret;
	if ((ret = repl_port_check(port, false)) != 0 ||
			(ret = repl_timeout_check(timeout_ms, "pmrep_replica_query")) != 0)
		return ret;

	long long deadline = repl_deadline(timeout_ms);
	struct pmrep_peer *peer = NULL;
	struct pmrep_conn *conn = NULL;
	struct pmrep_mr_remote *rmr = NULL;
	struct repl_chan ch;
	bool chan_ready = false;
	ret = pmrep_peer_open(addr, false, &peer);
	if (ret)
		return ret;
	ret = repl_chan_init(&ch, peer);
	if (ret)
		goto out;
	chan_ready = true;

	/* "any set": nil set UUID, so neither set nor generation is
	 * checked; data size 0: whatever the replica holds */
	static const uint8_t any_set[PMREP_UUID_SIZE];
	struct repl_accept acc;
	ret = repl_query_open(&ch, peer, addr, port, name, key, key_len, any_set, 0,
			0, deadline, timeout_ms, "query", &conn, &acc);
	if (ret)
		goto out;
	/* the data area's size: the registered region the target offers
	 * (its mapping's data area, or a staging buffer as large) */
	ret = pmrep_mr_remote_from_descriptor(acc.mr_desc, PMREP_MR_DESC_SIZE,
			&rmr);
	if (ret) {
		PMREP_LOG_ERR("query: replica %s:%s: its ACCEPT's region descriptor is not valid",
				addr, port);
		goto out;
	}
	size_t size = 0;
	(void) pmrep_mr_remote_get_size(rmr, &size);
	repl_query_info(info, size, &acc);
	if (mb != NULL)
		*mb = (struct pmrep_replica_membership){ .set_size = acc.set_size,
			.quorum = acc.set_quorum };
	if (pos != NULL)
		repl_position_from_accept(pos, &acc);
	PMREP_LOG_INFO("query: replica %s:%s: generation %llu, owner %016llx, header seq %llu, %s",
			addr, port, (unsigned long long)acc.generation,
			(unsigned long long)acc.owner,
			(unsigned long long)acc.hdr_seq,
			acc.hdr_flags & PMREP_REPLICA_F_CONSISTENT ?
			"consistent" : "not consistent");
out:
	(void) pmrep_mr_remote_delete(&rmr);
	repl_session_end(&conn, chan_ready ? &ch : NULL, &peer);
	return ret;
}

void
repl_session_end(struct pmrep_conn **conn, struct repl_chan *ch,
		struct pmrep_peer **peer)
{
	if (*conn) {
		(void) pmrep_conn_disconnect(*conn);
		(void) pmrep_conn_delete(conn);
	}
	if (ch != NULL) {
		repl_chan_detach(ch);
		repl_chan_fini(ch);
	}
	(void) pmrep_peer_delete(peer);
}
