/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_wire.h -- the tcp provider's frame format: the one encoder and the
 * one decoder of every frame that crosses a tcp connection (handshake,
 * requests, responses, control). Pure functions, no I/O, no allocation:
 * also built alone into the fuzz target (tests/fuzz).
 *
 * Every frame is a fixed-size header (common part + per-type fields, all
 * little-endian) followed by `payload_len` payload bytes:
 *
 *   common, 8 bytes:  u8 type | u8 flags | u16 reserved (0) | u32 payload_len
 *
 *   type            fields after the common part                  header  payload
 *   1  HELLO        u32 magic | u16 version | u16 0 | u32 rnr_ms | u32 0   24  pdata <= 56
 *   2  ACCEPT       u16 version | u16 0 | u32 rnr_ms                   16  pdata <= 196
 *   3  REJECT       u32 reason | u32 0                                 16  0
 *   16 WRITE        u32 seq | u32 rkey | u64 raddr | u32 imm | u32 0   32  data
 *   17 READ         u32 seq | u32 rkey | u64 raddr | u64 len           32  0
 *   18 ATOMIC_WRITE u32 seq | u32 rkey | u64 raddr | u8 value[8]       32  0
 *   19 FLUSH        u32 seq | u32 rkey | u64 raddr | u64 len |
 *                   u32 type | u32 0                                   40  0
 *   20 SEND         u32 seq | u32 imm                                  16  data
 *   32 ACK          u32 seq (cumulative) | u32 0                       16  0
 *   33 READ_RESP    u32 seq | u32 0                                    16  data
 *   34 NAK          u32 seq | u32 code (enum tcp_wire_nak_code)        16  0
 *   35 DISCONNECT   -                                                   8  0
 *
 * flags: bit 0 (TCP_WIRE_F_IMM) only on WRITE and SEND; every other bit,
 * and every reserved field, must be 0 (a frame has one encoding).
 * rnr_ms is 0 .. TCP_WIRE_RNR_MS_MAX (a cfg timeout; 0: fail at once).
 * Data payloads are at most TCP_WIRE_DATA_MAX bytes (verbs' 2 GiB message).
 */
#ifndef PMREP_TCP_WIRE_H
#define PMREP_TCP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define TCP_WIRE_MAGIC		0x54524d50u	/* "PMRT" */
/* 2: the same frames as 1; a version 2 side sends a heartbeat (its last
 * ACK again) at least every quarter of the peer's liveness period, so a
 * peer may count its silence as death. HELLO offers it, ACCEPT answers
 * the lower of the two; a version 1 passive side REJECTs(version) a
 * version 2 HELLO and the initiator offers 1 at once. */
#define TCP_WIRE_VERSION	2
#define TCP_WIRE_COMMON_SIZE	8
#define TCP_WIRE_HDR_MAX	40		/* the largest header (FLUSH) */
#define TCP_WIRE_DATA_MAX	(1u << 31)
#define TCP_WIRE_HELLO_PDATA_MAX	56	/* PMREP_PDATA_CONNECT_MAX */
#define TCP_WIRE_ACCEPT_PDATA_MAX	196	/* PMREP_PDATA_ACCEPT_MAX */
/* HELLO / ACCEPT rnr_ms: the sender's cfg timeout (0: no waiting at all),
 * at most INT32_MAX ms, so a deadline on it neither overflows nor wraps */
#define TCP_WIRE_RNR_MS_MAX	0x7fffffffu

#define TCP_WIRE_F_IMM		0x01

enum tcp_wire_type {
	TCP_WIRE_HELLO = 1,
	TCP_WIRE_ACCEPT = 2,
	TCP_WIRE_REJECT = 3,
	TCP_WIRE_WRITE = 16,
	TCP_WIRE_READ = 17,
	TCP_WIRE_ATOMIC_WRITE = 18,
	TCP_WIRE_FLUSH = 19,
	TCP_WIRE_SEND = 20,
	TCP_WIRE_ACK = 32,
	TCP_WIRE_READ_RESP = 33,
	TCP_WIRE_NAK = 34,
	TCP_WIRE_DISCONNECT = 35,
};

/* why a passive side refused a HELLO */
enum tcp_wire_reject {
	TCP_WIRE_REJ_APP = 1,		/* the application rejected: final */
	TCP_WIRE_REJ_MALFORMED = 2,	/* bad HELLO: final */
	TCP_WIRE_REJ_NOT_LISTENING = 3,	/* endpoint shutting down: retry */
	TCP_WIRE_REJ_VERSION = 4,	/* unsupported version: final */
};

/* a decoded header; only the fields of its type are meaningful */
struct tcp_frame {
	uint8_t type;
	uint8_t flags;
	uint32_t payload_len;
	uint32_t seq;
	uint32_t rkey;
	uint64_t raddr;
	uint64_t len;		/* READ, FLUSH */
	uint32_t imm;		/* WRITE, SEND (with TCP_WIRE_F_IMM) */
	uint32_t status;	/* NAK: tcp_wire_nak_code; REJECT: tcp_wire_reject */
	uint32_t flush_type;	/* FLUSH: enum pmrep_flush_type */
	uint8_t value[8];	/* ATOMIC_WRITE */
	uint32_t magic;		/* HELLO */
	uint16_t version;	/* HELLO, ACCEPT */
	uint32_t rnr_ms;	/* HELLO, ACCEPT: sender's receiver-not-ready budget */
};

#define TCP_WIRE_NEED_MORE	0
#define TCP_WIRE_MALFORMED	(-1)

/*
 * tcp_wire_decode -- decode the header at buf[0..avail). Returns the header
 * size (> 0) with *f filled, TCP_WIRE_NEED_MORE when avail is too short to
 * decide, or TCP_WIRE_MALFORMED (unknown type, bits or reserved fields set,
 * a field or payload length out of its range). The payload is not looked at.
 */
int tcp_wire_decode(const uint8_t *buf, size_t avail, struct tcp_frame *f);

/*
 * tcp_wire_encode -- write the header of *f to out (TCP_WIRE_HDR_MAX bytes
 * of room) and return its size; 0 when *f would not decode (a bug in the
 * caller). Exactly the bytes tcp_wire_decode accepts.
 */
size_t tcp_wire_encode(const struct tcp_frame *f, uint8_t *out);

/* tcp_wire_hdr_size -- the header size of `type`, 0 for an unknown type */
size_t tcp_wire_hdr_size(uint8_t type);

/*
 * The codes a NAK carries. The numbers are those of rdma-core's enum
 * ibv_wc_status, which NAKs carried before pmrep had its own completion
 * status: kept, so that the wire is unchanged. The provider maps them to
 * enum pmrep_wc_status (tcp_target.c sending a NAK, tcp_rx.c taking one).
 */
enum tcp_wire_nak_code {
	TCP_WIRE_NAK_REM_INV_REQ = 9,	/* PMREP_WC_REMOTE_INVALID_REQUEST */
	TCP_WIRE_NAK_REM_ACCESS = 10,	/* PMREP_WC_REMOTE_ACCESS_ERROR */
	TCP_WIRE_NAK_REM_OP = 11,	/* PMREP_WC_REMOTE_OPERATION_ERROR */
	TCP_WIRE_NAK_RNR_RETRY = 13,	/* PMREP_WC_RNR_RETRY_EXCEEDED */
};

/* true for a code a NAK may carry (enum tcp_wire_nak_code) */
int tcp_wire_nak_status_ok(uint32_t status);

#endif /* PMREP_TCP_WIRE_H */
