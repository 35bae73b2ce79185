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
    return tm_one(ctx, &(tm_spec){
                           .fn = worker,
                           .n = TM_MAX_WORKERS,
                           .name = "tm-coop",
                           .spread = 1,
                           .spread_per_window = 1,
                           .what = "yields rotate in order, one more per preemption by the monitor",
                       });
}

const rtb_case rtb_case_tm_coop = {
    .id = "TM-COOP",
    .title = "Throughput: cooperative scheduling",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
    .unsupported_here = rtb_needs_shared_priorities,
};
