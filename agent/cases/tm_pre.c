/* SPDX-License-Identifier: Apache-2.0 */
/* TM-PRE: preemptive scheduling (Thread-Metric). Five workers of rising
 * priority on one CPU: the lowest counts and wakes the next, which preempts
 * it, counts and wakes the next... up to the highest, then each blocks
 * again in turn. The score is counts a second (five a round); every worker
 * counts every round. */
#include "tm.h"

static const rtb_param_def params[] = {TM_PARAMS};

static void unblock(tm *t)
{
    rtb_sem *s = t->arg;
    for (int i = 1; i < TM_MAX_WORKERS; i++)
        rtb_sem_give(&s[i]);
}

static void worker(void *arg)
{
    tm_worker *w = arg;
    rtb_sem *s = w->t->arg;
    while (tm_running(w->t)) {
        if (w->i > 0 && (rtb_sem_take(&s[w->i], w->t->ctx->deadline) != RTB_OK ||
                         !tm_running(w->t)))
            break;
        tm_count(w);
        if (w->i + 1 < TM_MAX_WORKERS)
            rtb_sem_give(&s[w->i + 1]);
    }
}

static rtb_result run(rtb_ctx *ctx)
{
    rtb_sem *s = rtb_mem_calloc(TM_MAX_WORKERS, sizeof *s);
    int made = 1; /* s[0] is never used */
    rtb_result r = RTB_ERROR;
    if (!s) {
        rtb_emit_check_error(ctx, "buffer", "no memory");
        goto out;
    }
    while (made < TM_MAX_WORKERS && rtb_sem_create(&s[made], 0) == RTB_OK)
        made++;
    if (made < TM_MAX_WORKERS) {
        rtb_emit_check_error(ctx, "setup", "no semaphore");
        goto out;
    }
    r = tm_one(ctx, &(tm_spec){.fn = worker,
                               .n = TM_MAX_WORKERS,
                               .name = "tm-pre",
                               .prio_step = 1,
                               .arg = s,
                               .unblock = unblock,
                               .spread = 1,
                               .what = "each round wakes all five"});
out:
    while (--made > 0)
        rtb_sem_delete(&s[made]);
    rtb_mem_free(s);
    return r;
}

const rtb_case rtb_case_tm_pre = {
    .id = "TM-PRE",
    .title = "Throughput: preemptive scheduling",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
