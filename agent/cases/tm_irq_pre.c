/* SPDX-License-Identifier: Apache-2.0 */
/* TM-IRQ-PRE: interrupt preemption processing (Thread-Metric). A low
 * worker raises the port's event; the handler gives a semaphore a higher
 * worker waits on, which preempts the low one as the interrupt returns,
 * counts and waits again; then the low one counts. The score is counts a
 * second (two a round), and both count every round. */
#include "tm.h"

static const rtb_param_def params[] = {TM_PARAMS};

typedef struct pre_objs {
    rtb_sem sem;
    rtb_event ev;
    int status;
} pre_objs;

static void handler(void *arg) { rtb_sem_give_isr(&((pre_objs *)arg)->sem); }

static void unblock(tm *t) { rtb_sem_give(&((pre_objs *)t->arg)->sem); }

static void worker(void *arg)
{
    tm_worker *w = arg;
    pre_objs *o = w->t->arg;
    if (w->i == 1) { /* the high one */
        while (rtb_sem_take(&o->sem, w->t->ctx->deadline) == RTB_OK && tm_running(w->t))
            tm_count(w);
        return;
    }
    o->status = rtb_event_create(&o->ev, handler, o, NULL);
    while (o->status == RTB_OK && tm_running(w->t)) {
        if (rtb_event_raise(&o->ev) != RTB_OK)
            break;
        tm_count(w);
    }
    if (o->status == RTB_OK)
        rtb_event_delete(&o->ev);
}

static rtb_result run(rtb_ctx *ctx)
{
    tm *t = rtb_mem_calloc(1, sizeof *t);
    pre_objs *o = rtb_mem_calloc(1, sizeof *o);
    if (!t || !o || rtb_sem_create(&o->sem, 0) != RTB_OK) {
        rtb_mem_free(o);
        rtb_mem_free(t);
        rtb_emit_check_error(ctx, "setup", "no memory or no semaphore");
        return RTB_ERROR;
    }
    t->ctx = ctx;
    t->arg = o;
    t->unblock = unblock;
    rtb_thread_attr a[2] = {rtb_attr(ctx, "tm-irq-low", 0), rtb_attr(ctx, "tm-irq-high", 1)};
    rtb_result r = tm_run(ctx, t, a, worker, 2);
    if (r == RTB_PASSED && o->status != RTB_OK) {
        rtb_emit_check_error(ctx, "event", "no event source (status %d)", o->status);
        r = RTB_ERROR;
    }
    if (r == RTB_PASSED && !tm_even(ctx, t, 2, 1, "every interrupt wakes the higher worker"))
        r = RTB_FAILED;
    rtb_sem_delete(&o->sem);
    rtb_mem_free(o);
    rtb_mem_free(t);
    return r;
}

const rtb_case rtb_case_tm_irq_pre = {
    .id = "TM-IRQ-PRE",
    .title = "Throughput: interrupt preemption",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
