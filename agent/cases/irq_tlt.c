/* SPDX-License-Identifier: Apache-2.0 */
/* IRQ-TLT: interrupt to thread. The handler stamps and gives a semaphore
 * that the highest-priority thread waits on; the sample is from that stamp
 * until the woken thread runs and stamps. The interrupted thread spins at
 * a lower priority on the same CPU (irq_spin.c), so the give must switch.
 *
 * Check `highest_first`: the woken thread ran after the handler's stamp
 * and before the interrupted thread resumed (priority decides; without
 * real-time priority the check is an error). Known answer: a delay
 * injected into the give (give_delay) shows in every sample. */
#include <stdlib.h>
#include <string.h>

#include "irq.h"

static const rtb_param_def params[] = {
    IRQ_SOURCE_PARAM,
    IRQ_SPIN_PARAMS,
    {.name = "waiter_prio", .help = "priority of the woken thread relative to the interrupted "
                                    "one (self-test: <= 0 makes it not the highest)",
     .def = {2}, .ndef = 1, .min = -2, .max = 10},
};

typedef struct tlt {
    rtb_ctx *ctx;
    irq_spin *sp;
    rtb_sem wake;
    atomic_bool done;
    rtb_time *h_ts, *w_ts;
    size_t cap, nw;
    rtb_series s;
    size_t paired, late, bad, woken; /* over the blocks so far */
} tlt;

static void handler(void *arg)
{
    tlt *x = arg;
    size_t k = irq_spin_enter(x->sp);
    if (k < x->cap)
        x->h_ts[k] = rtb_ts_now();
    rtb_sem_give_isr(&x->wake);
    irq_spin_leave(x->sp, k);
}

static void waiter_main(void *arg)
{
    tlt *x = arg;
    while (rtb_sem_take(&x->wake, x->ctx->deadline) == RTB_OK) {
        rtb_time t = rtb_ts_now();
        if (atomic_load(&x->done) || x->nw == x->cap)
            break;
        x->w_ts[x->nw++] = t;
    }
}

static void on_finish(void *arg)
{
    tlt *x = arg;
    atomic_store(&x->done, true);
    rtb_sem_give(&x->wake);
}

/* After each block (irq_spin_run), nothing measured: the k-th give wakes
 * the k-th take, pair them. The waiter is blocked on its semaphore: every
 * give of the block was taken before the target's last stamp (it outranks
 * the target), so the next block's wake-ups start again at 0. */
static void on_block(void *arg, size_t handled)
{
    tlt *x = arg;
    size_t n = handled < x->nw ? handled : x->nw;
    for (size_t k = 0; k < n; k++) {
        rtb_time w = x->w_ts[k], h = x->h_ts[k], resume = irq_spin_resume_of(x->sp, k);
        rtb_series_push(&x->s, w - h);
        rtb_series_drain(&x->s);
        if (w < h || (k + 1 < n && w > x->h_ts[k + 1]))
            x->bad++; /* not this handler's wake-up */
        else if (resume && w > resume)
            x->late++; /* the interrupted thread ran first */
    }
    x->paired += n;
    x->woken += x->nw;
    x->nw = 0;
    memset(x->h_ts, 0, x->cap * sizeof *x->h_ts);
    memset(x->w_ts, 0, x->cap * sizeof *x->w_ts);
}

static rtb_result run_source(rtb_ctx *ctx, int source, size_t count, rtb_time period)
{
    tlt x = {.ctx = ctx, .cap = rtb_stamp_block(count)};
    x.h_ts = rtb_mem_calloc(x.cap, sizeof *x.h_ts);
    x.w_ts = rtb_mem_calloc(x.cap, sizeof *x.w_ts);
    rtb_series *s = &x.s;
    size_t cap = count < ctx->opt->max_samples ? count : ctx->opt->max_samples;
    irq_spin_cfg cfg = {.source = source, .count = count, .period = period, .handler = handler,
                        .arg = &x, .on_finish = on_finish, .on_block = on_block};
    x.sp = irq_spin_new(ctx, &cfg);
    if (!x.h_ts || !x.w_ts || !x.sp ||
        rtb_series_init_streamed(s, ctx, source == IRQ_TIMER ? "timer_to_thread"
                                                              : "raised_to_thread",
                                 cap) != RTB_OK) {
        rtb_mem_free(x.h_ts);
        rtb_mem_free(x.w_ts);
        irq_spin_free(x.sp);
        rtb_emit_check_error(ctx, "buffer", "no memory for %llu events", (unsigned long long)count);
        return RTB_ERROR;
    }
    memset(x.h_ts, 0, x.cap * sizeof *x.h_ts);
    memset(x.w_ts, 0, x.cap * sizeof *x.w_ts);
    rtb_sem_create(&x.wake, 0);
    int prio = (int)rtb_param(ctx, "waiter_prio");
    rtb_thread_attr aw = irq_attr(ctx, "irq-waiter", prio, irq_cpu(ctx));
    rtb_thread w;
    rtb_thread_self_set(RTB_PRIO_MAX - 1, irq_cpu(ctx));
    int rc = rtb_thread_create(&w, &aw, waiter_main, &x);
    irq_spin_out out;
    if (rc == RTB_OK) {
        rc = irq_spin_run(x.sp, &out);
        if (rtb_join_all(ctx, &w, 1) != RTB_OK)
            rc = RTB_EFAIL;
    }
    rtb_result r = RTB_PASSED;
    if (rc != RTB_OK) {
        irq_spin_run_error(ctx, source, rc);
        r = RTB_ERROR;
    } else {
        size_t late = x.late, bad = x.bad;
        if (!irq_spin_check(ctx, source, count, &out))
            r = RTB_FAILED;
        char name[40];
        snprintf(name, sizeof name, "%s_highest_first", irq_source_name(source));
        size_t paired = x.paired;
        if (!ctx->port->realtime) {
            rtb_emit_check_skip(ctx, name, "needs real-time priority (%llu of %llu wake-ups ran "
                                "after the interrupted thread)", (unsigned long long)late,
                                (unsigned long long)paired);
        } else {
            bool ok = bad == 0 && late == 0 && paired == out.handled;
            rtb_emit_check(ctx, name, ok,
                           "woken thread at priority %d on CPU %d: %llu handlers, %llu wake-ups, "
                           "%llu ran after the interrupted thread resumed, %llu out of order",
                           aw.priority, aw.cpu, (unsigned long long)out.handled,
                           (unsigned long long)x.woken, (unsigned long long)late,
                           (unsigned long long)bad);
            if (!ok)
                r = RTB_FAILED;
        }
        rtb_emit_series(ctx, s);
    }
    rtb_series_free(s);
    rtb_sem_delete(&x.wake);
    irq_spin_free(x.sp);
    rtb_mem_free(x.h_ts);
    rtb_mem_free(x.w_ts);
    return r;
}

static rtb_result run(rtb_ctx *ctx)
{
    return irq_spin_sources(ctx, run_source);
}

const rtb_case rtb_case_irq_tlt = {
    .id = "IRQ-TLT",
    .title = "Interrupt to thread: handler's give until the woken top thread runs",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .run = run,
};
