/* SPDX-License-Identifier: Apache-2.0 */
/* IRQ-SUS: maximum sustained interrupt rate. A periodic timer at period P
 * for `count` events, each handled on a blocked thread (IRQ-LAT's
 * engine); lost events are expiries merged into an event still pending
 * (timer overruns) plus any expiry neither handled nor counted. P is
 * searched downwards: halved from start_period_ns until events are lost,
 * then bisected between the last lossless and the first lossy period;
 * when the start already loses, P doubles until it does not (up to 1 s),
 * with fewer events per try (at least MIN_EVENTS) once `count` no longer
 * fits what is left of duration_ms. The search stops at min_period_ns and
 * within duration_ms. Result: the shortest lossless period (series
 * sustained_period, check sustained_period passed), or, when no period
 * tried was lossless, a bound (series lossy_period, the longest period
 * tried; check failed: the sustained rate is below 1/lossy_period on this
 * machine). A slow machine is a finding, never an error (docs/outcomes.md).
 *
 * Timer only: a raised event is queued, not merged (POSIX signals), so it is never lost
 * that way, and the raiser's own pace would be what is measured.
 *
 * A try is one continuous run of `count` events whatever the RAM: its
 * handlers stamp only the first rtb_stamp_block(count) (128 on a board);
 * the others are counted, with the port's overrun count when the timer
 * stopped (irq_lat.c). Blocks of 128 with a fresh start each, as IRQ-LAT
 * runs, lost one event a block at 4,375 ns on FreeRTOS where the
 * continuous run lost none: not a sustained rate. */
#include <string.h>

#include "irq.h"

#define MAX_TRIALS 32
#define MAX_PERIOD 1000000000 /* a timer slower than this is no interrupt rate */
#define MIN_EVENTS 100         /* the fewest events a try widening the search may have */

static const rtb_param_def params[] = {
    {.name = "count", .help = "events per tried period", .def = {1000000}, .ndef = 1, .min = 100,
     .max = 100000000},
    {.name = "start_period_ns", .help = "first period tried", .def = {20000}, .ndef = 1,
     .min = 100, .max = 100000000},
    {.name = "min_period_ns", .help = "the search goes no lower", .def = {1000}, .ndef = 1,
     .min = 100, .max = 100000000},
    {.name = "duration_ms", .help = "time budget of the whole search", .def = {120000}, .ndef = 1,
     .min = 1, .max = 3600000},
};

typedef struct trial {
    rtb_time period;
    size_t count;
    int64_t lost;
} trial;

static void emit_one(rtb_ctx *ctx, const char *name, rtb_kind kind, rtb_time period,
                     int64_t value)
{
    rtb_series s;
    if (rtb_series_init(&s, name, 1) != RTB_OK)
        return;
    rtb_series_set_kind(&s, kind);
    if (period)
        rtb_series_set_point(&s, "period_ns", period);
    rtb_series_push(&s, value);
    rtb_emit_series(ctx, &s);
    rtb_series_free(&s);
}

/* Lost events at `period` (>= 0), or an RTB_E* code. */
static int64_t try_period(rtb_ctx *ctx, rtb_time period, size_t count, irq_lat_out *out)
{
    irq_lat_cfg cfg = {.source = IRQ_TIMER, .count = count, .period = period};
    int rc = irq_lat_measure(ctx, &cfg, NULL, out);
    if (rc != RTB_OK)
        return rc;
    int64_t lost = out->overruns + (int64_t)out->missing;
    emit_one(ctx, "losses", RTB_KIND_COUNT, period, lost);
    emit_one(ctx, "delivered", RTB_KIND_COUNT, period, (int64_t)out->handled);
    return lost;
}

/* Events of `period` that fit before `end`: a try takes count * period,
 * plus a fifth and a margin for its start-up. */
static size_t fitting(rtb_time end, rtb_time period)
{
    rtb_time left = end - rtb_clock_now() - 50000000;
    return left > 0 ? (size_t)(left / period / 12 * 10) : 0;
}

static void describe(char *list, size_t cap, const trial *tried, int n, size_t count)
{
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(list + len, cap - len, "%s%lld ns: %lld lost%s", i ? ", " : "",
                                (long long)tried[i].period, (long long)tried[i].lost,
                                tried[i].count < count ? " (fewer events)" : "");
    if (len >= cap && cap > 4)
        memcpy(list + cap - 4, "...", 4);
}

/* Fewer losses at a shorter period than at a longer one: the timer path
 * did not change between the two, the machine did (stalls of other work
 * or of the hypervisor). Compared as loss rates: a try may have fewer events. */
static void warn_non_monotonic(rtb_ctx *ctx, const trial *tried, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            const trial *s = &tried[i], *l = &tried[j];
            if (s->period >= l->period ||
                (double)s->lost / (double)s->count >= (double)l->lost / (double)l->count)
                continue;
            rtb_warn(ctx, "stalls",
                     "losses are not monotonic in the period (%lld of %llu lost at %lld ns, %lld "
                     "of %llu at the longer %lld ns): the machine stalled during the tries, and "
                     "its stalls, not only its interrupt path, bound the rate",
                     (long long)s->lost, (unsigned long long)s->count, (long long)s->period,
                     (long long)l->lost, (unsigned long long)l->count, (long long)l->period);
            return;
        }
}

/* Without real-time priority the handler's thread waits behind other
 * threads by the scheduler's fairness: a lost event then says how a busy
 * machine shares its CPU, not how fast the interrupt path is. The check is
 * skipped with that reason; the periods found are still written. */
static bool sustained_applies(rtb_ctx *ctx)
{
    static const char *const names[] = {"sustained_period"};
    return rtb_checks_need_realtime(ctx, names, 1,
                                    "without it the handler's thread waits behind other threads "
                                    "by fairness, so a lost event measures the scheduler's "
                                    "sharing, not the interrupt path (the periods are kept)");
}

/* The search's record and its text, from the case's memory: 1.4 KiB that
 * made this frame the deepest of a board's main stack. */
typedef struct search_mem {
    trial tried[MAX_TRIALS];
    char list[600];
} search_mem;

static rtb_result search(rtb_ctx *ctx, rtb_time budget_end, search_mem *m)
{
    size_t count = (size_t)rtb_param(ctx, "count");
    rtb_time start = rtb_param(ctx, "start_period_ns"), min = rtb_param(ctx, "min_period_ns");
    if (start < min)
        start = min;
    trial *tried = m->tried;
    int ntried = 0;
    rtb_time good = 0, bad = 0, p = start;
    size_t good_n = 0;
    bool out_of_time = false;
    irq_lat_out out = {0};
    while (ntried < MAX_TRIALS) {
        size_t n = count, fit = fitting(budget_end, p);
        if (fit < n) {
            /* Still looking for a first lossless period: widen the search
             * to the end of the budget with fewer events rather than stop
             * with nothing to say. */
            if (good || fit < MIN_EVENTS) {
                out_of_time = true;
                break;
            }
            n = fit;
        }
        int64_t lost = try_period(ctx, p, n, &out);
        if (lost < 0) {
            rtb_emit_check_error(ctx, "sustained_period", "%s could not run (error %lld)",
                                 irq_mechanism(ctx, IRQ_TIMER), (long long)lost);
            return RTB_ERROR;
        }
        tried[ntried++] = (trial){p, n, lost};
        if (lost == 0) {
            good = p;
            good_n = n;
        } else {
            bad = p;
        }
        if (good && bad) {
            if (good - bad <= good / 8 || good - bad <= 100)
                break; /* close enough */
            p = (good + bad) / 2; /* bisect */
        } else if (good) {
            if (p / 2 < min)
                break; /* no loss down to the floor */
            p /= 2;
        } else {
            if (p > MAX_PERIOD / 2)
                break;
            p *= 2; /* the start already loses: go up until it does not */
        }
    }
    char *list = m->list;
    describe(list, sizeof m->list, tried, ntried, count);
    warn_non_monotonic(ctx, tried, ntried);
    if (ntried == 0) {
        /* Not the machine: the parameters leave no room for one try. */
        rtb_emit_check_error(ctx, "sustained_period",
                             "duration_ms %lld cannot hold one try of %d events at %lld ns",
                             (long long)rtb_param(ctx, "duration_ms"), MIN_EVENTS,
                             (long long)start);
        return RTB_ERROR;
    }
    if (!good) {
        /* A bound, and a finding about this machine: every period it could
         * try in its budget lost events. */
        rtb_time widest = 0;
        for (int i = 0; i < ntried; i++)
            widest = tried[i].period > widest ? tried[i].period : widest;
        emit_one(ctx, "lossy_period", RTB_KIND_PERIOD, 0, widest);
        if (!sustained_applies(ctx))
            return RTB_SKIPPED;
        rtb_emit_check(ctx, "sustained_period", false,
                       "no lossless period up to %.0f us: the sustained rate is below %.3g kHz "
                       "on this machine (%s; %s; %s; tried %s)",
                       (double)widest / 1e3, 1e6 / (double)widest, irq_mechanism(ctx, IRQ_TIMER),
                       out.where,
                       out_of_time ? "the search widened until duration_ms ran out"
                                   : "the search reached its longest period",
                       list);
        return RTB_FAILED;
    }
    if (out_of_time)
        rtb_warn(ctx, "budget", "duration_ms ran out: the search stopped early (tried %s)", list);
    emit_one(ctx, "sustained_period", RTB_KIND_PERIOD, 0, good);
    if (!sustained_applies(ctx))
        return RTB_SKIPPED;
    rtb_emit_check(ctx, "sustained_period", true,
                   "%s; handler on a blocked thread on CPU %d: shortest period without a lost event "
                   "%lld ns (%.0f events/s) over %llu events%s (tried %s)",
                   irq_mechanism(ctx, IRQ_TIMER), irq_cpu(ctx), (long long)good,
                   1e9 / (double)good, (unsigned long long)good_n,
                   good / 2 < min && !bad ? "; no loss down to min_period_ns" : "", list);
    return RTB_PASSED;
}

static rtb_result run(rtb_ctx *ctx)
{
    rtb_time budget_end = rtb_clock_now() + rtb_param(ctx, "duration_ms") * 1000000;
    search_mem *m = rtb_mem_alloc(sizeof *m);
    if (!m) {
        rtb_emit_check_error(ctx, "sustained_period", "no memory for the search (%u bytes)",
                             (unsigned)sizeof *m);
        return RTB_ERROR;
    }
    rtb_result r = search(ctx, budget_end, m);
    rtb_mem_free(m);
    return r;
}

const rtb_case rtb_case_irq_sus = {
    .id = "IRQ-SUS",
    .title = "Maximum sustained interrupt rate: shortest timer period without lost events",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
