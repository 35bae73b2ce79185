/* SPDX-License-Identifier: Apache-2.0 */
/* CAL-TIMER: the timestamp sources themselves. Cost of one read (the
 * distance between back-to-back reads), monotonicity over many reads, and
 * whether two CPUs agree: a stamp taken on one CPU and seen on another must
 * never be later than the observer's own next stamp (causality bounds the
 * skew between their counters). */
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "reads", .help = "back-to-back reads per source", .def = {200000}, .ndef = 1,
     .min = 100, .max = 100000000},
    {.name = "rounds", .help = "cross-CPU ping-pong rounds", .def = {20000}, .ndef = 1,
     .min = 10, .max = 10000000},
};

/* Back-to-back reads of one source, then their differences: n - 1 of
 * them, read in blocks of rtb_stamp_block(n) reads (all n in one block
 * where the port sets no block: the same reads and deltas as ever). A
 * board's RAM holds one block: its deltas go into the streamed series,
 * drained between blocks. The step from one block's last read to the next
 * block's first spans that drain, so it is no read cost and is not a
 * sample; it still counts as a backward step if the clock went back.
 * Returns the number of backward steps. */
static size_t read_deltas(rtb_ctx *ctx, rtb_series *s, rtb_time *buf, size_t blk, size_t n,
                          bool cycles)
{
    size_t backwards = 0, left = n - 1; /* deltas still to take */
    rtb_time last = 0;
    for (bool first = true; left; first = false) {
        size_t m = left < blk - 1 ? left + 1 : blk; /* reads of this block */
        if (cycles)
            for (size_t i = 0; i < m; i++)
                buf[i] = (rtb_time)rtb_cycles_now();
        else
            for (size_t i = 0; i < m; i++)
                buf[i] = rtb_ts_now();
        if (!first && buf[0] < last)
            backwards++;
        for (size_t i = 0; i + 1 < m; i++) {
            rtb_time d = buf[i + 1] - buf[i];
            if (d < 0)
                backwards++;
            rtb_series_push(s, cycles ? rtb_cycles_to_ns(ctx->timing, (uint64_t)d) : d);
            /* Between blocks, nothing is read: a full buffer goes out at
             * once, whatever the block's size against the buffer's (once a
             * block, 126 of a board's second block of 127 were dropped). */
            rtb_series_drain(s);
        }
        last = buf[m - 1];
        left -= m - 1;
    }
    return backwards;
}

typedef struct pingpong {
    rtb_ctx *ctx;
    atomic_int turn;   /* 0: A stamps, 1: B observes and stamps, 2: A observes */
    _Atomic rtb_time stamp;
    size_t rounds;
    rtb_series *fwd, *back;
    atomic_bool abort;
} pingpong;

/* Spins until `turn` reaches `want`; false if the case must give up. */
static bool await(pingpong *p, int want)
{
    unsigned spins = 0;
    while (atomic_load_explicit(&p->turn, memory_order_acquire) != want) {
        if (++spins % 4096 == 0 &&
            (atomic_load(&p->abort) || rtb_clock_now() > p->ctx->deadline - 1000000000)) {
            atomic_store(&p->abort, true);
            return false;
        }
    }
    return true;
}

static void observer(void *arg)
{
    pingpong *p = arg;
    for (size_t r = 0; r < p->rounds; r++) {
        if (!await(p, 1))
            return;
        rtb_time now = rtb_ts_now();
        rtb_series_push(p->fwd, now - atomic_load(&p->stamp));
        atomic_store(&p->stamp, rtb_ts_now());
        atomic_store_explicit(&p->turn, 2, memory_order_release);
    }
}

static rtb_result cross_cpu(rtb_ctx *ctx, size_t rounds)
{
    /* One CPU to run on: nothing to compare, the rest of the case stands. */
    if (!rtb_need_cpus(ctx, "cross_cpu", 2))
        return RTB_PASSED;
    rtb_series fwd, back;
    if (rtb_series_init(&fwd, "xcpu_fwd", rounds) != RTB_OK ||
        rtb_series_init(&back, "xcpu_back", rounds) != RTB_OK) {
        rtb_emit_check_error(ctx, "cross_cpu", "no memory");
        return RTB_ERROR;
    }
    /* Signed: a hand-off plus the skew between the two CPUs' counters. */
    rtb_series_set_kind(&fwd, RTB_KIND_DURATION);
    rtb_series_set_kind(&back, RTB_KIND_DURATION);
    pingpong p = {.ctx = ctx, .rounds = rounds, .fwd = &fwd, .back = &back};
    int other = rtb_cpu_other(ctx->port, ctx->opt->cpu);
    rtb_thread_attr attr = rtb_attr(ctx, "cal-observer", 0);
    attr.cpu = other;
    rtb_thread th;
    if (rtb_thread_create(&th, &attr, observer, &p) != RTB_OK) {
        rtb_emit_check_error(ctx, "cross_cpu", "cannot start the observer on CPU %d", other);
        rtb_series_free(&fwd);
        rtb_series_free(&back);
        return RTB_ERROR;
    }
    for (size_t r = 0; r < rounds; r++) {
        atomic_store(&p.stamp, rtb_ts_now());
        atomic_store_explicit(&p.turn, 1, memory_order_release);
        if (!await(&p, 2))
            break;
        rtb_time now = rtb_ts_now();
        rtb_series_push(&back, now - atomic_load(&p.stamp));
        atomic_store_explicit(&p.turn, 0, memory_order_relaxed);
    }
    atomic_store(&p.abort, true);
    rtb_join_all(ctx, &th, 1);
    rtb_result r = RTB_PASSED;
    if (fwd.hist.n == 0 || back.hist.n == 0) {
        rtb_emit_check_error(ctx, "cross_cpu", "the observer on CPU %d never answered", other);
        r = RTB_ERROR;
    } else {
        /* A negative one-way time means the clocks disagree by at least that much. */
        bool ok = fwd.hist.min >= 0 && back.hist.min >= 0;
        rtb_emit_check(ctx, "cross_cpu", ok,
                       "CPU %d -> %d min %lld ns, CPU %d -> %d min %lld ns (negative: skew)",
                       ctx->opt->cpu, other, (long long)fwd.hist.min, other, ctx->opt->cpu,
                       (long long)back.hist.min);
        if (!ok)
            r = RTB_FAILED;
    }
    rtb_emit_series(ctx, &fwd);
    rtb_emit_series(ctx, &back);
    rtb_series_free(&fwd);
    rtb_series_free(&back);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    size_t n = (size_t)rtb_param(ctx, "reads");
    size_t rounds = (size_t)rtb_param(ctx, "rounds");
    size_t blk = rtb_stamp_block(n);
    blk = blk < 2 ? 2 : blk; /* a delta needs two reads */
    rtb_time *buf = rtb_mem_alloc(blk * sizeof *buf);
    rtb_series s;
    if (!buf || rtb_series_init_streamed(&s, ctx, "clock_read", n) != RTB_OK) {
        rtb_mem_free(buf);
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu reads", (unsigned long long)n);
        return RTB_ERROR;
    }
    memset(buf, 0, blk * sizeof *buf); /* fault it in now, not between two reads */
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    rtb_result r = RTB_PASSED;
    size_t back = read_deltas(ctx, &s, buf, blk, n, false);
    rtb_emit_check(ctx, "monotonic", back == 0, "%s: %llu backward steps in %llu reads",
                   ctx->timing->clock_source, (unsigned long long)back, (unsigned long long)n);
    if (back)
        r = RTB_FAILED;
    rtb_emit_series(ctx, &s);
    rtb_series_free(&s);
    if (ctx->timing->cycles_available &&
        rtb_series_init_streamed(&s, ctx, "cycles_read", n) == RTB_OK) {
        back = read_deltas(ctx, &s, buf, blk, n, true);
        rtb_emit_check(ctx, "cycles_monotonic", back == 0, "%s: %llu backward steps in %llu reads",
                       ctx->timing->cycles_source, (unsigned long long)back,
                       (unsigned long long)n);
        if (back)
            r = RTB_FAILED;
        rtb_emit_series(ctx, &s);
        rtb_series_free(&s);
    }
    rtb_mem_free(buf);
    rtb_result x = cross_cpu(ctx, rounds);
    return x != RTB_PASSED ? x : r;
}

const rtb_case rtb_case_cal_timer = {
    .id = "CAL-TIMER",
    .title = "Timestamp source: resolution, read cost, monotonicity, cross-CPU agreement",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
