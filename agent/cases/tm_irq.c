/* SPDX-License-Identifier: Apache-2.0 */
/* TM-IRQ: interrupt processing (Thread-Metric). One worker raises the
 * port's event (a software-triggered interrupt; POSIX: a signal to
 * itself); the handler gives a semaphore the worker then takes. The score
 * is interrupts handled a second. */
#include "tm.h"

static const rtb_param_def params[] = {TM_PARAMS};

typedef struct irq_objs {
    rtb_sem sem;
    rtb_event ev;
    int status; /* of rtb_event_create in the worker */
} irq_objs;

static void handler(void *arg) { rtb_sem_give_isr(&((irq_objs *)arg)->sem); }

static void worker(void *arg)
{
    tm_worker *w = arg;
    irq_objs *o = w->t->arg;
    /* Created here: its handler interrupts this thread. */
    o->status = rtb_event_create(&o->ev, handler, o, NULL);
    while (o->status == RTB_OK && tm_running(w->t)) {
        if (rtb_event_raise(&o->ev) != RTB_OK ||
            rtb_sem_take(&o->sem, w->t->ctx->deadline) != RTB_OK)
            break;
        tm_count(w);
    }
    if (o->status == RTB_OK)
        rtb_event_delete(&o->ev);
}

static rtb_result run(rtb_ctx *ctx)
{
    tm *t = rtb_mem_calloc(1, sizeof *t);
    irq_objs *o = rtb_mem_calloc(1, sizeof *o);
    if (!t || !o || rtb_sem_create(&o->sem, 0) != RTB_OK) {
        rtb_mem_free(o);
        rtb_mem_free(t);
        rtb_emit_check_error(ctx, "setup", "no memory or no semaphore");
        return RTB_ERROR;
    }
    t->ctx = ctx;
    t->arg = o;
    rtb_thread_attr a = rtb_attr(ctx, "tm-irq", 0);
    rtb_result r = tm_run(ctx, t, &a, worker, 1);
    if (r == RTB_PASSED && o->status != RTB_OK) {
        rtb_emit_check_error(ctx, "event", "no event source (status %d)", o->status);
        r = RTB_ERROR;
    }
    rtb_sem_delete(&o->sem);
    rtb_mem_free(o);
    rtb_mem_free(t);
    return r;
}

const rtb_case rtb_case_tm_irq = {
    .id = "TM-IRQ",
    .title = "Throughput: interrupt processing",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
