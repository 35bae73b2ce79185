/* SPDX-License-Identifier: Apache-2.0 */
/* JIT-PER: periodic release jitter. A real-time task sleeps until absolute
 * release times next += period and records, per release, its wake-up
 * latency (actual - planned) and the interval since the previous release.
 * The published kernel-preemption study reads the interval distribution
 * against the period: shorter / equal / longer, and a table of
 * |deviation| in µs. Lower-priority kernel-load threads on the same CPU
 * give the kernel non-preemptible work to do meanwhile.
 *
 * A release that comes after the next planned one is an overrun; the
 * missed slots are skipped (as cyclictest does), so a stall shows as one
 * long latency and one long interval rather than a burst of back-to-back
 * releases that would pass for "shorter" intervals.
 *
 * Everything is read from rtb_clock_now, the clock the schedule runs on:
 * against the raw measurement clock an NTP-slewed schedule would show a
 * deviation of up to 500 ppm (5 µs per 10 ms) that is not jitter. */
#include <stdlib.h>

#include "../core/rtb.h"
#include "rtb/load.h"

static const rtb_param_def params[] = {
    {.name = "period_us", .help = "release period", .def = {10000}, .ndef = 1, .min = 100,
     .max = 10000000},
    {.name = "cycles", .help = "planned releases (periods)", .def = {5000}, .ndef = 1, .min = 2,
     .max = 1000000000},
    {.name = "duration_ms", .help = "time cap: stop after this long even if periods remain "
     "(0: no cap, run every period)", .def = {0}, .ndef = 1, .min = 0, .max = 86400000},
    {.name = "load_threads", .help = "background kernel-load threads at normal priority (0: none)",
     .def = {2}, .ndef = 1, .min = 0, .max = 64},
    {.name = "blocker_us", .help = "self-test: a higher-priority thread on the same CPU "
     "holds it this long over a few random releases; 0 = off", .def = {0}, .ndef = 1,
     .min = 0, .max = 10000000},
    {.name = "blocker_count", .help = "self-test: how many releases the blocker holds up",
     .def = {3}, .ndef = 1, .min = 1, .max = 64},
};

/* Deviation histogram: whole µs from -1023 to +1023, one bucket each, so
 * the study's table (0, 1-9, 10-99 µs, 10 µs bins) comes exactly from the
 * buckets; beyond ±1023 µs is under/overflow, the exact min/max remain. */
#define DEV_US 1023

typedef struct blocker {
    rtb_time start, period, stop_at, hold;
    int64_t at[64];      /* schedule slots the blocker holds up, ascending */
    int64_t release[64]; /* which release served each slot (-1: skipped) */
    rtb_time latency[64];
    int n;
    atomic_bool done;
} blocker;

/* Sleeps until just before slot k, then holds the CPU until slot k + hold:
 * the release for slot k cannot run before then, so its latency >= hold. */
static void blocker_main(void *arg)
{
    blocker *b = arg;
    rtb_time margin = b->period / 2 < 1000000 ? b->period / 2 : 1000000;
    for (int i = 0; i < b->n && !atomic_load(&b->done); i++) {
        rtb_time planned = b->start + b->at[i] * b->period;
        if (planned > b->stop_at)
            break;
        rtb_sleep_until(planned - margin);
        while (rtb_clock_now() < planned + b->hold && !atomic_load(&b->done))
            ;
    }
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The study's figures, counted on the target too so the check detail is
 * exact whatever the sample cap. */
typedef struct tally {
    uint64_t shorter, equal, longer, early, overrun, skipped;
    uint64_t cat[4]; /* |deviation| 0, 1-9, 10-99, >= 100 µs */
} tally;

static int64_t trunc_us(int64_t ns) { return ns / 1000 * 1000; /* toward zero */ }

static void count_interval(tally *t, int64_t dev)
{
    int64_t us = (dev < 0 ? -dev : dev) / 1000;
    if (us == 0)
        t->equal++;
    else if (dev < 0)
        t->shorter++;
    else
        t->longer++;
    t->cat[us == 0 ? 0 : us < 10 ? 1 : us < 100 ? 2 : 3]++;
}

typedef struct per {
    rtb_ctx *ctx;
    rtb_time period, stop_at;
    int64_t cycles, slot, released;
    rtb_series lat, iv, dev;
    tally t;
    blocker b;
} per;

static void periodic(per *p)
{
    blocker *b = &p->b;
    rtb_time next = b->start, prev = 0;
    int bi = 0;
    while (p->slot < p->cycles && next <= p->stop_at &&
           !atomic_load_explicit(&p->ctx->stop, memory_order_relaxed)) {
        rtb_sleep_until(next);
        rtb_time w = rtb_clock_now();
        rtb_series_push(&p->lat, w - next);
        p->t.early += w < next;
        if (p->released) {
            rtb_series_push(&p->iv, w - prev);
            rtb_series_push(&p->dev, trunc_us(w - prev - p->period));
            count_interval(&p->t, w - prev - p->period);
        }
        for (; bi < b->n && b->at[bi] <= p->slot; bi++)
            if (b->at[bi] == p->slot) {
                b->release[bi] = p->released;
                b->latency[bi] = w - next;
            }
        prev = w;
        p->released++;
        p->slot++;
        next += p->period;
        if (w >= next) {
            p->t.overrun++;
            for (; next <= w && p->slot < p->cycles; next += p->period, p->slot++)
                p->t.skipped++;
        }
    }
}

static void report_blocker(rtb_ctx *ctx, const per *p, bool ran, rtb_result *r)
{
    const blocker *b = &p->b;
    if (!ctx->port->realtime) {
        rtb_emit_check_skip(ctx, "blocker", "the self-test needs real-time priority: the "
                            "blocker must preempt the periodic task");
        return;
    }
    if (!ran) {
        rtb_emit_check_error(ctx, "blocker", "the blocker did not run (too few periods)");
        return;
    }
    /* Each held-up release's own latency, not just the maximum: noise
     * elsewhere in the run must not pass for the blocker's effect. */
    char list[640];
    size_t len = 0, seen = 0, under = 0;
    list[0] = '\0';
    for (int i = 0; i < b->n; i++) {
        if (b->release[i] < 0)
            continue;
        seen++;
        under += b->latency[i] < b->hold;
        if (len < sizeof list - 48)
            len += (size_t)snprintf(list + len, sizeof list - len, "%srelease %lld: %.1f us",
                                    len ? ", " : "", (long long)b->release[i],
                                    (double)b->latency[i] / 1e3);
    }
    bool pass = seen > 0 && under == 0;
    rtb_emit_check(ctx, "blocker", pass, "%zu releases held up for %lld us, %zu of them "
                   "waited less; latency by release: %s", seen, (long long)(b->hold / 1000),
                   under, list);
    if (!pass)
        *r = RTB_FAILED;
}

static void report(rtb_ctx *ctx, per *p, rtb_result *r)
{
    const tally *t = &p->t;
    uint64_t n = p->iv.hist.n;
    rtb_emit_check(ctx, "releases", t->early == 0,
                   "%lld releases in %lld periods, %llu before their planned time; %llu "
                   "intervals vs %lld us: %llu shorter, %llu equal, %llu longer; |deviation| "
                   "0 us: %llu, 1-9 us: %llu, 10-99 us: %llu, >= 100 us: %llu; deviation min "
                   "%.1f us, max %.1f us",
                   (long long)p->released, (long long)p->slot, (unsigned long long)t->early,
                   (unsigned long long)n, (long long)(p->period / 1000),
                   (unsigned long long)t->shorter, (unsigned long long)t->equal,
                   (unsigned long long)t->longer, (unsigned long long)t->cat[0],
                   (unsigned long long)t->cat[1], (unsigned long long)t->cat[2],
                   (unsigned long long)t->cat[3],
                   n ? (double)(p->iv.hist.min - p->period) / 1e3 : 0.0,
                   n ? (double)(p->iv.hist.max - p->period) / 1e3 : 0.0);
    if (t->early)
        *r = RTB_FAILED;
    if (t->overrun)
        rtb_warn(ctx, "overrun", "%llu of %lld releases came after the next planned release; "
                 "%llu periods skipped; max latency %.1f us (period %lld us)",
                 (unsigned long long)t->overrun, (long long)p->released,
                 (unsigned long long)t->skipped, (double)p->lat.hist.max / 1e3,
                 (long long)(p->period / 1000));
    if (p->slot < p->cycles)
        rtb_warn(ctx, "truncated", "%lld of %lld periods: stopped by duration_ms or before the "
                 "hard deadline", (long long)p->slot,
                 (long long)p->cycles);
}

/* The planned periods, or the cap when it is shorter: the hard deadline
 * follows the run the user asked for, however long. */
static rtb_time expected(const rtb_ctx *ctx)
{
    int64_t period = rtb_param(ctx, "period_us") * 1000, cycles = rtb_param(ctx, "cycles");
    rtb_time planned = cycles > INT64_MAX / 4 / period ? INT64_MAX / 4 : cycles * period;
    rtb_time cap = rtb_param(ctx, "duration_ms") * 1000000;
    return cap && cap < planned ? cap : planned;
}

static rtb_result run(rtb_ctx *ctx)
{
    per *p = rtb_mem_calloc(1, sizeof *p);
    if (!p) {
        rtb_emit_check_error(ctx, "buffer", "no memory");
        return RTB_ERROR;
    }
    p->ctx = ctx;
    p->period = rtb_param(ctx, "period_us") * 1000;
    p->cycles = rtb_param(ctx, "cycles");
    blocker *b = &p->b;
    b->period = p->period;
    b->hold = rtb_param(ctx, "blocker_us") * 1000;
    b->n = b->hold ? (int)rtb_param(ctx, "blocker_count") : 0;
    size_t cap = (size_t)p->cycles;
    if (cap > ctx->opt->max_samples)
        cap = ctx->opt->max_samples;
    int ok = rtb_series_init(&p->lat, "latency", cap) == RTB_OK;
    ok = (rtb_series_init(&p->iv, "interval", cap) == RTB_OK) & ok;
    ok = (rtb_series_init(&p->dev, "deviation", cap) == RTB_OK) & ok;
    rtb_result r = RTB_PASSED;
    if (!ok) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %zu samples", cap);
        r = RTB_ERROR;
        goto out;
    }
    rtb_hist_init_linear(&p->dev.hist, -DEV_US * 1000, 1000, 2 * DEV_US + 1);

    /* The cap, and a second before the hard deadline for the records. */
    rtb_time cap_ns = rtb_param(ctx, "duration_ms") * 1000000;
    p->stop_at = cap_ns ? ctx->started + cap_ns : ctx->deadline;
    if (p->stop_at > ctx->deadline - 1000000000)
        p->stop_at = ctx->deadline - 1000000000;
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    rtb_load *load = NULL;
    char err[256];
    /* Normal scheduling (priority 0): the task preempts the load and meets
     * only its kernel sections, as in the published method. A real-time
     * load keeping the CPU busy would spend the RT budget every second, and
     * RT throttling's stall would become the headline max. */
    int lrc = rtb_load_start(&load, "kernel", (int)rtb_param(ctx, "load_threads"),
                             ctx->opt->cpu, 0, err, sizeof err);
    if (lrc != RTB_OK) {
        if (lrc == RTB_ENOTSUP) {
            r = rtb_unsupported(ctx, "%s", err);
        } else {
            rtb_emit_check_error(ctx, "load", "%s", err);
            r = RTB_ERROR;
        }
        goto out;
    }
    b->start = rtb_clock_now() + (2 * p->period > 2000000 ? 2 * p->period : 2000000);
    b->stop_at = p->stop_at;
    int64_t reach = (p->stop_at - b->start) / p->period;
    if (reach > p->cycles)
        reach = p->cycles;
    /* One random slot in each of n equal stretches (fixed seed: the same
     * slots every run). */
    uint64_t seed = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < b->n && reach > b->n; i++) {
        int64_t lo = 1 + i * (reach - 1) / b->n, hi = 1 + (i + 1) * (reach - 1) / b->n;
        b->at[i] = lo + (int64_t)(xorshift(&seed) % (uint64_t)(hi - lo));
        b->release[i] = -1;
    }
    rtb_thread th;
    int nth = 0;
    if (b->n && reach > b->n) {
        rtb_thread_attr a = rtb_attr(ctx, "jit-blocker", 1);
        nth = rtb_thread_create(&th, &a, blocker_main, b) == RTB_OK;
    }
    rtb_thread_self_set(rtb_attr(ctx, "jit-per", 0).priority, ctx->opt->cpu);
    periodic(p);
    atomic_store(&b->done, true);
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
    if (nth && rtb_join_all(ctx, &th, 1) != RTB_OK)
        r = RTB_ERROR;
    rtb_load_stats ls;
    if (rtb_load_stop(load, ctx->deadline + 2000000000, &ls) != RTB_OK)
        r = RTB_ERROR;

    if (!p->released) {
        rtb_emit_check_error(ctx, "releases", "no release before the hard deadline");
        r = RTB_ERROR;
    } else {
        report(ctx, p, &r);
    }
    if (load) {
        /* Jitter "under load" means nothing if the load never got the CPU. */
        bool ran = ls.ops_total > 0;
        if (ran && ls.ops_min == 0) /* less load than asked, still under load */
            rtb_warn(ctx, "load_idle", "a kernel-load thread completed no %s", ls.unit);
        rtb_emit_check(ctx, "load_ran", ran,
                       "%d kernel-load threads at normal priority: %llu %s, the least busy "
                       "%llu", ls.threads, (unsigned long long)ls.ops_total, ls.unit,
                       (unsigned long long)ls.ops_min);
        if (!ran && r == RTB_PASSED)
            r = RTB_FAILED;
    }
    if (b->hold)
        report_blocker(ctx, p, nth, &r);
    rtb_emit_series(ctx, &p->lat);
    rtb_emit_series(ctx, &p->iv);
    rtb_emit_series(ctx, &p->dev);
out:
    rtb_series_free(&p->lat);
    rtb_series_free(&p->iv);
    rtb_series_free(&p->dev);
    rtb_mem_free(p);
    return r;
}

const rtb_case rtb_case_jit_per = {
    .id = "JIT-PER",
    .title = "Periodic task release jitter",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .expected_ns = expected,
};
