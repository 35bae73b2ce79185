/* SPDX-License-Identifier: Apache-2.0 */
/* SEM-ARN: give and take without contention. One thread, no waiter: the
 * give finds nobody to wake and the take finds a unit, so neither call
 * blocks nor switches. Each call is timed on its own. */
#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "iterations", .help = "give/take pairs", .def = {10000}, .ndef = 1, .min = 1,
     .max = 100000000},
};

static rtb_result run(rtb_ctx *ctx)
{
    int64_t iterations = rtb_param(ctx, "iterations");
    size_t cap = (size_t)iterations < ctx->opt->max_samples ? (size_t)iterations
                                                            : ctx->opt->max_samples;
    rtb_series give, take;
    rtb_sem s;
    if (rtb_series_init_streamed(&give, ctx, "give", cap) != RTB_OK) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples", (unsigned long long)cap);
        return RTB_ERROR;
    }
    if (rtb_series_init_streamed(&take, ctx, "take", cap) != RTB_OK || rtb_sem_create(&s, 0) != RTB_OK) {
        rtb_series_free(&give);
        rtb_emit_check_error(ctx, "setup", "no memory for %llu samples or no semaphore",
                             (unsigned long long)cap);
        return RTB_ERROR;
    }
    rtb_thread_self_set(rtb_attr(ctx, "sem-arn", 0).priority, ctx->opt->cpu);
    int64_t failures = 0;
    for (int64_t i = 0; i < iterations && !atomic_load(&ctx->stop); i++) {
        rtb_stamp t0 = rtb_stamp_now();
        int rg = rtb_sem_give(&s);
        rtb_stamp t1 = rtb_stamp_now();
        /* The blocking form, as a task would call it: it must not block. */
        int rt = rtb_sem_take(&s, ctx->deadline);
        rtb_stamp t2 = rtb_stamp_now();
        if (rg != RTB_OK || rt != RTB_OK) {
            failures++;
            continue;
        }
        rtb_series_push(&give, rtb_stamp_ns(t1 - t0));
        rtb_series_push(&take, rtb_stamp_ns(t2 - t1));
        rtb_series_drain(&give); /* between windows: a full buffer goes out */
        rtb_series_drain(&take);
    }
    rtb_sem_delete(&s);
    rtb_result r = RTB_PASSED;
    if (failures) {
        rtb_emit_check_error(ctx, "calls", "%lld give/take pairs failed", (long long)failures);
        r = RTB_ERROR;
    }
    rtb_emit_series(ctx, &take);
    rtb_emit_series(ctx, &give);
    rtb_series_free(&give);
    rtb_series_free(&take);
    return r;
}

const rtb_case rtb_case_sem_arn = {
    .id = "SEM-ARN",
    .title = "Semaphore give / take without contention",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
