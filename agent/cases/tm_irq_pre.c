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
    rtb_thread_attr a[2] = {rtb_attr(ctx, "tm-irq-low", 0), rtb_attr(ctx, "tm-irq-high", 1)};
    return tm_irq_case(ctx, a, worker, 2, 1, "every interrupt wakes the higher worker");
}

const rtb_case rtb_case_tm_irq_pre = {
    .id = "TM-IRQ-PRE",
    .title = "Throughput: interrupt preemption",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
