/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * query.h -- the initiator's read-only session with a replica target
 * (AUTH with intent QUERY), shared by pmrep_replica_query (query.c) and
 * pmrep_mirror_recover (recover.c): one connect + QUERY handshake, and
 * the replica info an ACCEPT reports.
 */
#ifndef PMREP_REPL_QUERY_H
#define PMREP_REPL_QUERY_H

#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "repl/wire/chan.h"

/*
 * repl_query_open -- connect to the target at addr:port (its replica
 * `selector`: NULL or "" none, the endpoint's one replica) through `ch`
 * (initialised on `peer`), send AUTH with intent QUERY and primary id 0
 * for set `uuid` (all zero: any set; then the target checks neither set
 * nor generation) at `generation`, data size `data_size` (0: whatever
 * the replica holds), and take the target's answer by `deadline`
 * (repl_deadline); the conn's own timeout is conn_timeout_ms (the
 * caller's configured timeout; -1: REPL_CONN_TIMEOUT_DEFAULT_MS). On success *acc is its ACCEPT, whose MAC was verified
 * (the target proved it holds the key). *conn is set as soon as the
 * connect was issued: the caller disconnects and deletes it on every
 * path (and detaches `ch`). Nothing on the target is written for this.
 * `who` prefixes the log lines ("recover", "query").
 * Errors: those of repl_chan_dial, the REFUSE's status as
 * repl_status_to_err gives it (logged with the reason), PMREP_E_AUTH (the
 * target's MAC is wrong: it does not hold the key), PMREP_E_MALFORMED (no
 * ACCEPT), PMREP_E_TIMEOUT / PMREP_E_CONN_LOST while waiting.
 */
int repl_query_open(struct repl_chan *ch, struct pmrep_peer *peer,
		const char *addr, const char *port, const char *selector,
		const uint8_t *key,
		size_t key_len, const uint8_t uuid[PMREP_UUID_SIZE],
		uint64_t generation, uint64_t data_size, long long deadline,
		int conn_timeout_ms, const char *who, struct pmrep_conn **conn,
		struct repl_accept *acc);

/* the same handshake with any intent: an ATTACH names `primary_id` (a
 * promotion's fence: promote.c) */
int repl_session_open(struct repl_chan *ch, struct pmrep_peer *peer,
		const char *addr, const char *port, const char *selector,
		const uint8_t *key,
		size_t key_len, const uint8_t uuid[PMREP_UUID_SIZE],
		uint64_t generation, uint64_t data_size,
		enum repl_intent intent, uint64_t primary_id, long long deadline,
		int conn_timeout_ms, const char *who, struct pmrep_conn **conn,
		struct repl_accept *acc);

/* the end of a session repl_session_open / repl_query_open began:
 * disconnect and delete *conn (NULL: none), detach and finish `ch`
 * (NULL: not initialised), delete *peer */
void repl_session_end(struct pmrep_conn **conn, struct repl_chan *ch,
		struct pmrep_peer **peer);

/* *info (NULL: nothing) from an ACCEPT's header fields, with `data_size`
 * bytes of data area at PMREP_REPLICA_DATA_OFFSET */
void repl_query_info(struct pmrep_replica_info *info, uint64_t data_size,
		const struct repl_accept *acc);

/* pmrep_replica_query_named, and (NULL: not wanted) *mb the membership
 * the header records, *pos its position */
int repl_query_named(const char *addr, const char *port, const char *name,
		const uint8_t *key, size_t key_len, int timeout_ms,
		struct pmrep_replica_info *info,
		struct pmrep_replica_membership *mb,
		struct pmrep_replica_position *pos);

#endif /* PMREP_REPL_QUERY_H */
