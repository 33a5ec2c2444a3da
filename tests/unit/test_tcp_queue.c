/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tcp_queue.c -- the tcp provider's receive ring (the send queue is
 * indexed the same way): FIFO order, the configured depth as the limit
 * (PMREP_E_AGAIN beyond it), and slots that survive the wrap of the
 * free-running u32 counters for sizes that are not a power of two.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "transport/tcp/tcp.h"

static void
ring_keeps_fifo_order_and_depth_across_the_counter_wrap(void **state)
{
	(void) state;
	static uint8_t buf[4096];
	struct pmrep_mr_local mr;
	memset(&mr, 0, sizeof(mr));
	mr.ptr = buf;
	mr.size = sizeof(buf);
	mr.rkey = 77;
	const uint32_t sizes[] = { 1, 3, 10, 16, 1000 };
	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct tcp_rq rq;
		assert_int_equal(tcp_rq_init(&rq, sizes[s]), 0);
		/* start just before the wrap of both counters */
		rq.head = rq.tail = UINT32_MAX - 2 * sizes[s] - 3;
		uintptr_t next_put = 0, next_take = 0;
		for (int round = 0; round < 8; round++) {
			uint32_t n = 0;
			while (tcp_rq_put(&rq, &mr, next_put % 100, 1,
					(void *)(next_put + 1)) == 0) {
				next_put++;
				n++;
			}
			/* exactly the configured depth fits */
			assert_int_equal(n, round == 0 ? sizes[s] : (sizes[s] + 1) / 2);
			assert_int_equal(tcp_rq_put(&rq, &mr, 0, 1, NULL),
					PMREP_E_AGAIN);
			/* take half (at least one), in order */
			uint32_t take = round == 7 ? sizes[s] : (sizes[s] + 1) / 2;
			for (uint32_t i = 0; i < take; i++) {
				struct tcp_recv r;
				assert_true(tcp_rq_take(&rq, &r));
				assert_ptr_equal(r.ctx, (void *)(next_take + 1));
				assert_ptr_equal(r.ptr, buf + next_take % 100);
				assert_int_equal(r.key, 77);
				next_take++;
			}
		}
		struct tcp_recv r;
		assert_false(tcp_rq_take(&rq, &r));
		/* the counters did wrap */
		assert_true(rq.head < 1000000);
		tcp_rq_fini(&rq);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ring_keeps_fifo_order_and_depth_across_the_counter_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
