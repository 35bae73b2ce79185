/* SPDX-License-Identifier: Apache-2.0 */
/* TM-IRQ: interrupt processing (Thread-Metric). One worker raises the
 * port's event (a software-triggered interrupt; POSIX: a signal to
 * itself); the handler gives a semaphore the worker then takes. The score
 * is interrupts handled a second. */
#include "tm.h"

static const rtb_param_def params[] = {TM_PARAMS};

static void worker(void *arg)
{
    tm_worker *w = arg;
    tm_irq *o = w->t->arg;
    if (!tm_irq_open(o))
        return;
    while (tm_running(w->t) && rtb_event_raise(&o->ev) == RTB_OK &&
           rtb_sem_take(&o->sem, w->t->ctx->deadline) == RTB_OK)
        tm_count(w);
}

static rtb_result run(rtb_ctx *ctx)
{
    return tm_irq_one(ctx, (tm_spec){.fn = worker, .n = 1, .name = "tm-irq"});
}

const rtb_case rtb_case_tm_irq = {
    .id = "TM-IRQ",
    .title = "Throughput: interrupt processing",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
