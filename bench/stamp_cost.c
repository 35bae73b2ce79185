/* SPDX-License-Identifier: Apache-2.0 */
/* Cost of "take a timestamp and record it" (what a measured loop does)
 * against a bare clock read, interleaved in one run so machine noise hits
 * both alike. Prints one JSON object; bench/bench_foundation.py reads it. */
#include <stdio.h>
#include <stdlib.h>

#include "rtb.h"

#define N 200000
#define ROUNDS 21

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    static rtb_series s;
    if (rtb_series_init(&s, "bench", N) != RTB_OK)
        return 1;
    double bare[ROUNDS], rec[ROUNDS];
    volatile rtb_time sink = 0;
    for (int r = 0; r < ROUNDS; r++) {
        rtb_time t0 = rtb_ts_now();
        for (int i = 0; i < N; i++)
            sink = rtb_ts_now();
        rtb_time t1 = rtb_ts_now();
        s.n = 0;
        for (int i = 0; i < N; i++)
            rtb_series_push(&s, rtb_ts_now());
        rtb_time t2 = rtb_ts_now();
        bare[r] = (double)(t1 - t0) / N;
        rec[r] = (double)(t2 - t1) / N;
    }
    (void)sink;
    qsort(bare, ROUNDS, sizeof bare[0], cmp);
    qsort(rec, ROUNDS, sizeof rec[0], cmp);
    printf("{\"bare_read_ns\":%.2f,\"stamp_and_record_ns\":%.2f,\"ratio\":%.3f}\n",
           bare[ROUNDS / 2], rec[ROUNDS / 2], rec[ROUNDS / 2] / bare[ROUNDS / 2]);
    rtb_series_free(&s);
    return 0;
}
