/* SPDX-License-Identifier: Apache-2.0 */
/* SEM-NEW: semaphore create and delete time, each call timed on its own.
 * Point used=0: deleted straight after creation; used=1: given and taken
 * once in between (untimed), so the delete meets an object that has been
 * through the give/take paths. One point's two series at a time, streamed
 * (a board's 64 KiB holds two). */
#include "../core/rtb.h"

static const rtb_param_def params[] = {
    {.name = "iterations", .help = "create/delete pairs per point", .def = {10000}, .ndef = 1,
     .min = 1, .max = 10000000},
};

/* One point: `failures` counts the calls that failed. */
static void point(rtb_ctx *ctx, int used, int64_t iterations, rtb_series *cr, rtb_series *del,
                  int64_t *failures)
{
    rtb_sem s;
    for (int64_t i = 0; i < iterations && !atomic_load(&ctx->stop); i++) {
        rtb_stamp t0 = rtb_stamp_now();
        int rc = rtb_sem_create(&s, 0);
        rtb_stamp t1 = rtb_stamp_now();
        if (rc != RTB_OK) {
            (*failures)++;
            continue;
        }
        if (used) {
            rtb_sem_give(&s);
            rtb_sem_take(&s, 0);
        }
        rtb_stamp t2 = rtb_stamp_now();
        rc = rtb_sem_delete(&s);
        rtb_stamp t3 = rtb_stamp_now();
        rtb_series_push(cr, rtb_stamp_ns(t1 - t0));
        if (rc == RTB_OK)
            rtb_series_push(del, rtb_stamp_ns(t3 - t2));
        else
            (*failures)++;
        rtb_series_drain(cr); /* between windows: a full buffer goes out */
        rtb_series_drain(del);
    }
}

static rtb_result run(rtb_ctx *ctx)
{
    int64_t iterations = rtb_param(ctx, "iterations");
    size_t cap = (size_t)iterations < ctx->opt->max_samples ? (size_t)iterations
                                                            : ctx->opt->max_samples;
    rtb_thread_self_set(rtb_attr(ctx, "sem-new", 0).priority, ctx->opt->cpu);
    rtb_result r = RTB_PASSED;
    int64_t failures = 0;
    for (int used = 0; used < 2 && r == RTB_PASSED; used++) {
        rtb_series cr, del;
        if (rtb_series_init_streamed(&cr, ctx, "create", cap) != RTB_OK) {
            rtb_series_free(&cr);
            r = RTB_ERROR;
        } else if (rtb_series_init_streamed(&del, ctx, "delete", cap) != RTB_OK) {
            rtb_series_free(&del);
            rtb_series_free(&cr);
            r = RTB_ERROR;
        }
        if (r != RTB_PASSED) {
            rtb_emit_check_error(ctx, "buffer", "no memory for %llu samples",
                                 (unsigned long long)cap);
            break;
        }
        rtb_series_set_point(&cr, "used", used);
        rtb_series_set_point(&del, "used", used);
        point(ctx, used, iterations, &cr, &del, &failures);
        rtb_emit_series(ctx, &cr);
        rtb_emit_series(ctx, &del);
        rtb_series_free(&del);
        rtb_series_free(&cr);
    }
    if (failures) {
        rtb_emit_check_error(ctx, "calls", "%lld create/delete calls failed",
                             (long long)failures);
        r = RTB_ERROR;
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
