/* SPDX-License-Identifier: Apache-2.0 */
/* JIT-DL: releases of a deadline task (cyclicdeadline's method). A thread
 * made a deadline task (runtime R in every period P, each job due D after
 * its release; rtb/deadline.h) sleeps until each planned release, works
 * `work_us` and sleeps again. Samples: `latency`, wake-up minus planned
 * release; `response`, end of the job minus its release. A job that ends
 * after release + D is a deadline miss: the `deadlines` check fails on any.
 * A job that needs more than its runtime is throttled by the kernel until
 * its next period and misses: the known answer (work_us > runtime_us). */
#include "../core/rtb.h"
#include "rtb/deadline.h"

static const rtb_param_def params[] = {
    {.name = "period_us", .help = "release period P", .def = {1000}, .ndef = 1, .min = 100,
     .max = 10000000},
    {.name = "runtime_us", .help = "CPU time granted per period R", .def = {300}, .ndef = 1,
     .min = 10, .max = 10000000},
    {.name = "deadline_us", .help = "relative deadline D (0: the period)", .def = {0}, .ndef = 1,
     .min = 0, .max = 10000000},
    {.name = "work_us", .help = "busy work per job", .def = {50}, .ndef = 1, .min = 0,
     .max = 10000000},
    {.name = "cycles", .help = "releases", .def = {1000}, .ndef = 1, .min = 1,
     .max = 100000000},
};

typedef struct dl {
    rtb_ctx *ctx;
    rtb_time period, runtime, deadline, work;
    int64_t cycles, jobs, misses, skipped;
    rtb_series lat, resp;
    int status; /* of rtb_thread_self_deadline */
    char why[256];
} dl;

static void dl_main(void *arg)
{
    dl *x = arg;
    x->status = rtb_thread_self_deadline(x->runtime, x->deadline, x->period, x->why,
                                         sizeof x->why);
    if (x->status != RTB_OK)
        return;
    rtb_time next = rtb_clock_now() + x->period;
    for (int64_t i = 0; i < x->cycles && !atomic_load_explicit(&x->ctx->stop,
                                                               memory_order_relaxed); i++) {
        rtb_sleep_until(next);
        rtb_time woke = rtb_clock_now();
        while (rtb_clock_now() < woke + x->work)
            ;
        rtb_time end = rtb_clock_now();
        rtb_series_push(&x->lat, woke - next);
        rtb_series_push(&x->resp, end - next);
        x->jobs++;
        x->misses += end > next + x->deadline;
        /* A job that ended past its next release lost those releases. */
        for (next += x->period; next <= end; next += x->period)
            x->skipped++;
    }
}

static rtb_result finish(rtb_ctx *ctx, dl *x)
{
    if (x->status == RTB_ENOTSUP)
        return rtb_unsupported(ctx, "%s", x->why);
    if (x->status == RTB_EPERM) {
        rtb_emit_check_skip(ctx, "deadlines", "%s", x->why);
        return RTB_SKIPPED;
    }
    if (x->status != RTB_OK) {
        rtb_emit_check_error(ctx, "deadline_task", "%s", x->why);
        return RTB_ERROR;
    }
    rtb_emit_check(ctx, "deadlines", x->misses == 0,
                   "%lld of %lld jobs ended after their deadline (%lld us after release), "
                   "%lld releases lost to late jobs; runtime %lld us, work %lld us per job",
                   (long long)x->misses, (long long)x->jobs, (long long)(x->deadline / 1000),
                   (long long)x->skipped, (long long)(x->runtime / 1000),
                   (long long)(x->work / 1000));
    rtb_emit_series(ctx, &x->lat);
    rtb_emit_series(ctx, &x->resp);
    return x->misses == 0 ? RTB_PASSED : RTB_FAILED;
}

static rtb_result run(rtb_ctx *ctx)
{
    dl *x = rtb_mem_calloc(1, sizeof *x);
    if (!x) {
        rtb_emit_check_error(ctx, "buffer", "no memory");
        return RTB_ERROR;
    }
    x->ctx = ctx;
    x->period = rtb_param(ctx, "period_us") * 1000;
    x->runtime = rtb_param(ctx, "runtime_us") * 1000;
    x->deadline = rtb_param(ctx, "deadline_us") * 1000;
    if (!x->deadline)
        x->deadline = x->period;
    x->work = rtb_param(ctx, "work_us") * 1000;
    x->cycles = rtb_param(ctx, "cycles");
    x->status = RTB_EFAIL;
    if (x->runtime > x->deadline || x->deadline > x->period) {
        rtb_mem_free(x);
        rtb_emit_check_error(ctx, "params", "need runtime_us <= deadline_us <= period_us");
        return RTB_ERROR;
    }
    size_t cap = (size_t)x->cycles < ctx->opt->max_samples ? (size_t)x->cycles
                                                           : ctx->opt->max_samples;
    rtb_result r;
    if (rtb_series_init(&x->lat, "latency", cap) != RTB_OK ||
        rtb_series_init(&x->resp, "response", cap) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples",
                             (unsigned long long)cap);
        r = RTB_ERROR;
        goto out;
    }
    rtb_series_set_kind(&x->resp, RTB_KIND_DURATION);
    rtb_thread th;
    rtb_thread_attr a = rtb_attr(ctx, "jit-dl", 0);
    a.cpu = -1; /* a deadline task may run on any CPU of its domain */
    if (rtb_thread_create(&th, &a, dl_main, x) != RTB_OK) {
        rtb_emit_check_error(ctx, "thread", "cannot start the deadline task");
        r = RTB_ERROR;
        goto out;
    }
    r = rtb_join_all(ctx, &th, 1) == RTB_OK ? finish(ctx, x) : RTB_ERROR;
out:
    rtb_series_free(&x->resp);
    rtb_series_free(&x->lat);
    rtb_mem_free(x);
    return r;
}

static const char *unsupported_here(const rtb_port_info *port)
{
    (void)port;
    return rtb_deadline_missing();
}

static rtb_time expected(const rtb_ctx *ctx)
{
    return rtb_param(ctx, "cycles") * rtb_param(ctx, "period_us") * 1000;
}

const rtb_case rtb_case_jit_dl = {
    .id = "JIT-DL",
    .title = "Deadline task releases, misses and overruns",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .unsupported_here = unsupported_here,
    .run = run,
    .expected_ns = expected,
};
