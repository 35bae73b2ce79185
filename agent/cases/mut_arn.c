/* SPDX-License-Identifier: Apache-2.0 */
/* MUT-ARN: mutex lock / unlock without contention, the fast path. One
 * thread alone on the measurement CPU locks and unlocks; each call is timed
 * on its own. */
#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "iterations", .help = "lock/unlock pairs timed", .def = {10000}, .ndef = 1,
     .min = 1, .max = 100000000},
    {.name = "pi", .help = "1: priority-inheritance mutex (as RTOS mutexes are), 0: plain",
     .def = {1}, .ndef = 1, .min = 0, .max = 1},
};

#define WARMUP 100

static rtb_result run(rtb_ctx *ctx)
{
    size_t n = (size_t)rtb_param(ctx, "iterations");
    rtb_series lock, unlock;
    rtb_mutex m;
    size_t cap = n < ctx->opt->max_samples ? n : ctx->opt->max_samples;
    if (rtb_series_init_streamed(&lock, ctx, "lock", cap) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples", (unsigned long long)cap);
        return RTB_ERROR;
    }
    if (rtb_series_init_streamed(&unlock, ctx, "unlock", cap) != RTB_OK) {
        rtb_series_free(&lock);
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples", (unsigned long long)cap);
        return RTB_ERROR;
    }
    rtb_result r = RTB_PASSED;
    int rc = rtb_mutex_create(&m, rtb_param(ctx, "pi") ? RTB_MUTEX_PI : 0);
    if (rc != RTB_OK) {
        rtb_emit_check_error(ctx, "mutex", "rtb_mutex_create failed (%d)", rc);
        r = RTB_ERROR;
    } else {
        rtb_thread_self_set(RTB_PRIO_MAX - 1, ctx->opt->cpu);
        for (int i = 0; i < WARMUP; i++) {
            rtb_mutex_lock(&m);
            rtb_mutex_unlock(&m);
        }
        int bad = 0;
        for (size_t i = 0; i < n && !atomic_load_explicit(&ctx->stop, memory_order_relaxed);
             i++) {
            rtb_stamp t0 = rtb_stamp_now();
            int a = rtb_mutex_lock(&m);
            rtb_stamp t1 = rtb_stamp_now();
            int b = rtb_mutex_unlock(&m);
            rtb_stamp t2 = rtb_stamp_now();
            rtb_series_push(&lock, rtb_stamp_ns(t1 - t0));
            rtb_series_push(&unlock, rtb_stamp_ns(t2 - t1));
            bad += (a != RTB_OK) + (b != RTB_OK);
            rtb_series_drain(&lock); /* between windows: a full buffer goes out */
            rtb_series_drain(&unlock);
        }
        rtb_mutex_delete(&m);
        if (bad) {
            rtb_emit_check_error(ctx, "mutex", "%d lock/unlock calls failed", bad);
            r = RTB_ERROR;
        }
    }
    rtb_emit_series(ctx, &lock);
    rtb_emit_series(ctx, &unlock);
    rtb_series_free(&lock);
    rtb_series_free(&unlock);
    return r;
}

const rtb_case rtb_case_mut_arn = {
    .id = "MUT-ARN",
    .title = "Mutex lock / unlock, no contention",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
