/* SPDX-License-Identifier: Apache-2.0 */
/* TM-SYNC: synchronisation processing (Thread-Metric). One worker takes
 * and gives back a semaphore; the score is pairs a second. */
#include "tm.h"

static const rtb_param_def params[] = {TM_PARAMS};

static void worker(void *arg)
{
    tm_worker *w = arg;
    rtb_sem *s = w->t->arg;
    while (tm_running(w->t)) {
        if (rtb_sem_take(s, 0) != RTB_OK)
            break;
        rtb_sem_give(s);
        tm_count(w);
    }
}

static rtb_result run(rtb_ctx *ctx)
{
    rtb_sem *s = rtb_mem_calloc(1, sizeof *s);
    if (!s || rtb_sem_create(s, 1) != RTB_OK) {
        rtb_mem_free(s);
        rtb_emit_check_error(ctx, "setup", "no memory or no semaphore");
        return RTB_ERROR;
    }
    rtb_result r = tm_one(ctx, &(tm_spec){.fn = worker, .n = 1, .name = "tm-sync", .arg = s});
    rtb_sem_delete(s);
    rtb_mem_free(s);
    return r;
}

const rtb_case rtb_case_tm_sync = {
    .id = "TM-SYNC",
    .title = "Throughput: synchronisation (semaphore take and give)",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
