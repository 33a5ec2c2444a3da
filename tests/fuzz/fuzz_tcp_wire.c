/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_tcp_wire.c -- libFuzzer target of the tcp frame codec: any byte
 * stream is cut into frames the way the progress thread cuts it; every
 * header the decoder accepts must re-encode to exactly the same bytes
 * (one encoding per frame) and have its type's size and a payload
 * within the data limit; "need more" only for a real prefix of a header.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tcp/tcp_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	while (off < size) {
		struct tcp_frame f;
		int r = tcp_wire_decode(data + off, size - off, &f);
		if (r == TCP_WIRE_NEED_MORE) {
			/* only a real prefix of a known header may say so */
			size_t need = tcp_wire_hdr_size(data[off]);
			if (need == 0 || size - off >= need)
				abort();
			break;
		}
		if (r == TCP_WIRE_MALFORMED)
			break;
		if ((size_t)r != tcp_wire_hdr_size(f.type))
			abort();
		uint8_t again[TCP_WIRE_HDR_MAX];
		size_t n = tcp_wire_encode(&f, again);
		if (n != (size_t)r || memcmp(again, data + off, n) != 0)
			abort();
		if (f.payload_len > TCP_WIRE_DATA_MAX)
			abort();
		off += (size_t)r;
		/* skip the payload the way the receiver does */
		if (f.payload_len > size - off)
			break;
		off += f.payload_len;
	}
	return 0;
}
