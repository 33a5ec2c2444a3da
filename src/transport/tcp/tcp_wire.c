/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_wire.c -- the one encoder and the one decoder of tcp provider frames
 * (layout in tcp_wire.h). Every field the decoder accepts is range checked
 * here, so the progress thread only ever sees well-formed headers.
 */
#include <string.h>

#include "common/wire.h"
#include "tcp_wire.h"

size_t
tcp_wire_hdr_size(uint8_t type)
{
	switch (type) {
	case TCP_WIRE_HELLO:
		return 24;
	case TCP_WIRE_ACCEPT:
	case TCP_WIRE_REJECT:
	case TCP_WIRE_SEND:
	case TCP_WIRE_ACK:
	case TCP_WIRE_READ_RESP:
	case TCP_WIRE_NAK:
		return 16;
	case TCP_WIRE_WRITE:
	case TCP_WIRE_READ:
	case TCP_WIRE_ATOMIC_WRITE:
		return 32;
	case TCP_WIRE_FLUSH:
		return 40;
	case TCP_WIRE_DISCONNECT:
		return 8;
	default:
		return 0;
	}
}

int
tcp_wire_nak_status_ok(uint32_t status)
{
	switch (status) {
	case TCP_WIRE_NAK_REM_INV_REQ:
	case TCP_WIRE_NAK_REM_ACCESS:
	case TCP_WIRE_NAK_REM_OP:
	case TCP_WIRE_NAK_RNR_RETRY:
		return 1;
	default:
		return 0;
	}
}

/* the largest payload a frame of `type` may carry */
static uint32_t
payload_max(uint8_t type)
{
	switch (type) {
	case TCP_WIRE_HELLO:
		return TCP_WIRE_HELLO_PDATA_MAX;
	case TCP_WIRE_ACCEPT:
		return TCP_WIRE_ACCEPT_PDATA_MAX;
	case TCP_WIRE_WRITE:
	case TCP_WIRE_SEND:
	case TCP_WIRE_READ_RESP:
		return TCP_WIRE_DATA_MAX;
	default:
		return 0;
	}
}

static int
fields_ok(const struct tcp_frame *f)
{
	if (f->payload_len > payload_max(f->type))
		return 0;
	if (f->flags & ~TCP_WIRE_F_IMM)
		return 0;
	if ((f->flags & TCP_WIRE_F_IMM) && f->type != TCP_WIRE_WRITE &&
			f->type != TCP_WIRE_SEND)
		return 0;
	switch (f->type) {
	case TCP_WIRE_HELLO:
		return f->magic == TCP_WIRE_MAGIC && f->version != 0 &&
			f->rnr_ms <= TCP_WIRE_RNR_MS_MAX;
	case TCP_WIRE_ACCEPT:
		return f->version != 0 && f->rnr_ms <= TCP_WIRE_RNR_MS_MAX;
	case TCP_WIRE_REJECT:
		return f->status >= TCP_WIRE_REJ_APP &&
			f->status <= TCP_WIRE_REJ_VERSION;
	case TCP_WIRE_READ:
		return f->len <= TCP_WIRE_DATA_MAX;
	case TCP_WIRE_FLUSH:
		return f->flush_type <= 1;
	case TCP_WIRE_NAK:
		return tcp_wire_nak_status_ok(f->status);
	default:
		return 1;
	}
}

int
tcp_wire_decode(const uint8_t *buf, size_t avail, struct tcp_frame *f)
{
	if (avail < 1)
		return TCP_WIRE_NEED_MORE;
	size_t size = tcp_wire_hdr_size(buf[0]);
	if (size == 0)
		return TCP_WIRE_MALFORMED;	/* decided on the first byte */
	if (avail < size)
		return TCP_WIRE_NEED_MORE;

	memset(f, 0, sizeof(*f));
	f->type = buf[0];
	f->flags = buf[1];
	if (pmrep_get_le16(buf + 2) != 0)
		return TCP_WIRE_MALFORMED;
	f->payload_len = pmrep_get_le32(buf + 4);

	const uint8_t *p = buf + TCP_WIRE_COMMON_SIZE;
	uint32_t reserved = 0;
	switch (f->type) {
	case TCP_WIRE_HELLO:
		f->magic = pmrep_get_le32(p);
		f->version = pmrep_get_le16(p + 4);
		reserved = pmrep_get_le16(p + 6) | pmrep_get_le32(p + 12);
		f->rnr_ms = pmrep_get_le32(p + 8);
		break;
	case TCP_WIRE_ACCEPT:
		f->version = pmrep_get_le16(p);
		reserved = pmrep_get_le16(p + 2);
		f->rnr_ms = pmrep_get_le32(p + 4);
		break;
	case TCP_WIRE_REJECT:
		f->status = pmrep_get_le32(p);
		reserved = pmrep_get_le32(p + 4);
		break;
	case TCP_WIRE_WRITE:
		f->seq = pmrep_get_le32(p);
		f->rkey = pmrep_get_le32(p + 4);
		f->raddr = pmrep_get_le64(p + 8);
		f->imm = pmrep_get_le32(p + 16);
		reserved = pmrep_get_le32(p + 20);
		if (!(f->flags & TCP_WIRE_F_IMM) && f->imm != 0)
			return TCP_WIRE_MALFORMED;
		break;
	case TCP_WIRE_READ:
		f->seq = pmrep_get_le32(p);
		f->rkey = pmrep_get_le32(p + 4);
		f->raddr = pmrep_get_le64(p + 8);
		f->len = pmrep_get_le64(p + 16);
		break;
	case TCP_WIRE_ATOMIC_WRITE:
		f->seq = pmrep_get_le32(p);
		f->rkey = pmrep_get_le32(p + 4);
		f->raddr = pmrep_get_le64(p + 8);
		memcpy(f->value, p + 16, 8);
		break;
	case TCP_WIRE_FLUSH:
		f->seq = pmrep_get_le32(p);
		f->rkey = pmrep_get_le32(p + 4);
		f->raddr = pmrep_get_le64(p + 8);
		f->len = pmrep_get_le64(p + 16);
		f->flush_type = pmrep_get_le32(p + 24);
		reserved = pmrep_get_le32(p + 28);
		break;
	case TCP_WIRE_SEND:
		f->seq = pmrep_get_le32(p);
		f->imm = pmrep_get_le32(p + 4);
		if (!(f->flags & TCP_WIRE_F_IMM) && f->imm != 0)
			return TCP_WIRE_MALFORMED;
		break;
	case TCP_WIRE_ACK:
	case TCP_WIRE_READ_RESP:
		f->seq = pmrep_get_le32(p);
		reserved = pmrep_get_le32(p + 4);
		break;
	case TCP_WIRE_NAK:
		f->seq = pmrep_get_le32(p);
		f->status = pmrep_get_le32(p + 4);
		break;
	case TCP_WIRE_DISCONNECT:
		break;
	}
	if (reserved != 0 || !fields_ok(f))
		return TCP_WIRE_MALFORMED;
	return (int)size;
}

size_t
tcp_wire_encode(const struct tcp_frame *f, uint8_t *out)
{
	size_t size = tcp_wire_hdr_size(f->type);
	if (size == 0 || !fields_ok(f))
		return 0;
	if (!(f->flags & TCP_WIRE_F_IMM) && f->imm != 0 &&
			(f->type == TCP_WIRE_WRITE || f->type == TCP_WIRE_SEND))
		return 0;

	memset(out, 0, size);
	out[0] = f->type;
	out[1] = f->flags;
	pmrep_put_le32(out + 4, f->payload_len);

	uint8_t *p = out + TCP_WIRE_COMMON_SIZE;
	switch (f->type) {
	case TCP_WIRE_HELLO:
		pmrep_put_le32(p, f->magic);
		pmrep_put_le16(p + 4, f->version);
		pmrep_put_le32(p + 8, f->rnr_ms);
		break;
	case TCP_WIRE_ACCEPT:
		pmrep_put_le16(p, f->version);
		pmrep_put_le32(p + 4, f->rnr_ms);
		break;
	case TCP_WIRE_REJECT:
		pmrep_put_le32(p, f->status);
		break;
	case TCP_WIRE_WRITE:
		pmrep_put_le32(p, f->seq);
		pmrep_put_le32(p + 4, f->rkey);
		pmrep_put_le64(p + 8, f->raddr);
		pmrep_put_le32(p + 16, f->imm);
		break;
	case TCP_WIRE_READ:
	case TCP_WIRE_FLUSH:
		pmrep_put_le32(p, f->seq);
		pmrep_put_le32(p + 4, f->rkey);
		pmrep_put_le64(p + 8, f->raddr);
		pmrep_put_le64(p + 16, f->len);
		if (f->type == TCP_WIRE_FLUSH)
			pmrep_put_le32(p + 24, f->flush_type);
		break;
	case TCP_WIRE_ATOMIC_WRITE:
		pmrep_put_le32(p, f->seq);
		pmrep_put_le32(p + 4, f->rkey);
		pmrep_put_le64(p + 8, f->raddr);
		memcpy(p + 16, f->value, 8);
		break;
	case TCP_WIRE_SEND:
		pmrep_put_le32(p, f->seq);
		pmrep_put_le32(p + 4, f->imm);
		break;
	case TCP_WIRE_ACK:
	case TCP_WIRE_READ_RESP:
		pmrep_put_le32(p, f->seq);
		break;
	case TCP_WIRE_NAK:
		pmrep_put_le32(p, f->seq);
		pmrep_put_le32(p + 4, f->status);
		break;
	case TCP_WIRE_DISCONNECT:
		break;
	}
	return size;
}
