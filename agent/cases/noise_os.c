/* SPDX-License-Identifier: Apache-2.0 */
/* NOISE-OS: OS noise seen by a busy-polling thread (oslat's method; what
 * rtla osnoise counts from inside the kernel). A real-time thread per
 * measured CPU reads the timestamp counter in a tight loop for the whole
 * duration; every loop iteration is a sample of `loop` (histogram only:
 * billions of them), and every gap of at least `threshold_ns` is time the
 * CPU was taken from the thread (an interrupt, a softirq, a kernel thread,
 * the hypervisor): a sample of `noise`, with when it began in `noise_at`.
 * The self-test (`blocker_us`) makes noise of a known length: a thread of
 * higher priority on the same CPU that holds it `blocker_count` times.
 *
 * A board's RAM holds RTB_SERIES_BUFFER samples a series
 * (rtb_series_init_streamed), and sending them takes longer than its tick
 * period (1.5 ms for 128 gaps on FreeRTOS under -icount). So there the
 * thread keeps its gaps in a stash of STASH, 8 bytes a gap, and they go
 * into the series once it stops polling. A full stash (or a gap that does
 * not fit 32 bits) makes it stop polling, send and poll on: the pause is
 * not polled time (left out of `polled`, added to the end, said in the
 * check) and no gap spans it, as no gap spans the recording of one. Where
 * the buffer holds the whole series (POSIX) gaps go straight into it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/rtb.h"

/* Iterations timed before the run to find the loop's own cost. */
#define CALIBRATION 255
/* Gaps a board's poller holds before it pauses to send them (2.5 KiB,
 * the calibration's memory before): more than its quick run's (a tick a
 * millisecond for 300 ms). 512 put uC/OS-II's NOISE-OS 1.5 KiB over 64. */
#define STASH 320

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

typedef struct gap32 {
    uint32_t len, at; /* ns; `at` from the stash's base */
} gap32;

static const rtb_param_def params[] = {
    {.name = "duration_ms", .help = "polling time per CPU", .def = {500}, .ndef = 1, .min = 1,
     .max = 86400000},
    {.name = "threshold_ns", .help = "a loop iteration at least this long is noise; 0: 1 us "
     "more than the loop's own median", .def = {0}, .ndef = 1, .min = 0,
     .max = 1000000000},
    {.name = "blocker_us", .help = "self-test: a higher-priority thread on the first CPU holds "
     "it this long (0: off)", .def = {0}, .ndef = 1, .min = 0, .max = 1000000},
    {.name = "blocker_count", .help = "self-test: how often the blocker holds the CPU",
     .def = {5}, .ndef = 1, .min = 1, .max = 1000},
};

typedef struct poller {
    rtb_ctx *ctx;
    int cpu;
    rtb_time end, threshold, noise_ns, polled, paused;
    int pauses;
    rtb_time hold;      /* the blocker's hold on this CPU (0: none) */
    uint64_t long_gaps; /* gaps of at least `hold` already sent */
    rtb_series loop, noise, at;
    rtb_time *scratch; /* CALIBRATION loop times (the stash's memory, when there is one) */
    gap32 *stash;      /* streamed: the gaps while polling */
    size_t nstash;
    rtb_time base;     /* `at` of the stash's first gap */
    bool ready;
} poller;

typedef struct blocker {
    rtb_ctx *ctx;
    rtb_time start, every, hold;
    int count, done;
} blocker;

static int cmp_time(const void *a, const void *b)
{
    rtb_time x = *(const rtb_time *)a, y = *(const rtb_time *)b;
    return (x > y) - (x < y);
}

/* The loop cannot resolve a gap shorter than its own iteration: where a
 * timestamp costs microseconds (an emulated board), a fixed 1 us would call
 * every iteration noise. The same loop, timed CALIBRATION times before the
 * run: 1 us more than its median (an RTOS tick of a few us still shows). */
static rtb_time auto_threshold(poller *p)
{
    rtb_time prev = rtb_ts_now();
    for (int i = 0; i < CALIBRATION; i++) {
        rtb_time now = rtb_ts_now(), d = now - prev;
        rtb_hist_add(&p->loop.hist, d);
        p->scratch[i] = d;
        prev = now;
    }
    rtb_hist_init_log2(&p->loop.hist, p->loop.hist.sub_bits); /* not samples of the run */
    qsort(p->scratch, CALIBRATION, sizeof *p->scratch, cmp_time);
    return p->scratch[CALIBRATION / 2] + 1000;
}

/* Outside polling: one gap into the series; a streamed one sends its
 * full buffer first (the blocker's long gaps counted as they go). */
static void push_gap(poller *p, rtb_time len, rtb_time at)
{
    if (p->noise.n == p->noise.cap && p->noise.sent + p->noise.n < p->noise.limit) {
        for (size_t i = 0; p->hold && i < p->noise.n; i++)
            p->long_gaps += p->noise.v[i] >= p->hold;
        rtb_series_flush(&p->noise);
        rtb_series_flush(&p->at);
    }
    rtb_series_push(&p->noise, len);
    rtb_series_push(&p->at, at);
}

static void unstash(poller *p)
{
    for (size_t i = 0; i < p->nstash; i++)
        push_gap(p, p->stash[i].len, p->base + p->stash[i].at);
    p->nstash = 0;
}

/* While polling: into the stash, or a pause to empty it (its time, from
 * `now`, is not polled). */
static void stash_gap(poller *p, rtb_time len, rtb_time at, rtb_time now)
{
    bool wide = len > UINT32_MAX || (p->nstash && at - p->base > UINT32_MAX);
    if (p->nstash == STASH || wide) {
        unstash(p);
        if (len > UINT32_MAX)
            push_gap(p, len, at);
        rtb_time paused = rtb_ts_now() - now;
        p->paused += paused;
        p->pauses++;
        p->end += paused;
        if (len > UINT32_MAX)
            return;
    }
    if (!p->nstash)
        p->base = at;
    p->stash[p->nstash++] = (gap32){(uint32_t)len, (uint32_t)(at - p->base)};
}

/* Out of line: the polling loop's own code stays what it was (its
 * iteration is the `loop` figure). */
static NOINLINE void record_gap(poller *p, rtb_time len, rtb_time at, rtb_time now)
{
    if (p->stash) {
        stash_gap(p, len, at, now);
    } else {
        rtb_series_push(&p->noise, len);
        rtb_series_push(&p->at, at);
    }
}

static void poll_main(void *arg)
{
    poller *p = arg;
    if (!p->threshold)
        p->threshold = auto_threshold(p);
    /* Where the polling begins in the kernel trace (--trace): the host
     * names each gap's source from there (rtbench/trace/noise.py). */
    char mark[48];
    snprintf(mark, sizeof mark, "rtbench noise-os cpu=%d\n", p->cpu);
    rtb_trace_mark(mark);
    rtb_time first = rtb_ts_now(), prev = first;
    while (!atomic_load_explicit(&p->ctx->stop, memory_order_relaxed)) {
        rtb_time now = rtb_ts_now(), d = now - prev;
        /* Histogram only: the raw loop times are billions of the same few ns. */
        rtb_hist_add(&p->loop.hist, d);
        prev = now;
        if (d >= p->threshold) {
            record_gap(p, d, now - d - first, now);
            p->noise_ns += d;
            /* Recording a gap takes longer than an iteration on a slow board:
             * counted, it would make the next iteration a gap too. */
            prev = rtb_ts_now();
        }
        if (now >= p->end)
            break;
    }
    p->polled = prev - first - p->paused;
    if (p->stash)
        unstash(p);
}

/* Holds the CPU `count` times, evenly spread over the middle of the run. */
static void block_main(void *arg)
{
    blocker *b = arg;
    for (int i = 0; i < b->count && !atomic_load(&b->ctx->stop); i++) {
        rtb_sleep_until(b->start + (i + 1) * b->every);
        rtb_time until = rtb_clock_now() + b->hold;
        while (rtb_clock_now() < until)
            ;
        b->done++;
    }
}

static int init_poller(rtb_ctx *ctx, poller *p, int cpu, bool multi)
{
    size_t cap = ctx->opt->max_samples;
    p->ctx = ctx;
    p->cpu = cpu;
    p->threshold = rtb_param(ctx, "threshold_ns");
    if (rtb_series_init(&p->loop, "loop", 0) != RTB_OK ||
        rtb_series_init_streamed(&p->noise, ctx, "noise", cap) != RTB_OK ||
        rtb_series_init_streamed(&p->at, ctx, "noise_at", cap) != RTB_OK)
        return RTB_ENOMEM;
    if (p->noise.buffered < p->noise.limit) {
        _Static_assert(STASH * sizeof(gap32) >= CALIBRATION * sizeof(rtb_time), "scratch");
        p->stash = rtb_mem_calloc(STASH, sizeof *p->stash);
        p->scratch = (rtb_time *)(void *)p->stash;
    } else {
        p->scratch = rtb_mem_calloc(CALIBRATION, sizeof *p->scratch);
    }
    if (!p->scratch)
        return RTB_ENOMEM;
    rtb_series_set_kind(&p->loop, RTB_KIND_DURATION);
    rtb_series_set_kind(&p->at, RTB_KIND_TIMESTAMP);
    if (multi) {
        rtb_series_set_point(&p->loop, "cpu", cpu);
        rtb_series_set_point(&p->noise, "cpu", cpu);
        rtb_series_set_point(&p->at, "cpu", cpu);
    }
    p->ready = true;
    return RTB_OK;
}

/* False when a check failed. */
static bool report(rtb_ctx *ctx, const poller *ps, int np, rtb_time duration, const blocker *b)
{
    bool ok = true;
    for (int i = 0; i < np; i++) {
        const poller *p = &ps[i];
        /* The share of the polling time taken from the thread: rtla
         * osnoise's noise over its runtime. */
        rtb_time polled = p->polled > 0 ? p->polled : duration;
        ok &= p->loop.hist.n > 0;
        char pauses[96] = "";
        if (p->pauses)
            snprintf(pauses, sizeof pauses, "; paused %d times to send gaps (%lld us, not polled)",
                     p->pauses, (long long)(p->paused / 1000));
        rtb_emit_check(ctx, "polled", p->loop.hist.n > 0,
                       "CPU %d: %llu loop iterations in %lld us, %llu gaps >= %lld ns taking "
                       "%lld us (%.3f %% of the time)%s", p->cpu,
                       (unsigned long long)p->loop.hist.n, (long long)(polled / 1000),
                       (unsigned long long)p->noise.hist.n, (long long)p->threshold,
                       (long long)(p->noise_ns / 1000), 100.0 * (double)p->noise_ns /
                       (double)(polled > 0 ? polled : 1), pauses);

    }
    if (!b)
        return ok;
    if (!ctx->port->realtime) {
        rtb_emit_check_skip(ctx, "blocker", "the self-test needs real-time priority: the "
                            "blocker must preempt the polling thread");
        return ok;
    }
    /* Every hold is one gap of at least its length on the first CPU. */
    uint64_t long_gaps = ps[0].long_gaps;
    for (size_t i = 0; i < ps[0].noise.n; i++)
        long_gaps += ps[0].noise.v[i] >= b->hold;
    bool seen = b->done == b->count && long_gaps >= (uint64_t)b->done;
    rtb_emit_check(ctx, "blocker", seen,
                   "%d holds of %lld us, %llu gaps at least that long on CPU %d", b->done,
                   (long long)(b->hold / 1000), (unsigned long long)long_gaps, ps[0].cpu);
    return ok && seen;
}

static rtb_result run(rtb_ctx *ctx)
{
    bool multi = ctx->opt->ncpus > 0;
    int np = multi ? ctx->opt->ncpus : 1;
    poller *ps = rtb_mem_calloc((size_t)np, sizeof *ps);
    rtb_thread *th = rtb_mem_calloc((size_t)np + 1, sizeof *th);
    blocker *b = rtb_mem_calloc(1, sizeof *b);
    rtb_result r = RTB_PASSED;
    int started = 0;
    if (!ps || !th || !b) {
        rtb_emit_check_error(ctx, "buffer", "no memory");
        r = RTB_ERROR;
        goto out;
    }
    for (int i = 0; i < np; i++)
        if (init_poller(ctx, &ps[i], multi ? ctx->opt->cpus[i] : ctx->opt->cpu, multi) !=
            RTB_OK) {
            rtb_emit_check_error(ctx, "buffer", "no memory for the series of %d CPUs", np);
            r = RTB_ERROR;
            goto out;
        }
    rtb_time duration = rtb_param(ctx, "duration_ms") * 1000000;
    b->hold = rtb_param(ctx, "blocker_us") * 1000;
    ps[0].hold = b->hold;
    rtb_time start = rtb_clock_now();
    for (int i = 0; i < np; i++) {
        ps[i].end = rtb_ts_now() + duration;
        rtb_thread_attr a = rtb_attr(ctx, "noise-os", 0);
        a.cpu = ps[i].cpu;
        if (rtb_thread_create(&th[i], &a, poll_main, &ps[i]) != RTB_OK) {
            rtb_emit_check_error(ctx, "thread", "cannot start the polling thread on CPU %d",
                                 ps[i].cpu);
            r = RTB_ERROR;
            break;
        }
        started++;
    }
    bool blocking = b->hold > 0 && started == np;
    if (blocking) {
        b->ctx = ctx;
        b->count = (int)rtb_param(ctx, "blocker_count");
        b->start = start;
        b->every = duration / (b->count + 1);
        rtb_thread_attr a = rtb_attr(ctx, "noise-blocker", 1);
        a.cpu = ps[0].cpu;
        blocking = rtb_thread_create(&th[np], &a, block_main, b) == RTB_OK;
        if (!blocking) {
            rtb_emit_check_error(ctx, "blocker", "cannot start the blocker");
            r = RTB_ERROR;
        }
    }
    if (rtb_join_all(ctx, th, started) != RTB_OK)
        r = RTB_ERROR;
    if (blocking && rtb_join_all(ctx, &th[np], 1) != RTB_OK)
        r = RTB_ERROR;
    if (r == RTB_PASSED && !report(ctx, ps, np, duration, blocking ? b : NULL))
        r = RTB_FAILED;
    for (int i = 0; i < np && r == RTB_PASSED; i++) {
        rtb_emit_series(ctx, &ps[i].loop);
        rtb_emit_series(ctx, &ps[i].noise);
        rtb_emit_series(ctx, &ps[i].at);
    }
out:
    for (int i = np - 1; ps && i >= 0; i--)
        if (ps[i].ready) {
            rtb_mem_free(ps[i].scratch); /* the stash's memory, if any: after the series */
            rtb_series_free(&ps[i].at);
            rtb_series_free(&ps[i].noise);
            rtb_series_free(&ps[i].loop);
        }
    rtb_mem_free(b);
    rtb_mem_free(th);
    rtb_mem_free(ps);
    return r;
}

const rtb_case rtb_case_noise_os = {
    .id = "NOISE-OS",
    .title = "OS noise seen by a busy-polling thread (oslat)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .per_cpu = true,
};
