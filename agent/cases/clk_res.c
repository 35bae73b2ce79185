/* SPDX-License-Identifier: Apache-2.0 */
/* CLK-RES: timer granularity. Short relative sleeps: read the scheduling
 * clock, sleep until now + d, read it again. Sample = actual - requested
 * (series `overshoot`, one per requested d). Measured with rtb_clock_now,
 * not rtb_ts_now: the sleep runs on that clock, and a slewed clock against
 * a raw one would show as a (fake) overshoot or undershoot. */
#include <stdlib.h>

#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "request_ns", .help = "requested sleeps (a sweep)", .def = {1000, 10000, 100000,
     1000000}, .ndef = 4, .min = 0, .max = 1000000000, .list = true},
    {.name = "count", .help = "sleeps per requested duration", .def = {1000}, .ndef = 1, .min = 1,
     .max = 100000000},
    {.name = "early_ns", .help = "self-test: ask the OS to wake this much early (a deliberately "
     "broken sleep: no_early must fail); 0 = off", .def = {0}, .ndef = 1, .min = 0,
     .max = 1000000000},
};

#define WARMUP 3

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t median(const rtb_series *s)
{
    if (!s->n)
        return 0;
    int64_t *c = rtb_mem_alloc(s->n * sizeof *c);
    if (!c)
        return 0;
    for (size_t i = 0; i < s->n; i++)
        c[i] = s->v[i];
    qsort(c, s->n, sizeof *c, cmp_i64);
    int64_t m = c[s->n / 2];
    rtb_mem_free(c);
    return m;
}

static rtb_result run(rtb_ctx *ctx)
{
    const int64_t *req;
    int points = rtb_param_list(ctx, "request_ns", &req);
    int64_t count = rtb_param(ctx, "count"), early = rtb_param(ctx, "early_ns");
    size_t cap = (size_t)count < ctx->opt->max_samples ? (size_t)count : ctx->opt->max_samples;
    /* From the case's memory, not a stack, nor RAM held for every run. */
    rtb_series *s = rtb_mem_calloc((size_t)points, sizeof *s);
    if (!s) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %d series", points);
        return RTB_ERROR;
    }
    int made = 0;
    for (; made < points; made++) {
        if (rtb_series_init(&s[made], "overshoot", cap) != RTB_OK)
            break;
        rtb_series_set_point(&s[made], "request_ns", req[made]);
    }
    if (made < points) {
        for (int i = 0; i < made; i++)
            rtb_series_free(&s[i]);
        rtb_mem_free(s);
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples", (unsigned long long)cap);
        return RTB_ERROR;
    }
    rtb_thread_self_set(rtb_attr(ctx, "clk-res", 0).priority, ctx->opt->cpu);
    /* Leave a second before the hard deadline for the records. */
    rtb_time stop_at = ctx->deadline - 1000000000;
    uint64_t early_wakes = 0, total = 0;
    int pmin = 0;
    for (int p = 1; p < points; p++)
        if (req[p] < req[pmin])
            pmin = p;
    rtb_time shortest = INT64_MAX; /* actual length of the smallest request's sleeps */
    bool truncated = false;
    for (int p = 0; p < points && !truncated; p++) {
        for (int64_t i = -WARMUP; i < count; i++) {
            rtb_time t0 = rtb_clock_now();
            if (t0 + req[p] > stop_at) {
                truncated = true;
                break;
            }
            rtb_sleep_until(t0 + req[p] - early);
            rtb_time t1 = rtb_clock_now();
            if (i < 0) /* the first sleeps fault in code paths */
                continue;
            int64_t over = t1 - (t0 + req[p]);
            rtb_series_push(&s[p], over);
            early_wakes += over < 0;
            total++;
            if (p == pmin && t1 - t0 < shortest)
                shortest = t1 - t0;
        }
    }
    rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);

    char typical[512];
    size_t len = 0;
    typical[0] = '\0';
    for (int p = 0; p < points && len < sizeof typical; p++)
        len += (size_t)snprintf(typical + len, sizeof typical - len, "%s%.1f us: %.1f us",
                                p ? ", " : "", (double)req[p] / 1e3, (double)median(&s[p]) / 1e3);
    if (!total) {
        rtb_emit_check_error(ctx, "no_early", "no sleep measured before the hard deadline");
        for (int p = 0; p < points; p++)
            rtb_series_free(&s[p]);
        rtb_mem_free(s);
        return RTB_ERROR;
    }
    rtb_emit_check(ctx, "no_early", early_wakes == 0,
                   "%llu of %llu sleeps ended before the requested time; smallest achievable "
                   "sleep %.1f us (asked %.1f us); median overshoot by request: %s",
                   (unsigned long long)early_wakes, (unsigned long long)total,
                   (double)(shortest == INT64_MAX ? 0 : shortest) / 1e3, (double)req[pmin] / 1e3,
                   typical);
    if (truncated)
        rtb_warn(ctx, "truncated", "stopped before the hard deadline: fewer than %lld sleeps "
                 "per request; lower count or raise --deadline-slack", (long long)count);
    for (int p = 0; p < points; p++) {
        rtb_emit_series(ctx, &s[p]);
        rtb_series_free(&s[p]);
    }
    rtb_mem_free(s);
    return early_wakes ? RTB_FAILED : RTB_PASSED;
}

const rtb_case rtb_case_clk_res = {
    .id = "CLK-RES",
    .title = "Timer granularity: requested vs actual sleep",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
