/* SPDX-License-Identifier: Apache-2.0 */
/* IRQ-SUS: maximum sustained interrupt rate. A periodic timer at period P
 * for `count` events, its signal handled on a blocked thread (IRQ-LAT's
 * engine); lost events are expiries merged into a signal still pending
 * (timer overruns) plus any expiry neither handled nor counted. P is
 * searched downwards: halved from start_period_ns until events are lost,
 * then bisected between the last lossless and the first lossy period;
 * when the start already loses, P doubles until it does not (up to 1 s).
 * The search stops at min_period_ns and within duration_ms. Result: the shortest
 * lossless period (series sustained_period, check sustained_period).
 *
 * Timer only: a raised signal is queued, not merged, so it is never lost
 * that way, and the raiser's own pace would be what is measured. */
#include "irq.h"

#define MAX_TRIALS 32
#define MAX_PERIOD 1000000000 /* a timer slower than this is no interrupt rate */

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
    int64_t lost;
} trial;

static void emit_one(rtb_ctx *ctx, const char *name, const char *unit, rtb_time period,
                     int64_t value)
{
    rtb_series s;
    if (rtb_series_init(&s, name, 1) != RTB_OK)
        return;
    s.unit = unit;
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
    emit_one(ctx, "losses", "count", period, lost);
    emit_one(ctx, "delivered", "count", period, (int64_t)out->handled);
    return lost;
}

static rtb_result run(rtb_ctx *ctx)
{
    size_t count = (size_t)rtb_param(ctx, "count");
    rtb_time start = rtb_param(ctx, "start_period_ns"), min = rtb_param(ctx, "min_period_ns");
    rtb_time budget_end = rtb_clock_now() + rtb_param(ctx, "duration_ms") * 1000000;
    if (start < min)
        start = min;
    trial tried[MAX_TRIALS];
    int ntried = 0;
    rtb_time good = 0, bad = 0, p = start;
    bool out_of_time = false;
    irq_lat_out out = {0};
    while (ntried < MAX_TRIALS) {
        /* Each try takes count * p, plus a margin for start-up. */
        if (rtb_clock_now() + (rtb_time)count * p / 10 * 12 + 50000000 > budget_end) {
            out_of_time = true;
            break;
        }
        int64_t lost = try_period(ctx, p, count, &out);
        if (lost < 0) {
            rtb_emit_check_error(ctx, "sustained_period", "%s could not run (error %lld)",
                                 irq_mechanism(ctx, IRQ_TIMER), (long long)lost);
            return RTB_ERROR;
        }
        tried[ntried++] = (trial){p, lost};
        if (lost == 0)
            good = p;
        else
            bad = p;
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
    char list[600] = "";
    size_t len = 0;
    for (int i = 0; i < ntried && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld ns: %lld lost",
                                i ? ", " : "", (long long)tried[i].period,
                                (long long)tried[i].lost);
    if (out_of_time)
        rtb_warn(ctx, "budget", "duration_ms ran out: the search stopped early (tried %s)", list);
    if (!good) {
        if (ntried == 0 || out_of_time) {
            rtb_emit_check_error(ctx, "sustained_period",
                                 "no lossless period found within duration_ms (tried %s)", list);
            return RTB_ERROR;
        }
        rtb_emit_check(ctx, "sustained_period", false,
                       "%s; %s: every period tried lost events over %zu events (tried %s)",
                       irq_mechanism(ctx, IRQ_TIMER), out.where, count, list);
        return RTB_FAILED;
    }
    emit_one(ctx, "sustained_period", "ns", 0, good);
    rtb_emit_check(ctx, "sustained_period", true,
                   "%s; handler on a blocked thread on CPU %d: shortest period without a lost event "
                   "%lld ns (%.0f events/s) over %zu events%s (tried %s)",
                   irq_mechanism(ctx, IRQ_TIMER), irq_cpu(ctx), (long long)good, 1e9 / (double)good,
                   count, good / 2 < min && !bad ? "; no loss down to min_period_ns" : "", list);
    return RTB_PASSED;
}

const rtb_case rtb_case_irq_sus = {
    .id = "IRQ-SUS",
    .title = "Maximum sustained interrupt rate: shortest timer period without lost events",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
