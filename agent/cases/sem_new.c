/* SPDX-License-Identifier: Apache-2.0 */
/* SEM-NEW: semaphore create and delete time, each call timed on its own.
 * Point used=0: deleted straight after creation; used=1: given and taken
 * once in between (untimed), so the delete meets an object that has been
 * through the give/take paths. */
#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "iterations", .help = "create/delete pairs per point", .def = {10000}, .ndef = 1,
     .min = 1, .max = 10000000},
};

static rtb_result run(rtb_ctx *ctx)
{
    int64_t iterations = rtb_param(ctx, "iterations");
    size_t cap = (size_t)iterations < ctx->opt->max_samples ? (size_t)iterations
                                                            : ctx->opt->max_samples;
    rtb_series cr[2], del[2];
    int ready = 0;
    for (; ready < 2; ready++) {
        if (rtb_series_init(&cr[ready], "create", cap) != RTB_OK)
            break;
        if (rtb_series_init(&del[ready], "delete", cap) != RTB_OK) {
            rtb_series_free(&cr[ready]);
            break;
        }
        rtb_series_set_point(&cr[ready], "used", ready);
        rtb_series_set_point(&del[ready], "used", ready);
    }
    rtb_result r = RTB_PASSED;
    if (ready < 2) {
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples", (unsigned long long)cap);
        r = RTB_ERROR;
    }
    rtb_thread_self_set(rtb_attr(ctx, "sem-new", 0).priority, ctx->opt->cpu);
    rtb_sem s;
    int64_t failures = 0;
    for (int used = 0; used < 2 && r == RTB_PASSED; used++) {
        for (int64_t i = 0; i < iterations && !atomic_load(&ctx->stop); i++) {
            rtb_stamp t0 = rtb_stamp_now();
            int rc = rtb_sem_create(&s, 0);
            rtb_stamp t1 = rtb_stamp_now();
            if (rc != RTB_OK) {
                failures++;
                continue;
            }
            if (used) {
                rtb_sem_give(&s);
                rtb_sem_take(&s, 0);
            }
            rtb_stamp t2 = rtb_stamp_now();
            rc = rtb_sem_delete(&s);
            rtb_stamp t3 = rtb_stamp_now();
            rtb_series_push(&cr[used], rtb_stamp_ns(t1 - t0));
            if (rc == RTB_OK)
                rtb_series_push(&del[used], rtb_stamp_ns(t3 - t2));
            else
                failures++;
        }
    }
    if (failures) {
        rtb_emit_check_error(ctx, "calls", "%lld create/delete calls failed",
                             (long long)failures);
        r = RTB_ERROR;
    }
    for (int i = 0; i < ready; i++) {
        rtb_emit_series(ctx, &cr[i]);
        rtb_emit_series(ctx, &del[i]);
        rtb_series_free(&cr[i]);
        rtb_series_free(&del[i]);
    }
    return r;
}

const rtb_case rtb_case_sem_new = {
    .id = "SEM-NEW",
    .title = "Semaphore create / delete time, unused and used",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
