/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * position.h -- a copy's position as pmrep_position_decide reads it, from
 * a decoded header (file) or an ACCEPT (target): the one place that turns
 * either into a struct pmrep_replica_position.
 */
#ifndef PMREP_REPL_POSITION_H
#define PMREP_REPL_POSITION_H

#include <pmrep/repl.h>

#include "repl/wire/msg.h"
#include "replica_hdr.h"

/* *pos from a header decoded from its whole block at `base` */
void repl_position_from_hdr(struct pmrep_replica_position *pos,
		const struct replica_hdr *h, const uint8_t *base);

/* *pos from an ACCEPT's header fields (fresh: the target said so) */
void repl_position_from_accept(struct pmrep_replica_position *pos,
		const struct repl_accept *acc);

/* one line naming the position, for the logs ("gen 2 owner .. seq e:n,
 * run .., closed") */
void repl_position_str(const struct pmrep_replica_position *pos, char *buf,
		size_t len);

#endif /* PMREP_REPL_POSITION_H */
