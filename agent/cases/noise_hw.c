/* SPDX-License-Identifier: Apache-2.0 */
/* NOISE-HW: hardware latency, the time a CPU loses while its interrupts are
 * off (hwlatdetect's method): firmware, SMIs, a hypervisor taking the CPU,
 * nothing the OS's own code can cause. For `width_us` at the start of every
 * `window_us`, a loop with interrupts off reads the timestamp counter; two
 * reads `threshold_ns` or more apart are a sample of `noise` (when it began
 * in `noise_at`), every iteration one of `loop` (histogram only).
 * Where the agent cannot turn interrupts off (a Linux process) the OS's own
 * detector does the same in its kernel (the hwlat tracer, rtb/hwlat.h) and
 * `noise` holds the gaps it reports, one per window at most (its largest);
 * where neither exists the case is unsupported with both reasons.
 * Known answer (test builds, `--inject hw_stall=NS`): a busy-wait of NS in
 * the middle of every window is one gap of at least NS per window.
 *
 * A board's RAM holds RTB_SERIES_BUFFER gaps (rtb_series_init_streamed),
 * sent after each window with the interrupts back on, so every window
 * starts with room for that many; a window with more keeps the rest in
 * the histograms only (the summary's `dropped`). */
#include <stdlib.h>

#include "../core/rtb.h"
#include "rtb/hwlat.h"

/* Iterations timed before the run to find the loop's own cost. */
#define CALIBRATION 255

static const rtb_param_def params[] = {
    {.name = "duration_ms", .help = "sampling time in all", .def = {1000}, .ndef = 1, .min = 1,
     .max = 86400000},
    {.name = "window_us", .help = "one window: interrupts off at its start, on for the rest",
     .def = {100000}, .ndef = 1, .min = 100, .max = 10000000},
    {.name = "width_us", .help = "interrupts off this long in every window", .def = {50000},
     .ndef = 1, .min = 10, .max = 10000000},
    {.name = "threshold_ns", .help = "a gap at least this long is recorded; 0: 1 us more than "
     "the loop's own median (the OS's detector: its default, hwlat 10 us)", .def = {0},
     .ndef = 1, .min = 0, .max = 1000000000},
};

typedef struct hw {
    rtb_ctx *ctx;
    rtb_series loop, noise, at;
    rtb_time threshold, sampled, noise_ns;
    int64_t windows;
    rtb_time scratch[CALIBRATION];
} hw;

static int cmp_time(const void *a, const void *b)
{
    rtb_time x = *(const rtb_time *)a, y = *(const rtb_time *)b;
    return (x > y) - (x < y);
}

/* As NOISE-OS: the loop cannot resolve a gap shorter than its own
 * iteration (microseconds on an emulated board). Timed with interrupts off,
 * doing what it does in the run. */
static rtb_time auto_threshold(hw *x)
{
    uint32_t st;
    rtb_irq_off(&st, NULL, 0);
    rtb_time prev = rtb_ts_now();
    for (int i = 0; i < CALIBRATION; i++) {
        rtb_time now = rtb_ts_now();
        rtb_hist_add(&x->loop.hist, now - prev); /* the loop's own work */
        x->scratch[i] = now - prev;
        prev = now;
    }
    rtb_irq_restore(st);
    rtb_hist_init_log2(&x->loop.hist, x->loop.hist.sub_bits); /* not samples of the run */
    qsort(x->scratch, CALIBRATION, sizeof x->scratch[0], cmp_time);
    return x->scratch[CALIBRATION / 2] + 1000;
}

/* Between windows: where the buffer holds less than the series (a
 * board), the gaps so far go out. */
static void send_gaps(hw *x)
{
    if (x->noise.n && x->noise.buffered < x->noise.limit) {
        rtb_series_flush(&x->noise);
        rtb_series_flush(&x->at);
    }
}

/* The agent's own detector: interrupts off for `width` of every window. */
static void sample(hw *x, rtb_time duration, rtb_time window, rtb_time width)
{
    rtb_time stall = RTB_INJECT_VALUE(RTB_INJ_HW_STALL);
    rtb_time first = rtb_ts_now(), release = rtb_clock_now(), end = release + duration;
    for (; release < end && !atomic_load(&x->ctx->stop); release += window) {
        rtb_sleep_until(release);
        uint32_t st;
        rtb_irq_off(&st, NULL, 0);
        rtb_time t0 = rtb_ts_now(), prev = t0, until = t0 + width;
        rtb_time stall_at = stall > 0 ? t0 + width / 2 : INT64_MAX;
        for (;;) {
            rtb_time now = rtb_ts_now(), d = now - prev;
            rtb_hist_add(&x->loop.hist, d);
            prev = now;
            if (d >= x->threshold) {
                rtb_series_push(&x->noise, d);
                rtb_series_push(&x->at, now - d - first);
                x->noise_ns += d;
                /* Recording takes longer than an iteration on a slow board:
                 * counted, it would make the next iteration a gap too. */
                prev = rtb_ts_now();
            }
            if (now >= until)
                break;
            if (now >= stall_at) { /* test builds: the known stall */
                RTB_INJECT_DELAY(RTB_INJ_HW_STALL);
                stall_at = INT64_MAX;
            }
        }
        x->sampled += prev - t0;
        rtb_irq_restore(st);
        x->windows++;
        send_gaps(x);
    }
}

static void on_gap(void *arg, rtb_time gap, rtb_time at)
{
    hw *x = arg;
    rtb_series_push(&x->noise, gap);
    rtb_series_push(&x->at, at);
    x->noise_ns += gap;
    /* The OS's detector measured it: nothing is measured here. */
    if (x->noise.buffered < x->noise.limit) {
        rtb_series_drain(&x->noise);
        rtb_series_drain(&x->at);
    }
}

static rtb_result by_the_os(rtb_ctx *ctx, hw *x, const rtb_hwlat_req *req, const char *why_irq)
{
    char why[384];
    rtb_hwlat_out out = {0};
    int r = rtb_hwlat_os(req, on_gap, x, &out, why, sizeof why);
    if (r == RTB_ENOTSUP)
        return rtb_unsupported(ctx, "%s; %s", why_irq, why);
    if (r == RTB_EPERM) {
        rtb_emit_check_skip(ctx, "sampled", "%s", why);
        return RTB_SKIPPED;
    }
    if (r != RTB_OK) {
        rtb_emit_check_error(ctx, "sampled", "%s", why);
        return RTB_ERROR;
    }
    if (out.lost > 0)
        rtb_warn(ctx, "merged", "%lld more gaps above the threshold in windows that reported "
                 "one (the detector keeps the largest of a window)", (long long)out.lost);
    rtb_emit_check(ctx, "sampled", true,
                   "%s, interrupts off %lld of every %lld us for %lld ms: %llu windows with a "
                   "gap >= %lld ns, taking %lld us", out.source, (long long)(req->width / 1000),
                   (long long)(req->window / 1000), (long long)(req->duration / 1000000),
                   (unsigned long long)x->noise.hist.n, (long long)out.threshold,
                   (long long)(x->noise_ns / 1000));
    rtb_emit_series(ctx, &x->noise);
    rtb_emit_series(ctx, &x->at);
    return RTB_PASSED;
}

static rtb_result by_the_agent(rtb_ctx *ctx, hw *x, const rtb_hwlat_req *req)
{
    x->threshold = req->threshold ? req->threshold : auto_threshold(x);
    sample(x, req->duration, req->window, req->width);
    bool ok = x->loop.hist.n > 0;
    rtb_emit_check(ctx, "sampled", ok,
                   "interrupts off %lld of every %lld us: %lld windows, %llu loop iterations in "
                   "%lld us, %llu gaps >= %lld ns taking %lld us (%.3f %% of the time)",
                   (long long)(req->width / 1000), (long long)(req->window / 1000),
                   (long long)x->windows, (unsigned long long)x->loop.hist.n,
                   (long long)(x->sampled / 1000), (unsigned long long)x->noise.hist.n,
                   (long long)x->threshold, (long long)(x->noise_ns / 1000),
                   100.0 * (double)x->noise_ns / (double)(x->sampled > 0 ? x->sampled : 1));
    if (!ok)
        return RTB_FAILED;
    rtb_emit_series(ctx, &x->loop);
    rtb_emit_series(ctx, &x->noise);
    rtb_emit_series(ctx, &x->at);
    return RTB_PASSED;
}

static rtb_result run(rtb_ctx *ctx)
{
    rtb_hwlat_req req = {
        .cpu = ctx->opt->cpu,
        .duration = rtb_param(ctx, "duration_ms") * 1000000,
        .window = rtb_param(ctx, "window_us") * 1000,
        .width = rtb_param(ctx, "width_us") * 1000,
        .threshold = rtb_param(ctx, "threshold_ns"),
    };
    if (req.width >= req.window) {
        rtb_emit_check_error(ctx, "params", "need width_us < window_us: the interrupts must "
                             "come back in every window");
        return RTB_ERROR;
    }
    hw *x = rtb_mem_calloc(1, sizeof *x);
    rtb_result r;
    if (!x) {
        rtb_emit_check_error(ctx, "buffer", "no memory");
        return RTB_ERROR;
    }
    x->ctx = ctx;
    size_t cap = ctx->opt->max_samples;
    if (rtb_series_init(&x->loop, "loop", 0) != RTB_OK ||
        rtb_series_init_streamed(&x->noise, ctx, "noise", cap) != RTB_OK ||
        rtb_series_init_streamed(&x->at, ctx, "noise_at", cap) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples",
                             (unsigned long long)cap);
        r = RTB_ERROR;
        goto out;
    }
    rtb_series_set_kind(&x->loop, RTB_KIND_DURATION);
    rtb_series_set_kind(&x->at, RTB_KIND_TIMESTAMP);
    char why[256];
    uint32_t st;
    if (rtb_irq_off(&st, why, sizeof why) == RTB_OK) {
        rtb_irq_restore(st);
        r = by_the_agent(ctx, x, &req);
    } else {
        r = by_the_os(ctx, x, &req, why);
    }
out:
    rtb_series_free(&x->at);
    rtb_series_free(&x->noise);
    rtb_series_free(&x->loop);
    rtb_mem_free(x);
    return r;
}

const rtb_case rtb_case_noise_hw = {
    .id = "NOISE-HW",
    .title = "Hardware latency with interrupts off (hwlatdetect)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
