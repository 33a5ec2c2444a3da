/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sweep_tls.c -- the tls sweep: the raw level inside TLS 1.3 against plain
 * tcp, both connections open at once, alternated round by round.
 */
#include <stdio.h>

#include "bench_int.h"

/* ------------------------------------------------------ tls: its cost */

/*
 * TLS 1.3 (external PSK, AES-128-GCM or ChaCha20-Poly1305, psk_dhe_ke)
 * against plain tcp, the same raw level (write + flush PERSISTENT), both
 * connections open at once to one server, alternated in every round
 * (the order swapped each round), ratios taken within a round, the
 * median [min-max] of the rounds reported: 64 B at qd 1 (p50 latency,
 * TLS / plain: > 1 is TLS's cost) and 4 KiB at qd 16 (MiB/s, TLS /
 * plain: < 1 is its cost). No timed assertion: figures only.
 */
void
sweep_tls(void)
{
	struct raw r[2];
	Raw_tls = false;
	int ok = raw_open(&r[0], 4096) == 0;
	Raw_tls = true;
	ok = ok && raw_open(&r[1], 4096) == 0;
	Raw_tls = false;
	if (!ok) {
		fprintf(Tab, "\ntls: not measured (a connection failed)\n");
		Failures++;
		if (r[0].conn)
			raw_close(&r[0]);
		char reply[64];
		(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
		return;
	}
	double lat[2][16], bw[2][16], lr[16], br[16];
	int n = O.rounds < 16 ? O.rounds : 16;
	for (int k = 0; k < n; k++) {
		for (int j = 0; j < 2; j++) {
			int i = (j + k) % 2;	/* alternate who goes first */
			struct bench_result res;
			bench_samples_reset(&S_round);
			if (raw_run(&r[i], 64, 1, O.ms, &S_round)) {
				Failures++;
				goto out;
			}
			bench_summarize(&S_round, &res);
			lat[i][k] = res.p50_us;
			bench_samples_reset(&S_round);
			if (raw_run(&r[i], 4096, 16, O.ms, &S_round)) {
				Failures++;
				goto out;
			}
			bench_summarize(&S_round, &res);
			bw[i][k] = res.mib_per_s;
		}
		lr[k] = lat[1][k] / lat[0][k];
		br[k] = bw[1][k] / bw[0][k];
	}
	double lp = median(lat[0], n), lt = median(lat[1], n);
	double bp = median(bw[0], n), bt = median(bw[1], n);
	double lmed = median(lr, n), bmed = median(br, n);
	fprintf(Tab, "\ntls: TLS 1.3 (external PSK) against plain tcp, raw level write+flush, %d round(s) x %d ms, alternated\n",
			n, O.ms);
	fprintf(Tab, "  64 B qd 1   p50: plain %8.1f us  tls %8.1f us   ratio tls/plain %.3f [%.3f-%.3f]\n",
			lp, lt, lmed, lr[0], lr[n - 1]);
	fprintf(Tab, "  4 KiB qd 16 bw:  plain %8.1f MiB/s tls %8.1f MiB/s  ratio tls/plain %.3f [%.3f-%.3f]\n",
			bp, bt, bmed, br[0], br[n - 1]);
	if (Json)
		fprintf(Json, "{\"run\":\"%s\",\"sweep\":\"tls\",\"lat64_plain_us\":%.2f,\"lat64_tls_us\":%.2f,\"lat64_ratio\":%.4f,\"bw4k_plain_mibs\":%.1f,\"bw4k_tls_mibs\":%.1f,\"bw4k_ratio\":%.4f}\n",
				Run_id, lp, lt, lmed, bp, bt, bmed);
out:
	raw_close(&r[0]);
	raw_close(&r[1]);
	char reply[64];
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
}
