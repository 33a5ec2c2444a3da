/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_wr.c -- bookkeeping of posted work requests: what a completion's
 * wr_id stands for (op_context and pmrep op). The verbs opcode of an error
 * completion is undefined and a flush or a fallback atomic write is a
 * READ / WRITE on the wire, so the op cannot come from the completion.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "verbs_internal.h"

/* the process's generation counter (T25): every incarnation its own */
static atomic_uint Next_gen = 0;

uint32_t
verbs_wr_next_gen(void)
{
	for (;;) {
		uint32_t g = (atomic_fetch_add(&Next_gen, 1) + 1) &
			VERBS_WR_GEN_MASK;
		if (g != 0)
			return g;
	}
}

static uint64_t
wr_id_make(uint32_t gen, uint32_t slot)
{
	return ((uint64_t)gen << VERBS_WR_GEN_SHIFT) | slot;
}

int
verbs_sq_ring_init(struct verbs_sq_ring *ring, uint32_t size)
{
	ring->slots = calloc(size, sizeof(*ring->slots));
	if (ring->slots == NULL) {
		PMREP_LOG_ERR("out of memory for a send queue of %u", size);
		return PMREP_E_NOMEM;
	}
	int ret = pthread_mutex_init(&ring->lock, NULL);
	if (ret) {
		free(ring->slots);
		ring->slots = NULL;
		return PMREP_ERR_PROVIDER(ret, "pthread_mutex_init");
	}
	ring->size = size;
	ring->head = 0;
	ring->count = 0;
	ring->gen = verbs_wr_next_gen();
	return 0;
}

void
verbs_sq_ring_fini(struct verbs_sq_ring *ring)
{
	if (ring->slots == NULL)
		return;
	(void) pthread_mutex_destroy(&ring->lock);
	free(ring->slots);
	ring->slots = NULL;
}

int
verbs_sq_ring_get(struct verbs_sq_ring *ring, enum pmrep_op op,
		const void *op_context, uint64_t *wr_id)
{
	pthread_mutex_lock(&ring->lock);
	if (ring->count == ring->size) {
		pthread_mutex_unlock(&ring->lock);
		PMREP_LOG_ERR("send queue full (%u requests outstanding)",
				ring->size);
		return PMREP_E_AGAIN;
	}
	uint32_t i = ring->head;
	ring->slots[i].op_context = op_context;
	ring->slots[i].op = (uint8_t)op;
	ring->slots[i].piece = false;
	ring->slots[i].piece_err = 0;
	ring->head = (i + 1) % ring->size;
	ring->count++;
	*wr_id = wr_id_make(ring->gen, i);
	pthread_mutex_unlock(&ring->lock);
	return 0;
}

void
verbs_sq_ring_unget(struct verbs_sq_ring *ring, uint32_t n)
{
	pthread_mutex_lock(&ring->lock);
	if (n > ring->count)
		n = ring->count;	/* (never: only slots just taken) */
	ring->head = (ring->head + ring->size - n) % ring->size;
	ring->count -= n;
	pthread_mutex_unlock(&ring->lock);
}

bool
verbs_sq_ring_complete(struct verbs_sq_ring *ring, uint64_t wr_id,
		const void **op_context, enum pmrep_op *op)
{
	uint32_t i = VERBS_WR_SLOT(wr_id);
	bool ok = false;

	pthread_mutex_lock(&ring->lock);
	if (i < ring->size && ring->count > 0 &&
			VERBS_WR_GEN(wr_id) == ring->gen) {
		uint32_t tail = (ring->head + ring->size - ring->count) %
			ring->size;
		/* slots tail..i are done (RC completes the SQ in order) */
		uint32_t n = (i + ring->size - tail) % ring->size + 1;
		if (n <= ring->count) {
			ring->count -= n;
			*op_context = ring->slots[i].op_context;
			*op = (enum pmrep_op)ring->slots[i].op;
			ok = true;
		}
	}
	pthread_mutex_unlock(&ring->lock);
	return ok;
}

void
verbs_sq_ring_set_piece(struct verbs_sq_ring *ring, uint64_t wr_id)
{
	uint32_t i = VERBS_WR_SLOT(wr_id);
	pthread_mutex_lock(&ring->lock);
	if (i < ring->size)
		ring->slots[i].piece = true;
	pthread_mutex_unlock(&ring->lock);
}

int
verbs_sq_ring_complete_wc(struct verbs_sq_ring *ring, uint64_t wr_id,
		int wc_status, const void **op_context, enum pmrep_op *op,
		int *status)
{
	uint32_t i = VERBS_WR_SLOT(wr_id);
	bool ok = false, report = false;

	pthread_mutex_lock(&ring->lock);
	if (VERBS_WR_GEN(wr_id) != ring->gen) {
		/* an earlier incarnation's: frees nothing (T25) */
		pthread_mutex_unlock(&ring->lock);
		return VERBS_WR_STALE;
	}
	if (i < ring->size && ring->count > 0) {
		uint32_t tail = (ring->head + ring->size - ring->count) %
			ring->size;
		/* slots tail..i are done (RC completes the SQ in order) */
		uint32_t n = (i + ring->size - tail) % ring->size + 1;
		if (n <= ring->count) {
			ring->count -= n;
			ok = true;
		}
	}
	if (ok && ring->slots[i].piece) {
		/* a split request's earlier piece: its error is the
		 * request's, reported by the last piece (still outstanding:
		 * a split request's pieces are posted all or none) */
		if (wc_status != 0) {
			for (uint32_t k = 1; k <= ring->count; k++) {
				struct verbs_slot *l =
					&ring->slots[(i + k) % ring->size];
				if (l->piece)
					continue;
				if (l->piece_err == 0)
					l->piece_err = (uint8_t)wc_status;
				break;
			}
		}
	} else if (ok) {
		report = true;
		*op_context = ring->slots[i].op_context;
		*op = (enum pmrep_op)ring->slots[i].op;
		*status = wc_status != 0 && ring->slots[i].piece_err ?
			ring->slots[i].piece_err : wc_status;
	}
	pthread_mutex_unlock(&ring->lock);
	return !ok ? VERBS_WR_UNKNOWN : report ? VERBS_WR_DONE : VERBS_WR_PIECE;
}

void
verbs_sq_ring_reset(struct verbs_sq_ring *ring)
{
	pthread_mutex_lock(&ring->lock);
	ring->head = 0;
	ring->count = 0;
	ring->gen = verbs_wr_next_gen();
	pthread_mutex_unlock(&ring->lock);
}

bool
verbs_sq_ring_current(struct verbs_sq_ring *ring, uint64_t wr_id)
{
	pthread_mutex_lock(&ring->lock);
	bool cur = VERBS_WR_GEN(wr_id) == ring->gen;
	pthread_mutex_unlock(&ring->lock);
	return cur;
}

uint32_t
verbs_sq_ring_outstanding(struct verbs_sq_ring *ring)
{
	pthread_mutex_lock(&ring->lock);
	uint32_t n = ring->count;
	pthread_mutex_unlock(&ring->lock);
	return n;
}

/* -------------------------------------------------------- receive table */

static void
rq_table_link_all(struct verbs_rq_table *t)
{
	for (uint32_t i = 0; i < t->size; i++)
		t->slots[i].next_free = i + 1;	/* size = end of list */
	t->free_head = 0;
	t->used = 0;
}

int
verbs_rq_table_init(struct verbs_rq_table *t, uint32_t size)
{
	t->slots = calloc(size, sizeof(*t->slots));
	if (t->slots == NULL) {
		PMREP_LOG_ERR("out of memory for a receive queue of %u", size);
		return PMREP_E_NOMEM;
	}
	int ret = pthread_mutex_init(&t->lock, NULL);
	if (ret) {
		free(t->slots);
		t->slots = NULL;
		return PMREP_ERR_PROVIDER(ret, "pthread_mutex_init");
	}
	t->size = size;
	t->gen = verbs_wr_next_gen();
	rq_table_link_all(t);
	return 0;
}

void
verbs_rq_table_fini(struct verbs_rq_table *t)
{
	if (t->slots == NULL)
		return;
	(void) pthread_mutex_destroy(&t->lock);
	free(t->slots);
	t->slots = NULL;
}

int
verbs_rq_table_get(struct verbs_rq_table *t, const void *op_context,
		uint64_t *wr_id)
{
	pthread_mutex_lock(&t->lock);
	if (t->free_head >= t->size) {
		pthread_mutex_unlock(&t->lock);
		PMREP_LOG_ERR("receive queue full (%u receives posted)",
				t->size);
		return PMREP_E_AGAIN;
	}
	uint32_t i = t->free_head;
	t->free_head = t->slots[i].next_free;
	t->slots[i].op_context = op_context;
	t->slots[i].op = PMREP_OP_RECV;
	t->slots[i].next_free = UINT32_MAX;	/* in use */
	t->used++;
	*wr_id = VERBS_WR_RECV | wr_id_make(t->gen, i);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void
verbs_rq_table_put(struct verbs_rq_table *t, uint64_t wr_id)
{
	uint32_t i = VERBS_WR_SLOT(wr_id);
	pthread_mutex_lock(&t->lock);
	if (i < t->size && t->slots[i].next_free == UINT32_MAX &&
			VERBS_WR_GEN(wr_id) == t->gen) {
		t->slots[i].next_free = t->free_head;
		t->free_head = i;
		t->used--;
	}
	pthread_mutex_unlock(&t->lock);
}

int
verbs_rq_table_complete(struct verbs_rq_table *t, uint64_t wr_id,
		const void **op_context)
{
	uint32_t i = VERBS_WR_SLOT(wr_id);
	int ret = VERBS_WR_UNKNOWN;

	pthread_mutex_lock(&t->lock);
	if (VERBS_WR_GEN(wr_id) != t->gen) {
		ret = VERBS_WR_STALE;	/* frees nothing (T25) */
	} else if (i < t->size && t->slots[i].next_free == UINT32_MAX) {
		*op_context = t->slots[i].op_context;
		t->slots[i].next_free = t->free_head;
		t->free_head = i;
		t->used--;
		ret = VERBS_WR_DONE;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void
verbs_rq_table_reset(struct verbs_rq_table *t)
{
	pthread_mutex_lock(&t->lock);
	rq_table_link_all(t);
	t->gen = verbs_wr_next_gen();
	pthread_mutex_unlock(&t->lock);
}

bool
verbs_rq_table_current(struct verbs_rq_table *t, uint64_t wr_id)
{
	pthread_mutex_lock(&t->lock);
	bool cur = VERBS_WR_GEN(wr_id) == t->gen;
	pthread_mutex_unlock(&t->lock);
	return cur;
}

uint32_t
verbs_rq_table_outstanding(struct verbs_rq_table *t)
{
	pthread_mutex_lock(&t->lock);
	uint32_t n = t->used;
	pthread_mutex_unlock(&t->lock);
	return n;
}

/* ------------------------------------------------------ flush pieces */

unsigned
verbs_flush_split(uint64_t raddr, uint64_t len, struct verbs_flush_piece *out,
		unsigned max)
{
	uint64_t n = (len + VERBS_FLUSH_PIECE_MAX - 1) / VERBS_FLUSH_PIECE_MAX;
	if (n == 0 || n > max)
		return 0;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t off = k * VERBS_FLUSH_PIECE_MAX;
		out[k].raddr = raddr + off;
		out[k].len = len - off < VERBS_FLUSH_PIECE_MAX ? len - off :
			VERBS_FLUSH_PIECE_MAX;
	}
	return (unsigned)n;
}
