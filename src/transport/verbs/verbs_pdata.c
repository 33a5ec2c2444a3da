/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_pdata.c -- the one encoder and decoder of pmrep's framing of
 * rdma_cm private data, and the explicit-reject marker.
 *
 * Why a framing: on InfiniBand and RoCE the receiver of a REQ / REP gets
 * the whole private-data area (56 bytes on connect, 196 on accept) zero
 * padded, so "nothing", "3 bytes" and "3 bytes then zeros" look the same.
 * pmrep must report the true length (T06) and still carry the full 56 /
 * 196 bytes. The frame uses the one bit of the CM messages that rdma_cm
 * passes through untouched and never applies to the QP, flow_control:
 *
 *   flow_control = 1: exactly `max` bytes follow, unframed;
 *   flow_control = 0: byte 0 is the length L (0 .. max - 1), bytes
 *                     1 .. L the data. No private data at all (NULL, or a
 *                     zero-filled area) decodes as L = 0: "none".
 *
 * Explicit reject (REJ private data, up to 148 bytes on IB): the 8-byte
 * marker below. A REJ without it (the kernel's own when nothing listens)
 * lets the initiator retry; with it the rejection is final.
 */
#include <string.h>

#include "verbs_internal.h"

const uint8_t verbs_reject_marker[VERBS_REJECT_MARKER_SIZE] = {
	'p', 'm', 'r', 'e', 'p', 'R', 'J', 1 /* version */
};

void
verbs_pdata_encode(const struct pmrep_conn_private_data *pd, unsigned max,
		struct verbs_pdata *out)
{
	memset(out, 0, sizeof(*out));
	if (pd == NULL || pd->len == 0 || pd->ptr == NULL)
		return;			/* nothing sent: decodes as "none" */
	if (pd->len >= max) {
		memcpy(out->buf, pd->ptr, max);
		out->len = (uint8_t)max;
		out->flow_control = 1;
		return;
	}
	out->buf[0] = pd->len;
	memcpy(out->buf + 1, pd->ptr, pd->len);
	out->len = (uint8_t)(pd->len + 1);
}

int
verbs_pdata_decode(const void *raw, size_t raw_len, uint8_t flow_control,
		unsigned max, uint8_t *out, uint8_t *out_len)
{
	const uint8_t *p = raw;

	*out_len = 0;
	if (flow_control) {
		if (raw == NULL || raw_len < max) {
			PMREP_LOG_ERR("private data: %zu bytes, a full frame needs %u",
					raw_len, max);
			return PMREP_E_MALFORMED;
		}
		memcpy(out, p, max);
		*out_len = (uint8_t)max;
		return 0;
	}
	if (raw == NULL || raw_len == 0)
		return 0;
	uint8_t len = p[0];
	if (len >= max || (size_t)len + 1 > raw_len) {
		PMREP_LOG_ERR("private data: length byte %u does not fit (%zu bytes, max %u)",
				len, raw_len, max);
		return PMREP_E_MALFORMED;
	}
	memcpy(out, p + 1, len);
	*out_len = len;
	return 0;
}

bool
verbs_reject_is_explicit(const void *raw, size_t raw_len)
{
	return raw != NULL && raw_len >= VERBS_REJECT_MARKER_SIZE &&
		memcmp(raw, verbs_reject_marker, VERBS_REJECT_MARKER_SIZE) == 0;
}
