/* SPDX-License-Identifier: Apache-2.0 */
/* IRQ-RSP: interrupt response under load. IRQ-LAT's measurement repeated
 * many times at a high rate while background threads on the same CPU, at
 * a lower priority, loop over kernel calls that take locks or run with
 * preemption off (agent/loads, kind "kernel"). The raiser of the event
 * source sits on another CPU, so the load keeps the measured CPU busy.
 * min / mean / max come from the series, streamed (a board's RAM holds
 * 128 samples of it): irq_lat_measure sends its buffer between blocks of
 * events, never inside one. */
#include "rtb/load.h"
#include "irq.h"

static const rtb_param_def params[] = {
    IRQ_SOURCE_PARAM,
    {.name = "count", .help = "events per source", .def = {500000}, .ndef = 1, .min = 10,
     .max = 100000000},
    {.name = "period_us", .help = "event period (timer and raiser)", .def = {50}, .ndef = 1,
     .min = 5, .max = 1000000},
    {.name = "duration_ms", .help = "at most this long per source (fewer events if need be)",
     .def = {30000}, .ndef = 1, .min = 1, .max = 3600000},
    {.name = "load_threads", .help = "kernel-load threads on the measured CPU (0 = none)",
     .def = {2}, .ndef = 1, .min = 0, .max = 64},
    {.name = "blocker_us",
     .help = "self-test knob: a higher-priority thread on the target's CPU holds it this long "
             "across random events, so the max must reach it (0 = off)",
     .def = {0}, .ndef = 1, .min = 0, .max = 100000},
};

static rtb_result run_source(rtb_ctx *ctx, irq_lat_cfg *cfg, int nload)
{
    rtb_series s;
    size_t cap = cfg->count < ctx->opt->max_samples ? cfg->count : ctx->opt->max_samples;
    if (rtb_series_init_streamed(&s, ctx,
                                 cfg->source == IRQ_TIMER ? "timer_latency" : "raised_latency",
                                 cap) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples", (unsigned long long)cap);
        return RTB_ERROR;
    }
    int cpu = irq_cpu(ctx), prio = rtb_attr(ctx, NULL, -1).priority;
    char err[256] = "";
    rtb_load *load = NULL;
    rtb_result r = RTB_PASSED;
    int lrc = rtb_load_start(&load, "kernel", nload, cpu, prio, err, sizeof err);
    if (lrc != RTB_OK) {
        rtb_series_free(&s);
        if (lrc == RTB_ENOTSUP)
            return rtb_unsupported(ctx, "%s", err);
        rtb_emit_check_error(ctx, "load", "%s", err);
        return RTB_ERROR;
    }
    irq_lat_out out;
    int rc = irq_lat_measure(ctx, cfg, &s, &out);
    rtb_load_stats st;
    if (rtb_load_stop(load, ctx->deadline, &st) != RTB_OK) {
        rtb_emit_check_error(ctx, "load", "a load thread did not stop");
        r = RTB_ERROR;
    }
    if (rc != RTB_OK) {
        rtb_emit_check_error(ctx, cfg->source == IRQ_TIMER ? "timer_delivery" : "raised_delivery",
                             "%s could not run (error %d)", irq_mechanism(ctx, cfg->source), rc);
        r = RTB_ERROR;
    } else {
        if (!irq_lat_check(ctx, cfg, &out) && r == RTB_PASSED)
            r = RTB_FAILED;
        char name[32];
        snprintf(name, sizeof name, "%s_load", irq_source_name(cfg->source));
        if (nload == 0) {
            rtb_emit_check(ctx, name, true, "no load (load_threads=0)");
        } else if (st.ops_total == 0) {
            rtb_emit_check_error(ctx, name, "the kernel load never completed a call: the "
                                 "figure was not measured under load");
            r = RTB_ERROR;
        } else {
            /* A busy machine (another real-time task on this CPU) may keep
             * one load thread out: less load, still a measurement. */
            if (st.ops_min == 0)
                rtb_warn(ctx, "load_idle", "a kernel-load thread completed no call: part of "
                         "the figure was taken under less load than asked");
            rtb_emit_check(ctx, name, true,
                           "%d kernel-load threads on CPU %d at priority %d: %llu calls (the "
                           "least busy %llu)",
                           st.threads, cpu, prio, (unsigned long long)st.ops_total,
                           (unsigned long long)st.ops_min);
        }
        rtb_emit_series(ctx, &s);
    }
    rtb_series_free(&s);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    const int64_t *sources;
    int nsrc = rtb_param_list(ctx, "source", &sources);
    rtb_time period = rtb_param(ctx, "period_us") * 1000;
    rtb_time duration = rtb_param(ctx, "duration_ms") * 1000000;
    int nload = (int)rtb_param(ctx, "load_threads");
    char why[256];
    if (rtb_load_check("kernel", nload, why, sizeof why) == RTB_ENOTSUP)
        return rtb_unsupported(ctx, "%s", why); /* before any buffer is held */
    rtb_result worst = RTB_PASSED;
    for (int i = 0; i < nsrc; i++) {
        irq_lat_cfg cfg = {.source = (int)sources[i],
                           .count = (size_t)rtb_param(ctx, "count"),
                           .period = period,
                           .raiser_remote = true,
                           .blocker = rtb_param(ctx, "blocker_us") * 1000};
        if ((rtb_time)cfg.count > duration / period) {
            rtb_warn(ctx, "duration", "%s: %llu events of %lld ns exceed duration_ms: running %lld",
                     irq_source_name(cfg.source), (unsigned long long)cfg.count,
                     (long long)period, (long long)(duration / period));
            cfg.count = duration / period > 0 ? (size_t)(duration / period) : 1;
        }
        cfg.count = irq_fit_count(ctx, cfg.count, period * (nsrc - i));
        rtb_result r = run_source(ctx, &cfg, nload);
        if (r == RTB_UNSUPPORTED) /* no loads on this port: no source can run */
            return r;
        if (r == RTB_ERROR || (r == RTB_FAILED && worst == RTB_PASSED))
            worst = r;
    }
    return worst;
}

const rtb_case rtb_case_irq_rsp = {
    .id = "IRQ-RSP",
    .title = "Interrupt response under kernel load: event to handler, many times",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .headline = 3,
};
