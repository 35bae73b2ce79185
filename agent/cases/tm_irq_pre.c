/* SPDX-License-Identifier: Apache-2.0 */
/* TM-IRQ-PRE: interrupt preemption processing (Thread-Metric). A low
 * worker raises the port's event; the handler gives a semaphore a higher
 * worker waits on, which preempts the low one as the interrupt returns,
 * counts and waits again; then the low one counts. The score is counts a
 * second (two a round), and both count every round. */
#include "tm.h"

static const rtb_param_def params[] = {TM_PARAMS};

static void worker(void *arg)
{
    tm_worker *w = arg;
    tm_irq *o = w->t->arg;
    if (w->i == 1) { /* the high one */
        while (rtb_sem_take(&o->sem, w->t->ctx->deadline) == RTB_OK && tm_running(w->t))
            tm_count(w);
        return;
    }
    if (!tm_irq_open(o))
        return;
    while (tm_running(w->t) && rtb_event_raise(&o->ev) == RTB_OK)
        tm_count(w);
}

static rtb_result run(rtb_ctx *ctx)
{
    static const char *const names[] = {"tm-irq-low", "tm-irq-high"};
    return tm_irq_one(ctx, (tm_spec){.fn = worker,
                                     .n = 2,
                                     .names = names,
                                     .prio_step = 1,
                                     .spread = 1,
                                     .what = "every interrupt wakes the higher worker"});
}

const rtb_case rtb_case_tm_irq_pre = {
    .id = "TM-IRQ-PRE",
    .title = "Throughput: interrupt preemption",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
