/* SPDX-License-Identifier: Apache-2.0 */
/* Cost of "take a timestamp and record it" (what a measured loop does)
 * against a bare clock read, and of the stamp of a measured window
 * (rtb_stamp_now) against a bare read of the counter itself (rdtsc,
 * cntvct_el0), interleaved in one run so machine noise hits both alike.
 * Prints one JSON object; bench/bench_foundation.py reads it. */
#include <stdio.h>
#include <stdlib.h>

#include "rtb.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define BARE "rdtsc"
static inline uint64_t bare_counter(void) { return __rdtsc(); }
#elif defined(__aarch64__)
#define BARE "cntvct_el0"
static inline uint64_t bare_counter(void)
{
    uint64_t v;
    __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
}
#else
#define BARE "rtb_ts_now"
static inline uint64_t bare_counter(void) { return (uint64_t)rtb_ts_now(); }
#endif

#define N 200000
#define ROUNDS 21
/* The window stamp against the bare counter: many short batches, the three
 * reads side by side in each, so that a preemption (this machine is shared)
 * spoils a batch, not a figure; the ratios are taken batch by batch. */
#define BATCH 1000
#define BATCHES 2001

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
    static rtb_timing_info ti;
    rtb_timing_init(&ti);
    rtb_stamp_init(&ti);
    double bare[ROUNDS], rec[ROUNDS];
    volatile rtb_time sink = 0;
    volatile uint64_t usink = 0;
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
    static double counter[BATCHES], window[BATCHES], ts[BATCHES], wr[BATCHES], tr[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        rtb_time w0 = rtb_ts_now();
        for (int i = 0; i < BATCH; i++)
            usink = bare_counter();
        rtb_time w1 = rtb_ts_now();
        for (int i = 0; i < BATCH; i++)
            sink = rtb_stamp_now();
        rtb_time w2 = rtb_ts_now();
        for (int i = 0; i < BATCH; i++)
            sink = rtb_ts_now();
        rtb_time w3 = rtb_ts_now();
        counter[b] = (double)(w1 - w0) / BATCH;
        window[b] = (double)(w2 - w1) / BATCH;
        ts[b] = (double)(w3 - w2) / BATCH;
        wr[b] = window[b] / counter[b];
        tr[b] = ts[b] / counter[b];
    }
    (void)sink;
    (void)usink;
    qsort(bare, ROUNDS, sizeof bare[0], cmp);
    qsort(rec, ROUNDS, sizeof rec[0], cmp);
    qsort(counter, BATCHES, sizeof counter[0], cmp);
    qsort(window, BATCHES, sizeof window[0], cmp);
    qsort(ts, BATCHES, sizeof ts[0], cmp);
    qsort(wr, BATCHES, sizeof wr[0], cmp);
    qsort(tr, BATCHES, sizeof tr[0], cmp);
    double c = counter[BATCHES / 2], w = window[BATCHES / 2];
    printf("{\"bare_read_ns\":%.2f,\"stamp_and_record_ns\":%.2f,\"ratio\":%.3f,"
           "\"bare_counter\":\"%s\",\"bare_counter_ns\":%.2f,\"window_stamp\":\"%s\","
           "\"window_stamp_ns\":%.2f,\"window_ratio\":%.3f,\"ts_now_ns\":%.2f,"
           "\"ts_now_ratio\":%.3f}\n",
           bare[ROUNDS / 2], rec[ROUNDS / 2], rec[ROUNDS / 2] / bare[ROUNDS / 2], BARE, c,
           rtb_stamp_use_cycles ? ti.cycles_source : ti.clock_source, w, wr[BATCHES / 2], ts[BATCHES / 2],
           tr[BATCHES / 2]);
    rtb_series_free(&s);
    return 0;
}
