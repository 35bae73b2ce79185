/* SPDX-License-Identifier: Apache-2.0 */
/* TM-COOP: cooperative scheduling (Thread-Metric). Five workers of one
 * priority on one CPU each count and yield: the score is yields a second,
 * and the rotation is strict: every count within one of the others, plus
 * one for each time the monitor preempted a worker (a kernel may then
 * resume the next worker, not the preempted one: FreeRTOS does). */
#include "tm.h"

static const rtb_param_def params[] = {TM_PARAMS};

static void worker(void *arg)
{
    tm_worker *w = arg;
    while (tm_running(w->t)) {
        tm_count(w);
        rtb_thread_yield();
    }
}

static rtb_result run(rtb_ctx *ctx)
{
    tm *t = rtb_mem_calloc(1, sizeof *t);
    if (!t) {
        rtb_emit_check_error(ctx, "buffer", "no memory");
        return RTB_ERROR;
    }
    t->ctx = ctx;
    rtb_thread_attr a[TM_MAX_WORKERS];
    for (int i = 0; i < TM_MAX_WORKERS; i++)
        a[i] = rtb_attr(ctx, "tm-coop", 0);
    rtb_result r = tm_run(ctx, t, a, worker, TM_MAX_WORKERS);
    if (r == RTB_PASSED &&
        !tm_even(ctx, t, TM_MAX_WORKERS, 1 + (uint64_t)t->windows,
                 "yields rotate in order, one more per preemption by the monitor"))
        r = RTB_FAILED;
    rtb_mem_free(t);
    return r;
}

const rtb_case rtb_case_tm_coop = {
    .id = "TM-COOP",
    .title = "Throughput: cooperative scheduling",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .unsupported_here = rtb_needs_shared_priorities,
};
